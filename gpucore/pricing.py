"""The GPU cost model: the price of a GPU-hour, the GPU share of each kind of allocation, rates. Pure: no Django.

A GPU-hour's price is a price book's (a list price, or TCO from its inputs: ``hardware + power + operational
overhead + opportunity cost``), else the catalog's list price: one basis for every model, never TCO for some and list
price for others. An allocation pays its GPU share of that price (docs/cost-model.md): a dedicated GPU 1, a
time-sliced share 1/replicas, a MIG instance its weight ``max(c/C, m/M)`` from the catalog's compute and memory
slices, scaled down when the pool's layout weighs more than one GPU; each times the SLA tier's multiplier. Money is
``Decimal`` throughout and is rounded (half-up, to the cent) only at presentation.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, date, datetime, time
from decimal import ROUND_FLOOR, ROUND_HALF_UP, Decimal
from fractions import Fraction
from typing import Protocol, TypeVar

from gpucore.catalog import CatalogError, GpuModelSpec, MigProfile
from gpucore.vocabulary import Strategy

HOURS_PER_YEAR = Decimal(8760)
# A month of allocation as cloud price sheets count it: 8760 h / 12.
HOURS_PER_MONTH = Decimal(730)
CENT = Decimal("0.01")
K = TypeVar("K")
MIG_RESOURCE_PREFIX = "nvidia.com/mig-"


class PricingError(ValueError):
    """Inputs that cannot be priced (negative prices, a zero amortization period, ...)."""


@dataclass(frozen=True, slots=True)
class TcoInputs:
    """Everything that makes up the hourly cost of owning one GPU; every figure is editable in the price book."""

    purchase_price: Decimal
    tdp_watts: Decimal
    amortization_months: int = 36
    pue: Decimal = Decimal("1.4")
    kwh_price: Decimal = Decimal("0.10")
    ops_overhead_pct_per_year: Decimal = Decimal("25")
    opportunity_cost_per_hour: Decimal = Decimal("0")
    # Measured average power as a fraction of TDP (from DCGM); 1 = assume the board runs at TDP.
    power_scale: Decimal = Decimal("1")

    def __post_init__(self) -> None:
        checks = {
            "purchase_price": self.purchase_price >= 0,
            "tdp_watts": self.tdp_watts >= 0,
            "amortization_months": self.amortization_months > 0,
            "pue": self.pue >= 1,
            "kwh_price": self.kwh_price >= 0,
            "ops_overhead_pct_per_year": self.ops_overhead_pct_per_year >= 0,
            "opportunity_cost_per_hour": self.opportunity_cost_per_hour >= 0,
            "power_scale": self.power_scale >= 0,
        }
        bad = [name for name, ok in checks.items() if not ok]
        if bad:
            raise PricingError(f"Invalid TCO inputs: {', '.join(bad)}.")


@dataclass(frozen=True, slots=True)
class TcoBreakdown:
    """The hourly cost of one GPU, by component (not rounded)."""

    hardware: Decimal
    power: Decimal
    operations: Decimal
    opportunity: Decimal

    @property
    def total(self) -> Decimal:
        return self.hardware + self.power + self.operations + self.opportunity


def tco_hourly(inputs: TcoInputs) -> TcoBreakdown:
    """The hourly TCO of one GPU: amortized hardware + power (TDP x PUE x $/kWh) + ops overhead + opportunity."""
    amortization_hours = Decimal(inputs.amortization_months) * HOURS_PER_MONTH
    hardware = inputs.purchase_price / amortization_hours
    kilowatts = inputs.tdp_watts * inputs.power_scale / Decimal(1000)
    power = kilowatts * inputs.pue * inputs.kwh_price
    operations = inputs.purchase_price * inputs.ops_overhead_pct_per_year / Decimal(100) / HOURS_PER_YEAR
    return TcoBreakdown(hardware, power, operations, inputs.opportunity_cost_per_hour)


def allocation_hourly_rate(gpu_hourly_rate: Decimal, share: Decimal, sla_multiplier: Decimal = Decimal("1")) -> Decimal:
    """The hourly rate of one replica of an allocation: GPU rate x share of the GPU x SLA multiplier."""
    if gpu_hourly_rate < 0 or share < 0 or sla_multiplier < 0:
        raise PricingError("Rates, shares and multipliers cannot be negative.")
    return gpu_hourly_rate * share * sla_multiplier


def monthly_cost(hourly_rate: Decimal, replicas: int = 1) -> Decimal:
    """The cost of running an allocation for a month of 730 hours."""
    return hourly_rate * HOURS_PER_MONTH * Decimal(replicas)


class DatedPriceBook(Protocol):
    """Anything standing for a price book: its prices apply from ``starts`` until the next book's."""

    @property
    def starts(self) -> datetime: ...


_Book = TypeVar("_Book", bound=DatedPriceBook)


def price_book_starts(effective_from: date) -> datetime:
    """When a price book dated ``effective_from`` takes effect: 00:00 UTC of that date."""
    return datetime.combine(effective_from, time(0), tzinfo=UTC)


def book_in_effect(books: Iterable[_Book], *, at: datetime) -> _Book | None:
    """The price book whose prices apply at ``at``: the latest that has taken effect by then (None before the first).

    The one rule for every path that asks which book applies: recommendations, pages, reports and chargeback."""
    return max((book for book in books if book.starts <= at), key=lambda book: book.starts, default=None)


def to_cents(amount: Decimal) -> Decimal:
    """Round money half-up to the cent, for presentation only."""
    return amount.quantize(CENT, rounding=ROUND_HALF_UP)


def cents_adding_up(amounts: Mapping[K, Decimal]) -> dict[K, Decimal]:
    """Each amount in cents such that they add up to their total in cents (``to_cents`` of the exact sum): each is
    rounded down, then the cents left go to those that lost most (largest remainder). A table of parts then sums to
    the total printed above it, never a cent off."""
    if not amounts:
        return {}
    floors = {key: amount.quantize(CENT, rounding=ROUND_FLOOR) for key, amount in amounts.items()}
    left = int((to_cents(sum(amounts.values(), Decimal(0))) - sum(floors.values(), Decimal(0))) / CENT)
    by_remainder = sorted(amounts, key=lambda key: amounts[key] - floors[key], reverse=True)
    for key in by_remainder[: max(left, 0)]:
        floors[key] += CENT
    return floors


# Without a price book every catalog model is priced on this one basis (never TCO for some and list for others): the AWS
# us-east-1 on-demand price of an instance divided by its GPUs (docs/reference-sources.md#gpu-catalog). It is the only
# basis the reference data gives for all but one model; purchase prices exist for three models only and are
# low-confidence midpoints, so TCO needs a price book with the operator's own figures.
CATALOG_PRICE_BASIS = "catalog list price, AWS us-east-1 on-demand per GPU"


def catalog_hourly_rate(model: GpuModelSpec) -> Decimal | None:
    """The catalog's reference GPU-hour price of a model without a price book entry: its list price, else None."""
    return model.list_hourly_usd


# --- the GPU share (docs/cost-model.md): what one allocated unit bills, as a fraction of one GPU -----------------


def _profile(model: GpuModelSpec, profile: MigProfile | str) -> MigProfile:
    if isinstance(profile, MigProfile):
        return profile
    name = profile.strip().removeprefix(MIG_RESOURCE_PREFIX)
    try:
        return model.profile(name)
    except CatalogError as error:
        raise PricingError(str(error)) from None


def slice_weight(
    compute_slices: int, memory_slices: int, *, gpu_compute_slices: int, gpu_memory_slices: int
) -> Fraction:
    """``max(c/C, m/M)``: the weight of c of a GPU's C compute slices and m of its M memory slices (the one formula)."""
    if gpu_compute_slices <= 0 or gpu_memory_slices <= 0:
        raise PricingError("A GPU's MIG geometry needs at least one compute and one memory slice.")
    return max(Fraction(compute_slices, gpu_compute_slices), Fraction(memory_slices, gpu_memory_slices))


def mig_weight(model: GpuModelSpec, profile: MigProfile | str) -> Fraction:
    """A MIG instance's weight ``max(c/C, m/M)`` from the catalog geometry (compute and memory slices)."""
    found = _profile(model, profile)
    if not model.mig_compute_slices or not model.mig_memory_slices:
        raise PricingError(f"{model.name} has no MIG geometry in the catalog.")
    return slice_weight(
        found.compute_slices,
        found.memory_slices,
        gpu_compute_slices=model.mig_compute_slices,
        gpu_memory_slices=model.mig_memory_slices,
    )


def layout_weight(model: GpuModelSpec, layout: Mapping[str, int]) -> Fraction:
    """The sum of the weights of every instance of a per-GPU MIG layout (``{"1g.20gb": 4}``)."""
    total = Fraction(0)
    for name, count in layout.items():
        if isinstance(count, bool) or not isinstance(count, int) or count < 0:
            raise PricingError(f"MIG layout of {model.name}: the count of '{name}' must be a whole number.")
        total += mig_weight(model, name) * count
    return total


def gpu_share_fraction(
    strategy: Strategy | str,
    *,
    model: GpuModelSpec,
    mig_profile: MigProfile | str | None = None,
    layout: Mapping[str, int] | None = None,
    time_slice_replicas: int | None = None,
) -> Fraction:
    """The exact GPU share of one unit: 1 dedicated, 1/replicas time-sliced, ``w / max(1, layout weight)`` MIG.

    ``layout`` is the per-GPU MIG layout of the pool the instance runs on; without one (imported usage) the share is
    the weight itself. The profile must be part of the layout it is billed against.
    """
    strategy = Strategy(strategy)
    if strategy is Strategy.DEDICATED:
        return Fraction(1)
    if strategy is Strategy.TIME_SLICING:
        if isinstance(time_slice_replicas, bool) or not isinstance(time_slice_replicas, int) or time_slice_replicas < 2:
            raise PricingError("A time-sliced allocation needs the pool's replicas (at least 2).")
        return Fraction(1, time_slice_replicas)
    if mig_profile is None or (isinstance(mig_profile, str) and not mig_profile.strip()):
        raise PricingError("A MIG allocation needs its profile, e.g. '2g.10gb'.")
    found = _profile(model, mig_profile)
    weight = mig_weight(model, found)
    if not layout:
        return weight
    if found.name not in layout:
        raise PricingError(
            f"MIG profile {found.name} is not part of the layout it is billed against ({', '.join(layout)})."
        )
    return weight / max(Fraction(1), layout_weight(model, layout))


def gpu_share(
    strategy: Strategy | str,
    *,
    model: GpuModelSpec,
    mig_profile: MigProfile | str | None = None,
    layout: Mapping[str, int] | None = None,
    time_slice_replicas: int | None = None,
) -> Decimal:
    """The GPU share of one unit as a ``Decimal`` (see ``gpu_share_fraction``), the number every bill uses."""
    share = gpu_share_fraction(
        strategy, model=model, mig_profile=mig_profile, layout=layout, time_slice_replicas=time_slice_replicas
    )
    return fraction_to_decimal(share)


def fraction_to_decimal(value: Fraction) -> Decimal:
    """An exact fraction as a Decimal (28 significant digits for sevenths; exact for halves, quarters, eighths)."""
    return Decimal(value.numerator) / Decimal(value.denominator)


def share_text(share: Decimal) -> str:
    """A GPU share as the contract's decimal string: at most six decimals, no trailing zeros ("0.25", "0.142857")."""
    return format(share.quantize(Decimal("0.000001"), rounding=ROUND_HALF_UP).normalize(), "f")


def gpu_hourly_rate(*, hourly: Decimal | None = None, tco: TcoInputs | None = None) -> Decimal:
    """The hourly price of one whole GPU from a price book entry: its list price, else the TCO of its inputs."""
    if (hourly is None) == (tco is None):
        raise PricingError("A GPU price is either a list price (hourly) or TCO inputs, not both or neither.")
    if hourly is not None:
        if not hourly.is_finite() or hourly < 0:
            raise PricingError("hourly must be a non-negative amount.")
        return hourly
    assert tco is not None
    return tco_hourly(tco).total


def weighted_shares(total: Decimal, weights: Mapping[K, Decimal]) -> dict[K, Decimal]:
    """Split ``total`` in proportion to ``weights`` (OpenCost's ``__weighted__`` idle sharing); nothing if no weight."""
    weight_sum = sum(weights.values(), Decimal(0))
    if weight_sum <= 0:
        return {key: Decimal(0) for key in weights}
    return {key: total * weight / weight_sum for key, weight in weights.items()}
