"""The price book file operators keep in git (docs/cost-model.md): YAML parsed and validated into frozen values. Pure.

Every error names the field it is about, in the dotted path of the file (``gpu_models.H100-80GB.pue``), so a CI
check of the file reads like a form's errors.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation
from typing import Any

import yaml

from gpucore.pricing import PricingError, TcoInputs, gpu_hourly_rate

TOP_LEVEL_KEYS = {"currency", "effective_from", "gpu_models", "sla_multipliers", "notes"}
TCO_FIELDS = (  # in the order the file documents them (and the API lists them)
    "purchase_price",
    "amortization_months",
    "tdp_watts",
    "pue",
    "kwh_price",
    "ops_overhead_pct_per_year",
    "opportunity_cost_per_hour",
    "power_scale",
)
TCO_KEYS = frozenset(TCO_FIELDS)
TCO_REQUIRED = {"purchase_price", "tdp_watts"}
_CURRENCY = re.compile(r"^[A-Z]{3}$")
_SLUG = re.compile(r"^[-a-zA-Z0-9_]+$")


class PriceBookError(ValueError):
    """A price book file that cannot be loaded; ``errors`` maps each dotted field path to its messages."""

    def __init__(self, errors: Mapping[str, list[str]]) -> None:
        self.errors = {key: list(messages) for key, messages in errors.items()}
        text = "; ".join(f"{key}: {' '.join(messages)}" for key, messages in self.errors.items())
        super().__init__(f"Invalid price book: {text}")


@dataclass(frozen=True, slots=True)
class GpuPriceSpec:
    """One GPU model's price: a list price per GPU-hour, or the TCO inputs it is computed from."""

    gpu_model: str
    hourly: Decimal | None = None
    tco: TcoInputs | None = None

    @property
    def hourly_rate(self) -> Decimal:
        """The hourly price of one whole GPU (unrounded)."""
        return gpu_hourly_rate(hourly=self.hourly, tco=self.tco)


@dataclass(frozen=True, slots=True)
class PriceBookSpec:
    """A parsed price book: currency, the date it takes effect, GPU prices and SLA multipliers."""

    currency: str
    effective_from: dt.date
    gpu_prices: tuple[GpuPriceSpec, ...]
    sla_multipliers: Mapping[str, Decimal] = field(default_factory=dict)
    notes: str = ""


MAX_DIGITS_BEFORE_POINT = 9
MAX_DECIMAL_PLACES = 10


def _decimal(value: Any, path: str, errors: dict[str, list[str]], *, minimum: Decimal | None = None) -> Decimal | None:
    if isinstance(value, bool) or not isinstance(value, (str, int, float, Decimal)):
        errors.setdefault(path, []).append(f'must be a number such as "2.00", not {_shown(value)}.')
        return None
    try:
        # Floats from unquoted YAML go through str() so 1.4 stays 1.4, never 1.399999...
        number = Decimal(str(value).strip())
    except InvalidOperation:
        errors.setdefault(path, []).append(f'must be a number such as "2.00", not {_shown(value)}.')
        return None
    if not number.is_finite():
        errors.setdefault(path, []).append("must be a finite number.")
        return None
    # Beyond what a price book can hold (the stored prices keep 10 decimals): refused here with the field's path,
    # never an arithmetic error (1e400) or a database column overflow later.
    if number.adjusted() >= MAX_DIGITS_BEFORE_POINT:
        errors.setdefault(path, []).append(f"is too large: at most {MAX_DIGITS_BEFORE_POINT} digits before the point.")
        return None
    if number and number.adjusted() < -MAX_DECIMAL_PLACES:
        errors.setdefault(path, []).append(f"is too small: at least 1e-{MAX_DECIMAL_PLACES}, or 0.")
        return None
    if minimum is not None and number < minimum:
        errors.setdefault(path, []).append(f"must be at least {minimum}, not {number}.")
        return None
    return number


def _integer(value: Any, path: str, errors: dict[str, list[str]], *, minimum: int) -> int | None:
    if isinstance(value, bool) or not isinstance(value, (int, str)) or not str(value).strip().isdigit():
        errors.setdefault(path, []).append(f"must be a whole number, not {_shown(value)}.")
        return None
    number = int(str(value).strip())
    if number < minimum:
        errors.setdefault(path, []).append(f"must be at least {minimum}, not {number}.")
        return None
    return number


def _gpu_price(name: str, entry: Any, errors: dict[str, list[str]]) -> GpuPriceSpec | None:
    path = f"gpu_models.{name}"
    if not isinstance(entry, Mapping) or not entry:
        errors.setdefault(path, []).append(
            'must be {hourly: "2.00"} or the TCO inputs (purchase_price, tdp_watts, ...).'
        )
        return None
    keys = set(entry)
    if "hourly" in keys:
        extra = sorted(str(k) for k in keys - {"hourly"})
        if extra:
            errors.setdefault(path, []).append(f"a list price (hourly) cannot be combined with {', '.join(extra)}.")
            return None
        hourly = _decimal(entry["hourly"], f"{path}.hourly", errors, minimum=Decimal(0))
        return GpuPriceSpec(gpu_model=name, hourly=hourly) if hourly is not None else None
    unknown = sorted(str(k) for k in keys - TCO_KEYS)
    for key in unknown:
        errors.setdefault(f"{path}.{key}", []).append(f"unknown field; use hourly or {', '.join(sorted(TCO_KEYS))}.")
    for key in sorted(TCO_REQUIRED - keys):
        errors.setdefault(f"{path}.{key}", []).append("is required for TCO pricing.")
    if unknown or TCO_REQUIRED - keys:
        return None
    before = len(errors)
    values: dict[str, Any] = {}
    minimums = {"pue": Decimal(1)}
    for key in sorted(keys):
        if key == "amortization_months":
            values[key] = _integer(entry[key], f"{path}.{key}", errors, minimum=1)
        else:
            values[key] = _decimal(entry[key], f"{path}.{key}", errors, minimum=minimums.get(key, Decimal(0)))
    if len(errors) > before:
        return None
    try:
        return GpuPriceSpec(gpu_model=name, tco=TcoInputs(**values))
    except PricingError as exc:
        errors.setdefault(path, []).append(str(exc))
        return None


# A price book is three levels deep; no real file comes near this, and a deeper one would exhaust the parser's stack.
MAX_NESTING = 16
_SHOWN_CHARS = 60


def _shown(value: Any) -> str:
    """A value quoted in a message, cut short: an error about a huge value stays a line long."""
    text = repr(value)
    return text if len(text) <= _SHOWN_CHARS else f"{text[:_SHOWN_CHARS]}... ({len(text):,} characters)"


class _Refused(Exception):
    """The file's structure is refused before it is built: ``errors`` as ``PriceBookError`` takes them."""

    def __init__(self, path: str, message: str) -> None:
        super().__init__(message)
        self.errors = {path: [message]}


class _Loader(yaml.SafeLoader):
    """Safe YAML that leaves timestamps as text, so a bad date is our error naming its field, not PyYAML's.

    It refuses aliases (``*name``: a few hundred bytes of nested aliases expand to gigabytes, the "billion laughs")
    and nesting deeper than ``MAX_NESTING`` (thousands of ``[`` exhaust the stack), each naming the line.
    """

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self._depth = 0

    def compose_node(self, parent: Any, index: Any) -> Any:
        event = self.peek_event()
        line = event.start_mark.line + 1
        if isinstance(event, yaml.AliasEvent):
            raise _Refused("(file)", f"line {line}: aliases (*{_shown(event.anchor)[1:-1]}) are not allowed.")
        if self._depth >= MAX_NESTING:
            raise _Refused("(file)", f"line {line}: nested more than {MAX_NESTING} levels deep.")
        self._depth += 1
        try:
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1


_Loader.add_constructor("tag:yaml.org,2002:timestamp", lambda loader, node: loader.construct_scalar(node))


def _duplicate_keys(root: yaml.Node | None) -> dict[str, list[str]]:
    """Every key given twice in one mapping, by dotted path (YAML would keep the last one silently)."""
    errors: dict[str, list[str]] = {}
    stack: list[tuple[yaml.Node, str]] = [(root, "")] if root is not None else []
    while stack:  # a loop, not recursion: the depth is bounded above anyway
        node, path = stack.pop()
        if isinstance(node, yaml.SequenceNode):
            stack.extend((item, f"{path}[{index}]") for index, item in enumerate(node.value))
        if not isinstance(node, yaml.MappingNode):
            continue
        first_line: dict[str, int] = {}
        for key_node, value_node in node.value:
            key = str(key_node.value) if isinstance(key_node, yaml.ScalarNode) else _shown(key_node.value)
            child = f"{path}.{key}" if path else key
            line = key_node.start_mark.line + 1
            if key in first_line:
                errors.setdefault(child[:200], []).append(
                    f"is given twice (lines {first_line[key]} and {line}); give it once."
                )
            else:
                first_line[key] = line
            stack.append((value_node, child))
    return errors


def _effective_from(value: Any, errors: dict[str, list[str]]) -> dt.date | None:
    if isinstance(value, str) and len(value.strip()) > 10:
        errors.setdefault("effective_from", []).append("must be a date (YYYY-MM-DD); prices change at 00:00 UTC.")
        return None
    if isinstance(value, dt.datetime):
        errors.setdefault("effective_from", []).append("must be a date (YYYY-MM-DD); prices change at 00:00 UTC.")
        return None
    if isinstance(value, dt.date):
        return value
    try:
        return dt.date.fromisoformat(str(value))
    except ValueError:
        errors.setdefault("effective_from", []).append(f"must be a date such as 2026-10-01, not {_shown(value)}.")
        return None


def parse_price_book(data: Any, *, currency: str | None = None) -> PriceBookSpec:
    """Validate a loaded YAML document; ``currency`` (the portal's) must match the file's when given."""
    if not isinstance(data, Mapping):
        raise PriceBookError({"(file)": ["must be a mapping with currency, effective_from and gpu_models."]})
    errors: dict[str, list[str]] = {}
    for key in sorted(str(k) for k in set(data) - TOP_LEVEL_KEYS):
        errors.setdefault(key, []).append(f"unknown field; use {', '.join(sorted(TOP_LEVEL_KEYS))}.")
    file_currency = data.get("currency", currency or "USD")
    if not isinstance(file_currency, str) or not _CURRENCY.match(file_currency):
        shown = _shown(file_currency)
        errors.setdefault("currency", []).append(f"must be a three-letter code such as USD, not {shown}.")
    elif currency is not None and file_currency != currency:
        errors.setdefault("currency", []).append(
            f"is {file_currency} but the portal bills in {currency}; currencies are never converted."
        )
    effective = None
    if "effective_from" not in data:
        errors.setdefault("effective_from", []).append("is required (YYYY-MM-DD).")
    else:
        effective = _effective_from(data["effective_from"], errors)
    prices: list[GpuPriceSpec] = []
    models = data.get("gpu_models")
    if not isinstance(models, Mapping) or not models:
        errors.setdefault("gpu_models", []).append("is required: a mapping of GPU model name to its price.")
    else:
        seen: set[str] = set()
        for name, entry in models.items():
            label = str(name).strip()
            if label.casefold() in seen:
                errors.setdefault(f"gpu_models.{label}", []).append("is listed twice.")
                continue
            seen.add(label.casefold())
            price = _gpu_price(label, entry, errors)
            if price is not None:
                prices.append(price)
    multipliers: dict[str, Decimal] = {}
    raw = data.get("sla_multipliers") or {}
    if not isinstance(raw, Mapping):
        errors.setdefault("sla_multipliers", []).append('must be a mapping of tier slug to multiplier ("1.5").')
    else:
        for slug, value in raw.items():
            path = f"sla_multipliers.{slug}"
            if not _SLUG.match(str(slug)):
                errors.setdefault(path, []).append("is not a tier slug.")
                continue
            number = _decimal(value, path, errors, minimum=Decimal(0))
            if number is not None:
                multipliers[str(slug)] = number
    notes = data.get("notes") or ""
    if errors:
        raise PriceBookError(errors)
    assert effective is not None
    return PriceBookSpec(
        currency=str(file_currency),
        effective_from=effective,
        gpu_prices=tuple(prices),
        sla_multipliers=multipliers,
        notes=str(notes),
    )


def load_price_book_text(text: str, *, currency: str | None = None) -> PriceBookSpec:
    """Parse and validate the text of a price book YAML file."""
    loader = _Loader(text)
    try:
        root = loader.get_single_node()
        if duplicates := _duplicate_keys(root):
            raise PriceBookError(duplicates)
        data = loader.construct_document(root) if root is not None else None
    except _Refused as exc:
        raise PriceBookError(exc.errors) from None
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark is not None else ""
        problem = (exc.problem or exc.context or "")[:200]
        raise PriceBookError({"(file)": [f"is not valid YAML: {where}{problem}."]}) from exc
    except yaml.YAMLError as exc:
        raise PriceBookError({"(file)": [f"is not valid YAML: {str(exc)[:200]}"]}) from exc
    finally:
        loader.dispose()
    return parse_price_book(data, currency=currency)
