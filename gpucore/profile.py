"""The workload profile: what a team says about a workload before the framework picks its GPUs. Pure: no Django.

The fields and defaults are the API's "Workload profile" (docs/api.md). Validation collects every field's
problems at once and raises ``ProfileError`` whose ``errors`` map field names to messages, so the REST API can
answer DRF's ``400 {"field": ["message", ...]}`` without re-validating. Numbers are ``Decimal`` so boundaries such
as "latency-sensitive and more than 10 GB" (Part 4.6 of the allocation guide) compare exactly.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, fields
from decimal import Decimal, InvalidOperation
from enum import StrEnum
from typing import Any, ClassVar

from gpucore.vocabulary import WorkloadType

# Upper bound for every numeric field: far above any real request, low enough that Decimal arithmetic on
# costs (rate x share x SLA x 730 h x replicas) stays exact within the default 28-digit context.
MAX_NUMBER = Decimal(1_000_000)
# Enough resolution for GB (1 kB), milliseconds and hours; more digits are almost always float noise.
MAX_DECIMAL_PLACES = 6
# The documented bounds of the sizing fields, the one source for the form, the live preview and the API (each
# shows the same message). What actually fits is the catalog's call: the framework refuses more memory than the
# largest GPU x gpu_count and names the gpu_count that would fit. These bounds only catch typing slips (MB for GB)
# and keep values inside the database columns (7 digits for GB, small integers for counts).
MAX_GPU_MEMORY_GB = Decimal(10_000)  # 64 GPUs x 141 GB is about 9 TB: no replica needs more
MAX_GPUS_PER_REPLICA = 1_024
MAX_REPLICAS = 10_000
GPU_MEMORY_TOO_BIG = (
    f"No replica needs more than {MAX_GPU_MEMORY_GB} GB of GPU memory: give one replica's peak memory in GB "
    "(spread a bigger model over more GPUs per replica)."
)

# DRF's BooleanField spellings, so the API and notebooks can send what they already send to other endpoints.
_TRUE = frozenset({"true", "t", "yes", "y", "on", "1"})
_FALSE = frozenset({"false", "f", "no", "n", "off", "0"})


class ProfileError(ValueError):
    """A workload profile that cannot be accepted; ``errors`` maps each field to its messages (DRF's 400 shape)."""

    def __init__(self, errors: Mapping[str, Iterable[str]]) -> None:
        self.errors: dict[str, list[str]] = {str(name): list(messages) for name, messages in errors.items()}
        super().__init__("; ".join(f"{name}: {' '.join(msgs)}" for name, msgs in self.errors.items()))


class _FieldError(Exception):
    """One field's value is invalid (internal: collected into a ``ProfileError``)."""


def _is_blank(value: Any) -> bool:
    return isinstance(value, str) and not value.strip()


def _to_decimal(value: Any) -> Decimal:
    if isinstance(value, bool):  # bool is an int subclass: True must not read as 1 GB
        raise _FieldError("A valid number is required.")
    try:
        if isinstance(value, Decimal):
            number = value
        elif isinstance(value, int):
            number = Decimal(value)
        elif isinstance(value, float):
            number = Decimal(repr(value))  # repr gives the shortest round-trip text: 5.01, not 5.0099999...
        elif isinstance(value, str):
            number = Decimal(value.strip())
        else:
            raise _FieldError("A valid number is required.")
    except InvalidOperation:
        raise _FieldError("A valid number is required.") from None
    if not number.is_finite():
        raise _FieldError("A valid number is required.")
    return number


def _check_range(
    number: Decimal, *, minimum: Decimal | None, exclusive_min: bool, maximum: Decimal, too_big: str = ""
) -> None:
    if minimum is not None:
        if exclusive_min and number <= minimum:
            raise _FieldError(f"Ensure this value is greater than {minimum}.")
        if not exclusive_min and number < minimum:
            raise _FieldError(f"Ensure this value is greater than or equal to {minimum}.")
    if number > maximum:
        raise _FieldError(too_big or f"Ensure this value is less than or equal to {maximum}.")


def _decimal(
    *,
    minimum: Decimal | None = Decimal(0),
    exclusive_min: bool = True,
    maximum: Decimal = MAX_NUMBER,
    too_big: str = "",
) -> Callable[[Any], Decimal]:
    def parse(value: Any) -> Decimal:
        number = _to_decimal(value)
        _check_range(number, minimum=minimum, exclusive_min=exclusive_min, maximum=maximum, too_big=too_big)
        exponent = number.as_tuple().exponent
        if isinstance(exponent, int) and -exponent > MAX_DECIMAL_PLACES:
            raise _FieldError(f"Ensure that there are no more than {MAX_DECIMAL_PLACES} decimal places.")
        return number

    return parse


def _integer(*, minimum: int = 1, maximum: int = int(MAX_NUMBER)) -> Callable[[Any], int]:
    def parse(value: Any) -> int:
        if value.__class__ is int and minimum <= value <= maximum:  # the usual case, without Decimals
            return value
        if isinstance(value, bool):
            raise _FieldError("A valid integer is required.")
        if isinstance(value, int):
            number = value
        else:
            try:
                decimal = _to_decimal(value)
            except _FieldError:
                raise _FieldError("A valid integer is required.") from None
            if decimal != decimal.to_integral_value():  # "2.0" is 2, as in DRF; 2.5 is not an integer
                raise _FieldError("A valid integer is required.")
            number = int(decimal)
        _check_range(Decimal(number), minimum=Decimal(minimum), exclusive_min=False, maximum=Decimal(maximum))
        return number

    return parse


def _boolean(value: Any) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, int) and value in (0, 1):
        return bool(value)
    if isinstance(value, str):
        folded = value.strip().casefold()
        if folded in _TRUE:
            return True
        if folded in _FALSE:
            return False
    raise _FieldError("Must be a valid boolean.")


def _workload_type(value: Any) -> WorkloadType:
    if isinstance(value, WorkloadType):
        return value
    known = _WORKLOAD_TYPES.get(value) if isinstance(value, str) else None
    if known is not None:  # the usual spelling, without the enum's lookup by value (slow on Python 3.11)
        return known
    if isinstance(value, str):
        try:
            return WorkloadType(value.strip().casefold())
        except ValueError:
            pass
    choices = ", ".join(f'"{choice.value}"' for choice in WorkloadType)
    raise _FieldError(f'"{value}" is not a valid choice. Choose one of {choices}.')


_WORKLOAD_TYPES = {choice.value: choice for choice in WorkloadType}


def _name(value: Any) -> str:
    if not isinstance(value, str):
        raise _FieldError("Not a valid string.")
    name = value.strip()
    if len(name) > 100:
        raise _FieldError("Ensure this field has no more than 100 characters.")
    return name


_PARSERS: dict[str, Callable[[Any], Any]] = {
    "workload_type": _workload_type,
    "gpu_memory_gb": _decimal(maximum=MAX_GPU_MEMORY_GB, too_big=GPU_MEMORY_TOO_BIG),
    "gpu_count": _integer(maximum=MAX_GPUS_PER_REPLICA),
    "replicas": _integer(maximum=MAX_REPLICAS),
    "latency_sensitive": _boolean,
    "latency_p99_ms": _decimal(),
    "isolation_required": _boolean,
    "expected_utilization_pct": _decimal(minimum=Decimal(0), exclusive_min=False, maximum=Decimal(100)),
    "sla_tier": _name,
    "gpu_model": _name,
    "duration_hours": _decimal(),
}
_PARSER_ITEMS = tuple(_PARSERS.items())
_REQUIRED = ("workload_type", "gpu_memory_gb")
# Optional fields where null means "not given" (an empty string from a form means the same).
_NULLABLE = frozenset(
    {"latency_sensitive", "latency_p99_ms", "expected_utilization_pct", "sla_tier", "gpu_model", "duration_hours"}
)


def parse_profile_field(name: str, value: Any) -> Any:
    """One profile field parsed and checked exactly as ``WorkloadProfile`` does (the browser form's fields use it, so
    form, preview and API give the same message); ``ProfileError`` naming the field otherwise. Blank is None."""
    if value is None or _is_blank(value):
        return None
    try:
        return _PARSERS[name](value)
    except _FieldError as error:
        raise ProfileError({name: [str(error)]}) from None


@dataclass(frozen=True, slots=True)
class WorkloadProfile:
    """A workload as its team describes it (docs/api.md, "Workload profile"); validated and normalized on construction.

    ``gpu_memory_gb`` is the peak GPU memory one replica needs, spread over its ``gpu_count`` GPUs.
    ``latency_sensitive`` left as ``None`` resolves to true for real-time inference and false otherwise. ``sla_tier``
    and ``gpu_model`` are checked against the tiers and the catalog by ``recommend()``, which has them.
    """

    workload_type: WorkloadType
    gpu_memory_gb: Decimal
    gpu_count: int = 1
    replicas: int = 1
    latency_sensitive: bool | None = None
    latency_p99_ms: Decimal | None = None
    isolation_required: bool = False
    expected_utilization_pct: Decimal | None = None
    sla_tier: str | None = None
    gpu_model: str | None = None
    duration_hours: Decimal | None = None

    REQUIRED_FIELDS: ClassVar[tuple[str, ...]] = _REQUIRED

    def __post_init__(self) -> None:
        errors: dict[str, list[str]] = {}
        for name, parse in _PARSER_ITEMS:
            value = getattr(self, name)
            if value is None:  # most optional fields: nothing to parse or to set
                if name not in _NULLABLE:
                    errors[name] = ["This field may not be null."]
                continue
            if name in _NULLABLE and _is_blank(value):
                object.__setattr__(self, name, None)
                continue
            try:
                parsed = parse(value)
            except _FieldError as error:
                errors[name] = [str(error)]
                continue
            if parsed is not value:  # a bool or an int already parsed is itself: no need to set it again
                object.__setattr__(self, name, parsed)
        if errors:
            raise ProfileError(errors)
        if self.latency_sensitive is None:
            # The documented default: real-time inference is the latency-bound row of the matrix (Part 4.1).
            object.__setattr__(self, "latency_sensitive", self.workload_type is WorkloadType.REALTIME_INFERENCE)

    @classmethod
    def field_names(cls) -> tuple[str, ...]:
        """The names of the profile's fields, in contract order (for splitting them out of a larger request body)."""
        return _FIELD_NAMES

    @classmethod
    def from_mapping(cls, data: Mapping[str, Any]) -> WorkloadProfile:
        """Parse raw JSON-ish input (numbers and booleans may be strings), reporting every field's problems at once."""
        if not isinstance(data, Mapping):
            raise ProfileError(
                {"non_field_errors": [f"Invalid data. Expected a dictionary, but got {type(data).__name__}."]}
            )
        known = cls.field_names()
        errors: dict[str, list[str]] = {}
        for key in data:
            if key not in _FIELD_SET:
                errors[str(key)] = [f"Unknown field. Known fields: {', '.join(known)}."]
        for name in _REQUIRED:
            if name not in data:
                errors[name] = ["This field is required."]
        if not errors:  # the usual case: every key is a field and the required ones are there
            if cls is WorkloadProfile:
                profile = _parsed(data)
                if profile is not None:
                    return profile
            return cls(**data)
        values = {name: data[name] for name in known if name in data}
        try:
            # Construct even when other fields failed, so one answer lists the bad values too.
            profile = cls(**{name: values.get(name) for name in _REQUIRED}, **_without(values, _REQUIRED))
        except ProfileError as error:
            for name, messages in error.errors.items():
                if name not in errors:  # "This field is required." beats "may not be null" for a missing field
                    errors[name] = messages
            raise ProfileError(errors) from None
        if errors:
            raise ProfileError(errors)
        return profile

    def to_dict(self) -> dict[str, Any]:
        """The profile as JSON-ready data, ``latency_sensitive`` resolved; ``from_mapping`` reads it back unchanged."""
        result: dict[str, Any] = {}
        for name in self.field_names():
            value = getattr(self, name)
            if isinstance(value, StrEnum):
                value = value.value
            elif isinstance(value, Decimal):
                value = _json_number(value)
            result[name] = value
        return result


def _parsed(data: Mapping[str, Any]) -> WorkloadProfile | None:
    """``WorkloadProfile(**data)`` for data whose keys are all fields, the required ones included: the same parse of
    each value and the same defaults, without the dataclass's ``__init__`` setting all eleven fields and
    ``__post_init__`` reading them all back. None when a value is invalid: the constructor then says
    which, with every other problem."""
    profile = object.__new__(WorkloadProfile)
    set_field = object.__setattr__
    for name, default in _OPTIONAL_DEFAULTS:
        if name not in data:
            set_field(profile, name, default)  # each default is what its parser gives for it
    for name, value in data.items():
        if value is None or (name in _NULLABLE and _is_blank(value)):
            if name not in _NULLABLE:
                return None
            set_field(profile, name, None)
            continue
        try:
            set_field(profile, name, _PARSERS[name](value))
        except _FieldError:
            return None
    if profile.latency_sensitive is None:
        set_field(profile, "latency_sensitive", profile.workload_type is WorkloadType.REALTIME_INFERENCE)
    return profile


def _without(values: Mapping[str, Any], names: Iterable[str]) -> dict[str, Any]:
    drop = set(names)
    return {key: value for key, value in values.items() if key not in drop}


def _json_number(value: Decimal) -> int | float:
    """A JSON number for a validated Decimal: an int when integral, else the float that prints the same digits."""
    if value == value.to_integral_value():
        return int(value)
    return float(value)


# Read on every parse: worked out once (the dataclass's fields never change).
_FIELD_NAMES: tuple[str, ...] = tuple(f.name for f in fields(WorkloadProfile))
_FIELD_SET = frozenset(_FIELD_NAMES)
_OPTIONAL_DEFAULTS = tuple((f.name, f.default) for f in fields(WorkloadProfile) if f.name not in _REQUIRED)
