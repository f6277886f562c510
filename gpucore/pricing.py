"""The GPU cost model: TCO per GPU-hour and the rate of each kind of allocation. Pure: no Django.

Follows Part 4.2 of the allocation guides:
``TCO = hardware + power + operational overhead + opportunity cost``, turned into an hourly rate per GPU.
An allocation then pays a share of that rate: a dedicated GPU pays the whole rate per GPU, a MIG slice
``<n>g.*`` pays n/7 of it (n/4 on an A30), a time-sliced share pays 1/replicas; each times the SLA tier's
multiplier. Money is ``Decimal`` throughout and is rounded (half-up, to the cent) only at presentation.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from decimal import ROUND_HALF_UP, Decimal
from typing import TypeVar

from gpucore.vocabulary import Strategy

HOURS_PER_YEAR = Decimal(8760)
# A month of allocation as cloud price sheets count it: 8760 h / 12.
HOURS_PER_MONTH = Decimal(730)
CENT = Decimal("0.01")
K = TypeVar("K")


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


def allocation_share(
    strategy: Strategy | str,
    *,
    quantity: int = 1,
    mig_compute_slices: int | None = None,
    gpu_compute_slices: int | None = None,
    time_slice_replicas: int | None = None,
) -> Decimal:
    """The number of whole GPUs an allocation pays for, per replica.

    Dedicated: ``quantity`` GPUs. MIG: ``quantity x n / total`` for an ``<n>g`` slice. Time-slicing:
    ``quantity / replicas``.
    """
    strategy = Strategy(strategy)
    if quantity < 1:
        raise PricingError("quantity must be at least 1.")
    if strategy is Strategy.DEDICATED:
        return Decimal(quantity)
    if strategy is Strategy.MIG:
        if not mig_compute_slices or not gpu_compute_slices or mig_compute_slices > gpu_compute_slices:
            raise PricingError("A MIG allocation needs its compute slices and the GPU's total compute slices.")
        return Decimal(quantity) * Decimal(mig_compute_slices) / Decimal(gpu_compute_slices)
    if not time_slice_replicas or time_slice_replicas < 2:
        raise PricingError("A time-sliced allocation needs the pool's replicas (at least 2).")
    return Decimal(quantity) / Decimal(time_slice_replicas)


def allocation_hourly_rate(gpu_hourly_rate: Decimal, share: Decimal, sla_multiplier: Decimal = Decimal("1")) -> Decimal:
    """The hourly rate of one replica of an allocation: GPU rate x share of the GPU x SLA multiplier."""
    if gpu_hourly_rate < 0 or share < 0 or sla_multiplier < 0:
        raise PricingError("Rates, shares and multipliers cannot be negative.")
    return gpu_hourly_rate * share * sla_multiplier


def monthly_cost(hourly_rate: Decimal, replicas: int = 1) -> Decimal:
    """The cost of running an allocation for a month of 730 hours."""
    return hourly_rate * HOURS_PER_MONTH * Decimal(replicas)


def to_cents(amount: Decimal) -> Decimal:
    """Round money half-up to the cent, for presentation only."""
    return amount.quantize(CENT, rounding=ROUND_HALF_UP)


def catalog_hourly_rate(
    *,
    purchase_price: Decimal | None,
    tdp_watts: int | Decimal,
    list_hourly: Decimal | None,
) -> Decimal | None:
    """A reference GPU-hour price for a catalog model with no price book entry.

    The TCO of owning it when a purchase price is known (default TCO inputs), else its cloud list price,
    else ``None`` (unknown: the caller says so rather than guessing).
    """
    if purchase_price is not None:
        return tco_hourly(TcoInputs(purchase_price=purchase_price, tdp_watts=Decimal(tdp_watts))).total
    return list_hourly


# --- Shares of a GPU per kind of allocation, idle sharing, and price book entries (issue #7) -------------------

MIG_COMPUTE_SLICES_DEFAULT = 7
# NVIDIA MIG User Guide, "Supported GPUs": A100/H100/H200 have 7 compute slices, the A30 has 4.
MIG_COMPUTE_SLICES_BY_MODEL = {"a30": 4}
_MIG_PREFIX = re.compile(r"^(?:nvidia\.com/mig-)?(?P<n>[1-9]\d*)g\.", re.IGNORECASE)


def mig_profile_slices(profile_or_resource: str) -> int:
    """The compute slices ``n`` of a MIG profile ``<n>g.<m>gb`` (or of its resource name ``nvidia.com/mig-...``)."""
    match = _MIG_PREFIX.match(profile_or_resource.strip())
    if not match:
        raise PricingError(f"'{profile_or_resource}' is not a MIG profile like '2g.10gb'.")
    return int(match["n"])


def gpu_compute_slices(gpu_model: str) -> int:
    """The compute slices of a whole GPU of this model: 4 on an A30 (any variant name), else 7."""
    folded = gpu_model.strip().casefold()
    for prefix, slices in MIG_COMPUTE_SLICES_BY_MODEL.items():
        if folded == prefix or folded.startswith(prefix + "-"):
            return slices
    return MIG_COMPUTE_SLICES_DEFAULT


def unit_share(
    strategy: Strategy | str,
    *,
    gpu_model: str,
    mig_profile: str | None = None,
    time_slice_replicas: int | None = None,
) -> Decimal:
    """The part of one whole GPU that one unit of the resource pays: 1, n/7 (n/4 on A30), or 1/replicas."""
    strategy = Strategy(strategy)
    if strategy is Strategy.MIG:
        if not mig_profile:
            raise PricingError("A MIG allocation needs its profile, e.g. '2g.10gb'.")
        slices = mig_profile_slices(mig_profile)
        return allocation_share(strategy, mig_compute_slices=slices, gpu_compute_slices=gpu_compute_slices(gpu_model))
    return allocation_share(strategy, time_slice_replicas=time_slice_replicas)


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
