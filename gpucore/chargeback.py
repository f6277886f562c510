"""Chargeback arithmetic: allocations x rates x hours, the idle capacity's cost and its weighted sharing. Pure.

An allocation pays ``units x hours x unit share x GPU rate x SLA multiplier`` where a unit is one resource of its
spec (a GPU, a MIG slice, a time-sliced share; ``quantity x replicas`` units) and the unit share is its GPU share
(``gpucore.pricing.gpu_share``: 1, 1/replicas, or a MIG instance's weight from the catalog geometry scaled by its
pool's layout). ``allocated_gpu_hours`` are whole-GPU equivalents
(``units x hours x share``), so ``amount = allocated_gpu_hours x rate`` with ``rate = GPU rate x multiplier``.
Hours are split where a new price book takes effect, so each line has one rate. Idle capacity follows OpenCost
(docs/reference-sources.md#opencost): per GPU model, ``capacity GPU-hours x rate - allocated cost`` at the base
rate (no SLA multiplier), optionally shared in proportion to each team's allocated base cost (``__weighted__``).
Nothing is rounded here: money is rounded half-up to the cent at presentation only.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from decimal import Decimal
from itertools import pairwise

from gpucore.catalog import BUILTIN_CATALOG, Catalog, CatalogError
from gpucore.pricing import PricingError, book_in_effect, gpu_share, weighted_shares
from gpucore.vocabulary import Strategy

ZERO = Decimal(0)
SECONDS_PER_HOUR = Decimal(3600)


@dataclass(frozen=True, slots=True)
class PricePeriod:
    """One price book in effect from ``starts`` (aware UTC) until the next one: GPU rates and SLA multipliers."""

    starts: datetime
    version: int | None
    gpu_rates: Mapping[str, Decimal]  # casefolded model name -> hourly price of one whole GPU
    sla_multipliers: Mapping[str, Decimal]  # tier slug -> multiplier

    def rate_for(self, gpu_model: str) -> Decimal | None:
        """The hourly price of one whole GPU of this model in this price book, if it lists it."""
        return self.gpu_rates.get(gpu_model.casefold())


@dataclass(frozen=True, slots=True)
class Allocation:
    """A held allocation: who, what (strategy, model, units) and when; ``end`` None means still held."""

    key: str
    team: str
    name: str
    gpu_model: str
    strategy: str
    resource_name: str
    quantity: int
    start: datetime
    end: datetime | None
    replicas: int = 1
    mig_profile: str | None = None
    time_slice_replicas: int | None = None
    # The per-GPU MIG layout of the pool the instance ran on ({"1g.20gb": 4}); None when unknown (imported usage).
    mig_layout: Mapping[str, int] | None = field(default=None, hash=False, compare=False)
    sla_tier: str | None = None
    tier_multiplier: Decimal = Decimal("1")
    request_id: int | None = None
    imported: bool = False
    avg_utilization_pct: float | None = None
    energy_kwh: float | None = None

    @property
    def units(self) -> int:
        return self.quantity * self.replicas


@dataclass(frozen=True, slots=True)
class ChargeLine:
    """The charge of one allocation for the hours one price book was in effect (unrounded)."""

    allocation: Allocation
    start: datetime
    end: datetime
    hours: Decimal
    unit_share: Decimal
    allocated_gpu_hours: Decimal
    gpu_rate: Decimal
    sla_multiplier: Decimal
    price_version: int | None
    rate_source: str  # "price book", "catalog" or "unpriced"

    @property
    def rate(self) -> Decimal:
        """The price of one whole-GPU-equivalent hour of this allocation, SLA multiplier included."""
        return self.gpu_rate * self.sla_multiplier

    @property
    def amount(self) -> Decimal:
        return self.allocated_gpu_hours * self.rate

    @property
    def base_amount(self) -> Decimal:
        """The cost at the GPU rate without SLA multiplier: what the allocation consumed of the capacity."""
        return self.allocated_gpu_hours * self.gpu_rate

    @property
    def dedicated_amount(self) -> Decimal:
        """What the same units would have cost as whole dedicated GPUs (the all-dedicated baseline)."""
        return Decimal(self.allocation.units) * self.hours * self.rate


@dataclass
class TeamCharge:
    """One team's chargeback for a window: its lines, their sum, its share of idle cost and its saving."""

    team: str
    lines: list[ChargeLine] = field(default_factory=list)
    idle_share: Decimal = ZERO

    @property
    def amount(self) -> Decimal:
        return sum((line.amount for line in self.lines), ZERO)

    @property
    def total(self) -> Decimal:
        return self.amount + self.idle_share

    @property
    def dedicated_amount(self) -> Decimal:
        return sum((line.dedicated_amount for line in self.lines), ZERO)

    @property
    def saving_vs_dedicated(self) -> Decimal:
        return self.dedicated_amount - self.amount

    @property
    def allocated_gpu_hours(self) -> Decimal:
        return sum((line.allocated_gpu_hours for line in self.lines), ZERO)


@dataclass
class Chargeback:
    """Every team's charge for a window, plus the capacity, allocated and idle cost per GPU model."""

    start: datetime
    end: datetime
    teams: dict[str, TeamCharge]
    capacity_cost: dict[str, Decimal]
    allocated_base_cost: dict[str, Decimal]
    idle_cost: dict[str, Decimal]
    idle_shared: bool
    unpriced_models: set[str]

    @property
    def total_idle_cost(self) -> Decimal:
        return sum(self.idle_cost.values(), ZERO)

    @property
    def total_capacity_cost(self) -> Decimal:
        return sum(self.capacity_cost.values(), ZERO)

    @property
    def total_allocated(self) -> Decimal:
        return sum((team.amount for team in self.teams.values()), ZERO)


def hours_between(start: datetime, end: datetime) -> Decimal:
    """Exact hours from ``start`` to ``end`` (zero when ``end`` is not after ``start``)."""
    if end <= start:
        return ZERO
    delta = end - start
    seconds = Decimal(delta.days * 86400 + delta.seconds) + Decimal(delta.microseconds) / Decimal(1_000_000)
    return seconds / SECONDS_PER_HOUR


def price_segments(
    start: datetime, end: datetime, periods: Sequence[PricePeriod]
) -> list[tuple[datetime, datetime, PricePeriod | None]]:
    """Split [start, end) where a price book takes effect, each part with the book in effect over it (``None`` for
    the part before the first one)."""
    edges = [start, *sorted({p.starts for p in periods if start < p.starts < end}), end]
    return [(a, b, book_in_effect(periods, at=a)) for a, b in pairwise(edges) if a < b]


def _gpu_rate(
    gpu_model: str, period: PricePeriod | None, fallback: Mapping[str, Decimal]
) -> tuple[Decimal, str, int | None]:
    rate = period.rate_for(gpu_model) if period is not None else None
    if rate is not None:
        return rate, "price book", period.version if period else None
    fallback_rate = fallback.get(gpu_model.casefold())
    if fallback_rate is not None:
        return fallback_rate, "catalog", None
    return ZERO, "unpriced", None


def _multiplier(allocation: Allocation, period: PricePeriod | None) -> Decimal:
    if allocation.imported:
        return Decimal("1")  # imported usage has no SLA multiplier (docs/cost-model.md)
    if period is not None and allocation.sla_tier and allocation.sla_tier in period.sla_multipliers:
        return period.sla_multipliers[allocation.sla_tier]
    return allocation.tier_multiplier


def _unit_share(allocation: Allocation, catalog: Catalog, shares: dict[tuple[object, ...], Decimal] | None) -> Decimal:
    """``gpu_share`` of one unit of the allocation; found in ``shares`` (and kept there) for the same kind of unit."""
    layout = allocation.mig_layout
    kind = (
        allocation.strategy,
        allocation.gpu_model,
        allocation.mig_profile or allocation.resource_name,
        tuple(sorted(layout.items())) if layout else layout,
        allocation.time_slice_replicas,
    )
    if shares is not None and kind in shares:
        return shares[kind]
    try:
        share = gpu_share(
            allocation.strategy,
            model=catalog.get(allocation.gpu_model),
            mig_profile=allocation.mig_profile or allocation.resource_name,
            layout=layout,
            time_slice_replicas=allocation.time_slice_replicas,
        )
    except (PricingError, CatalogError, ValueError) as exc:
        raise PricingError(f"Allocation {allocation.key} ({allocation.name}): {exc}") from exc
    if shares is not None:
        shares[kind] = share
    return share


def charge_allocation(
    allocation: Allocation,
    *,
    window_start: datetime,
    window_end: datetime,
    periods: Sequence[PricePeriod],
    fallback_rates: Mapping[str, Decimal] | None = None,
    catalog: Catalog = BUILTIN_CATALOG,
    shares: dict[tuple[object, ...], Decimal] | None = None,
) -> list[ChargeLine]:
    """The lines of one allocation inside [window_start, window_end), one per price book in effect; ``shares``
    keeps unit shares already worked out, for a caller charging many allocations of few kinds."""
    start = max(allocation.start, window_start)
    end = min(allocation.end or window_end, window_end)
    if end <= start:
        return []
    share = _unit_share(allocation, catalog, shares)
    lines = []
    for seg_start, seg_end, period in price_segments(start, end, periods):
        hours = hours_between(seg_start, seg_end)
        gpu_rate, source, version = _gpu_rate(allocation.gpu_model, period, fallback_rates or {})
        lines.append(
            ChargeLine(
                allocation=allocation,
                start=seg_start,
                end=seg_end,
                hours=hours,
                unit_share=share,
                allocated_gpu_hours=Decimal(allocation.units) * hours * share,
                gpu_rate=gpu_rate,
                sla_multiplier=_multiplier(allocation, period),
                price_version=version,
                rate_source=source,
            )
        )
    return lines


def capacity_cost(
    gpus: int,
    gpu_model: str,
    *,
    window_start: datetime,
    window_end: datetime,
    periods: Sequence[PricePeriod],
    fallback_rates: Mapping[str, Decimal] | None = None,
) -> Decimal:
    """The cost of ``gpus`` whole GPUs of a model over the window at the rates in effect (the asset cost)."""
    total = ZERO
    for seg_start, seg_end, period in price_segments(window_start, window_end, periods):
        rate, _, _ = _gpu_rate(gpu_model, period, fallback_rates or {})
        total += Decimal(gpus) * hours_between(seg_start, seg_end) * rate
    return total


def compute_chargeback(
    allocations: Iterable[Allocation],
    *,
    window_start: datetime,
    window_end: datetime,
    periods: Sequence[PricePeriod],
    capacity_gpus: Mapping[str, int],
    fallback_rates: Mapping[str, Decimal] | None = None,
    teams: Iterable[str] = (),
    share_idle: bool = False,
    catalog: Catalog = BUILTIN_CATALOG,
) -> Chargeback:
    """Every team's lines for the window, the idle cost per GPU model and (if asked) its weighted sharing."""
    result = {team: TeamCharge(team) for team in teams}
    base_by_model: dict[str, Decimal] = defaultdict(lambda: ZERO)
    team_base: dict[str, dict[str, Decimal]] = defaultdict(lambda: defaultdict(lambda: ZERO))
    model_names: dict[str, str] = {}
    unpriced: set[str] = set()
    shares: dict[tuple[object, ...], Decimal] = {}  # a month holds many allocations of few kinds
    for allocation in allocations:
        lines = charge_allocation(
            allocation,
            window_start=window_start,
            window_end=window_end,
            periods=periods,
            fallback_rates=fallback_rates,
            catalog=catalog,
            shares=shares,
        )
        if not lines:
            continue
        charge = result.setdefault(allocation.team, TeamCharge(allocation.team))
        charge.lines.extend(lines)
        key = allocation.gpu_model.casefold()
        model_names.setdefault(key, allocation.gpu_model)
        for line in lines:
            base_by_model[key] += line.base_amount
            team_base[key][allocation.team] += line.base_amount
            if line.rate_source == "unpriced":
                unpriced.add(allocation.gpu_model)
    capacity: dict[str, Decimal] = {}
    idle: dict[str, Decimal] = {}
    for model, gpus in capacity_gpus.items():
        key = model.casefold()
        model_names.setdefault(key, model)
        capacity[key] = capacity_cost(
            gpus,
            model,
            window_start=window_start,
            window_end=window_end,
            periods=periods,
            fallback_rates=fallback_rates,
        )
        # Allocations beyond the configured capacity (e.g. imported history) leave no idle, never a negative one.
        idle[key] = max(capacity[key] - base_by_model.get(key, ZERO), ZERO)
        if share_idle:
            for team, share in weighted_shares(idle[key], dict(team_base.get(key, {}))).items():
                result[team].idle_share += share
    return Chargeback(
        start=window_start,
        end=window_end,
        teams=result,
        capacity_cost={model_names[k]: v for k, v in capacity.items()},
        allocated_base_cost={model_names[k]: v for k, v in base_by_model.items()},
        idle_cost={model_names[k]: v for k, v in idle.items()},
        idle_shared=share_idle,
        unpriced_models=unpriced,
    )


__all__ = [
    "Allocation",
    "ChargeLine",
    "Chargeback",
    "PricePeriod",
    "Strategy",
    "TeamCharge",
    "capacity_cost",
    "charge_allocation",
    "compute_chargeback",
    "hours_between",
    "price_segments",
]
