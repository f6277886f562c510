"""The options the decision framework weighs: one way to run a profile on one model, sized and priced. Pure: no Django.

Memory: ``gpu_memory_gb`` is the peak GPU memory one replica needs, spread evenly over its ``gpu_count`` GPUs. A
dedicated allocation fits when ``gpu_memory_gb / gpu_count <= memory of one GPU``; a MIG slice when its profile has at
least ``gpu_memory_gb``; a time-sliced share when ``gpu_memory_gb <= memory / time-slice replicas``, because
time-slicing has no memory isolation and a tenant can only count on a fair share (guide Part 2.2). Comparisons multiply
instead of dividing so boundaries such as exactly 10 GB are exact.

Also here: the ``Recommendation`` and ``Alternative`` results, the per-strategy reference figures of the guide, and
the small prose helpers (GB, percentages, money) every explanation shares.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, fields
from decimal import ROUND_HALF_UP, Decimal
from enum import StrEnum
from typing import Any

from gpucore import formatting
from gpucore.catalog import Catalog, GpuModelSpec, MigProfile
from gpucore.pricing import (
    CATALOG_PRICE_BASIS,
    allocation_hourly_rate,
    catalog_hourly_rate,
    gpu_share,
    mig_weight,
    monthly_cost,
    share_text,
    to_cents,
)
from gpucore.profile import WorkloadProfile
from gpucore.sla import SlaTierSpec
from gpucore.vocabulary import Strategy

# The catalog's reference prices (cloud list price, or TCO from a USD purchase price) are in US dollars.
CATALOG_CURRENCY = "USD"

_ONE, _HUNDRED = Decimal(1), Decimal(100)
STRATEGY_WORDS = {Strategy.DEDICATED: "a dedicated GPU", Strategy.MIG: "MIG", Strategy.TIME_SLICING: "time-slicing"}


class Isolation(StrEnum):
    """How well an allocation is isolated from its neighbours on the same GPU."""

    FULL = "full"  # a whole GPU: nothing else runs on it
    HARDWARE = "hardware"  # MIG: memory, cache and faults partitioned in hardware
    NONE = "none"  # time-slicing: shared memory, a fault or an OOM hits every tenant


# Part 2 "Performance Impact Summary": MIG <5 % overhead, time-slicing 15-30 %, dedicated optimal.
EXPECTED_OVERHEAD_PCT: dict[Strategy, tuple[int, int]] = {
    Strategy.DEDICATED: (0, 0),
    Strategy.MIG: (0, 5),
    Strategy.TIME_SLICING: (15, 30),
}
# Parts 1.4 and 3.1: dedicated GPUs 80-95 % utilization, shared GPUs 60-80 % (accounting for overhead).
UTILIZATION_TARGET_PCT: dict[Strategy, tuple[int, int]] = {
    Strategy.DEDICATED: (80, 95),
    Strategy.MIG: (60, 80),
    Strategy.TIME_SLICING: (60, 80),
}
ISOLATION: dict[Strategy, Isolation] = {
    Strategy.DEDICATED: Isolation.FULL,
    Strategy.MIG: Isolation.HARDWARE,
    Strategy.TIME_SLICING: Isolation.NONE,
}


@dataclass(frozen=True, slots=True)
class Option:
    """One way to run the profile on one model, sized and priced (internal)."""

    model: GpuModelSpec
    strategy: Strategy
    quantity: int
    mig: MigProfile | None
    time_slice_replicas: int | None
    time_slice_source: str | None
    share: Decimal  # GPUs paid for per replica
    gpu_rate: Decimal | None  # hourly price of one whole GPU
    rate_source: str | None
    hourly: Decimal | None  # every replica together, SLA multiplier included; None when no price is known
    monthly: Decimal | None  # unrounded; None when no price is known
    duration_cost: Decimal | None = None  # for the profile's duration_hours; None without a duration or a price

    @property
    def resource_name(self) -> str:
        return self.mig.resource_name if self.mig else "nvidia.com/gpu"

    @property
    def unit_share(self) -> Decimal:
        """The GPU share of one allocated unit (one GPU, one MIG instance, one time-sliced share)."""
        return self.share / self.quantity

    @property
    def saving_pct(self) -> Decimal:
        # Against the same profile on dedicated GPUs of the same model: the price and SLA multiplier cancel out,
        # so the saving is known even when the price is not.
        return (_ONE - self.share / self.quantity) * _HUNDRED


@dataclass(frozen=True, slots=True)
class DecisionContext:
    """Everything ``recommend`` resolved from its arguments (internal)."""

    profile: WorkloadProfile
    catalog: Catalog
    tier: SlaTierSpec | None
    multiplier: Decimal
    currency: str
    rates: Mapping[str, Decimal]  # casefolded model name -> hourly rate
    pools: Mapping[str, tuple[int, ...]]  # casefolded model name -> its time-sliced pools' replicas, most first
    default_time_slice_replicas: int
    forbidden: Mapping[Strategy, str]  # strategy -> why policy rules it out
    # (model name, strategy, MIG profile name) -> whether a node pool serves it; None = every option exists.
    offered: Callable[[str, str, str | None], bool] | None = None
    # casefolded model name -> the most GPUs one node of a dedicated pool has; empty = node size unknown
    gpus_per_node: Mapping[str, int] = field(default_factory=dict)
    # (casefolded model name, MIG profile) -> the per-GPU layout of the pool that serves it; the GPU share then
    # scales by the layout's weight (DESIGN.md "GPU share"), as chargeback does.
    mig_layouts: Mapping[tuple[str, str], Mapping[str, int]] = field(default_factory=dict)
    # Memos of one decision: one recommendation sizes each (model, strategy) and walks each model several times
    # (choosing, then listing alternatives), and asks a pool callback per option; each is worked out once.
    # ``replace()`` starts them empty, as a context with other inputs must.
    sized: dict[tuple[str, Strategy], Option | str] = field(default_factory=dict, init=False, repr=False, compare=False)
    walked: dict[str, tuple[Any, Any, Option | None]] = field(
        default_factory=dict, init=False, repr=False, compare=False
    )
    offers: dict[tuple[str, str, str | None], bool] = field(default_factory=dict, init=False, repr=False, compare=False)

    def is_offered(self, option: Option) -> bool:
        if self.offered is None:
            return True
        key = (option.model.name, option.strategy.value, option.mig.name if option.mig else None)
        known = self.offers.get(key)
        if known is None:
            known = self.offers[key] = bool(self.offered(*key))
        return known

    def lookup(self, table: Mapping[str, Any], model: GpuModelSpec) -> Any:
        if not table:
            return None
        for key in model.folded_names:
            if key in table:
                return table[key]
        return None


@dataclass(frozen=True, slots=True)
class AllocationOption:
    """The core fields of every way to run a workload: DESIGN.md's "Recommendation" contract."""

    strategy: Strategy
    resource_name: str
    quantity: int
    replicas: int
    gpu_model: str
    mig_profile: str | None
    time_slice_replicas: int | None
    node_selector: dict[str, str] = field(hash=False)
    expected_overhead_pct: tuple[int, int]
    utilization_target_pct: tuple[int, int]
    isolation: Isolation
    estimated_monthly_cost: Decimal | None
    currency: str
    saving_vs_dedicated_pct: Decimal
    gpu_share: Decimal  # per allocated unit (DESIGN.md "GPU share")
    estimated_cost: Decimal | None  # for duration_hours; None without a duration or a price
    duration_hours: Decimal | None


@dataclass(frozen=True, slots=True)
class Alternative(AllocationOption):
    """Another way to run the workload, with its tradeoffs and whether policy permits it."""

    tradeoffs: tuple[str, ...] = ()
    permitted: bool = True
    reason: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """The alternative as JSON-ready data (DESIGN.md "Recommendation" core fields plus tradeoffs)."""
        return {
            **_core_dict(self),
            "tradeoffs": list(self.tradeoffs),
            "permitted": self.permitted,
            "reason": self.reason,
        }


@dataclass(frozen=True, slots=True)
class Recommendation(AllocationOption):
    """How to run a workload: strategy, Kubernetes resource, model, cost, the reasons, and the alternatives."""

    rationale: tuple[str, ...] = ()
    alternatives: tuple[Alternative, ...] = ()
    topology_aware: bool = False

    def to_dict(self) -> dict[str, Any]:
        """The recommendation as the JSON contract of DESIGN.md (money as strings rounded to the cent)."""
        return {
            **_core_dict(self),
            "rationale": list(self.rationale),
            "alternatives": [alternative.to_dict() for alternative in self.alternatives],
            "topology_aware": self.topology_aware,
        }


# Enum ``.value`` goes through a descriptor; these plain lookups are what every alternative of every answer reads.
_STRATEGY_VALUE = {strategy: strategy.value for strategy in Strategy}
_ISOLATION_VALUE = {isolation: isolation.value for isolation in Isolation}
_TENTH = Decimal("0.1")


def _core_dict(item: AllocationOption) -> dict[str, Any]:
    amount = item.estimated_monthly_cost
    return {
        "strategy": _STRATEGY_VALUE[item.strategy],
        "resource_name": item.resource_name,
        "quantity": item.quantity,
        "replicas": item.replicas,
        "gpu_model": item.gpu_model,
        "mig_profile": item.mig_profile,
        "time_slice_replicas": item.time_slice_replicas,
        "node_selector": dict(item.node_selector),
        "expected_overhead_pct": list(item.expected_overhead_pct),
        "utilization_target_pct": list(item.utilization_target_pct),
        "isolation": _ISOLATION_VALUE[item.isolation],
        "estimated_monthly_cost": {
            "amount": None if amount is None else str(to_cents(amount)),
            "currency": item.currency,
        },
        "saving_vs_dedicated_pct": float(item.saving_vs_dedicated_pct.quantize(_TENTH, ROUND_HALF_UP)),
        "gpu_share": _share_text(item.gpu_share),
        "estimated_cost": (
            None
            if item.duration_hours is None
            else {
                "amount": None if item.estimated_cost is None else str(to_cents(item.estimated_cost)),
                "currency": item.currency,
                "hours": _json_hours(item.duration_hours),
            }
        ),
    }


_SHARE_TEXTS: dict[Decimal, str] = {}


def _share_text(share: Decimal) -> str:
    """``share_text``, remembered: a catalog has a few dozen distinct shares and every answer prints several."""
    text = _SHARE_TEXTS.get(share)
    if text is None:
        if len(_SHARE_TEXTS) > 4096:  # bounded: an odd price book or layout must not grow it without end
            _SHARE_TEXTS.clear()
        text = _SHARE_TEXTS[share] = share_text(share)
    return text


def _json_hours(hours: Decimal) -> int | float:
    return int(hours) if hours == hours.to_integral_value() else float(hours)


def core_values(ctx: DecisionContext, option: Option) -> tuple[Any, ...]:
    """``core_fields`` in ``AllocationOption``'s field order, for positional construction (one per alternative)."""
    strategy = option.strategy
    return (
        strategy,
        option.mig.resource_name if option.mig else "nvidia.com/gpu",
        option.quantity,
        ctx.profile.replicas,
        option.model.name,
        option.mig.name if option.mig else None,
        option.time_slice_replicas,
        option.model.node_selector,
        EXPECTED_OVERHEAD_PCT[strategy],
        UTILIZATION_TARGET_PCT[strategy],
        ISOLATION[strategy],
        option.monthly,
        ctx.currency,
        option.saving_pct,
        option.unit_share,
        option.duration_cost,
        ctx.profile.duration_hours,
    )


def core_fields(ctx: DecisionContext, option: Option) -> dict[str, Any]:
    return dict(zip(_CORE_NAMES, core_values(ctx, option), strict=True))


_CORE_NAMES = tuple(f.name for f in fields(AllocationOption))


# --- arguments -------------------------------------------------------------------------------------------------


def normalize_rates(rates: Mapping[str, Decimal]) -> dict[str, Decimal]:
    result = {}
    for name, rate in rates.items():
        value = rate if isinstance(rate, Decimal) else Decimal(str(rate))
        if not value.is_finite() or value < 0:
            raise ValueError(f"The hourly rate of {name} must be a non-negative amount, not {rate!r}.")
        result[name.casefold()] = value
    return result


def normalize_pools(pools: Mapping[str, int | Iterable[int]]) -> dict[str, tuple[int, ...]]:
    """Each model's time-sliced pools' replicas (one number, or one per pool), distinct and most tenants first."""
    result = {}
    for name, value in pools.items():
        values = [value] if isinstance(value, int) else list(value)
        for replicas in values:
            if isinstance(replicas, bool) or not isinstance(replicas, int) or replicas < 2:
                # The device plugin rejects a time-slicing config with replicas < 2 ("number of replicas must be >= 2").
                raise ValueError(f"The time-slicing replicas of {name} must be an integer >= 2, not {replicas!r}.")
        if values:
            result[name.casefold()] = tuple(sorted(set(values), reverse=True))
    return result


def normalize_layouts(
    layouts: Mapping[tuple[str, str], Mapping[str, int]],
) -> dict[tuple[str, str], dict[str, int]]:
    return {(model.casefold(), profile): dict(layout) for (model, profile), layout in layouts.items()}


def normalize_node_sizes(sizes: Mapping[str, int]) -> dict[str, int]:
    result = {}
    for name, gpus in sizes.items():
        if isinstance(gpus, bool) or not isinstance(gpus, int) or gpus < 1:
            raise ValueError(f"The GPUs per node of {name} must be a positive integer, not {gpus!r}.")
        result[name.casefold()] = gpus
    return result


# --- fit, size and price ---------------------------------------------------------------------------------------


def size_option(ctx: DecisionContext, model: GpuModelSpec, strategy: Strategy) -> Option | str:
    """The option of running the profile on ``model`` with ``strategy``, or why it does not fit (once per context)."""
    key = (model.name, strategy)
    sized = ctx.sized.get(key)
    if sized is None:
        sized = ctx.sized[key] = _size_option(ctx, model, strategy)
    return sized


def _size_option(ctx: DecisionContext, model: GpuModelSpec, strategy: Strategy) -> Option | str:
    profile = ctx.profile
    memory, n = profile.gpu_memory_gb, profile.gpu_count
    mig: MigProfile | None = None
    replicas: int | None = None
    source: str | None = None
    if strategy is Strategy.DEDICATED:
        if memory > model.memory_gb * n:
            return f"{need_text(profile)} does not fit on {model.name} ({model.memory_gb} GB per GPU)."
        node_gpus = ctx.lookup(ctx.gpus_per_node, model)
        if node_gpus is not None and n > node_gpus:
            return (
                f"{n} GPUs per replica do not fit on one {model.name} node here (at most {node_gpus} GPUs per node), "
                "and a replica's GPUs must share a node."
            )
        share = Decimal(n)
    elif strategy is Strategy.MIG:
        if not model.mig_capable:
            return f"{model.name} is not MIG-capable ({model.family})."
        mig = _mig_profile_for(ctx, model)
        if mig is None:
            return _no_mig_profile(model, profile)
        layout = ctx.mig_layouts.get((model.name.casefold(), mig.name))
        share = gpu_share(strategy, model=model, mig_profile=mig, layout=layout) * n
    else:
        fitted = _time_slice_fit(ctx, model)
        if isinstance(fitted, str):
            return fitted
        replicas, source = fitted
        share = gpu_share(strategy, model=model, time_slice_replicas=replicas) * n
    rate, rate_source = _gpu_rate(ctx, model)
    hourly = monthly = duration_cost = None
    if rate is not None:
        hourly = allocation_hourly_rate(rate, share, ctx.multiplier) * Decimal(profile.replicas)
        monthly = monthly_cost(allocation_hourly_rate(rate, share, ctx.multiplier), profile.replicas)
        if profile.duration_hours is not None:
            duration_cost = hourly * profile.duration_hours
    return Option(model, strategy, n, mig, replicas, source, share, rate, rate_source, hourly, monthly, duration_cost)


def _time_slice_fit(ctx: DecisionContext, model: GpuModelSpec) -> tuple[int, str] | str:
    """The most tenants per GPU whose fair share holds the replica, and where that number comes from; else why not.

    With time-sliced pools of the model, only their replicas count (most tenants first: the cheapest share that
    fits). Without one, the tier's or the portal's default, lowered to as few as 2 tenants when a share of the default
    size is too small: development and batch work stay time-sliced as long as some share fits.
    """
    memory, n = ctx.profile.gpu_memory_gb, ctx.profile.gpu_count
    pools = ctx.lookup(ctx.pools, model)
    if pools:
        candidates = list(pools)
        default, default_source = None, "the pool's setting"
    else:
        default, default_source = _default_time_slice_replicas(ctx)
        candidates = list(range(default, 1, -1))
    for replicas in candidates:
        if memory * replicas <= model.memory_gb * n:
            if default is None or replicas == default:
                return replicas, default_source
            return replicas, f"{default_source} of {default} lowered so that a share holds the replica"
    fewest = candidates[-1]
    where = "its pools here have" if pools else "even"
    return (
        f"Time-slicing does not fit on {model.name}: {format_gb(memory / n)} is more than a fair share with "
        f"{where} {fewest} tenants per GPU ({model.memory_gb} GB / {fewest} = "
        f"{format_gb(Decimal(model.memory_gb) / fewest)}); time-slicing has no memory isolation, so a tenant can only "
        "count on its share."
    )


def fewest_time_slice_replicas(ctx: DecisionContext, model: GpuModelSpec) -> int:
    """The fewest tenants per GPU the model can be time-sliced with here: its pools' smallest, else 2."""
    pools = ctx.lookup(ctx.pools, model)
    return pools[-1] if pools else 2


def _mig_profile_for(ctx: DecisionContext, model: GpuModelSpec) -> MigProfile | None:
    """The smallest recommendable partial profile holding the replica's memory; where node pools are known, the
    smallest one a pool offers (a profile an operator configured counts even if not on the recommendable list)."""
    memory, n = ctx.profile.gpu_memory_gb, ctx.profile.gpu_count
    smallest = next((p for p in model.recommendable_profiles() if p.memory_gb * n >= memory), None)
    if ctx.offered is None:
        return smallest
    offered = [
        p
        for p in model.mig_profiles
        if p.compute_slices < model.mig_compute_slices
        and p.memory_gb * n >= memory
        and ctx.offered(model.name, Strategy.MIG.value, p.name)
    ]
    if not offered:
        return smallest  # not offered: the caller says so and moves on
    return min(offered, key=lambda p: (mig_weight(model, p), p.memory_gb, p.compute_slices, p.name))


def _no_mig_profile(model: GpuModelSpec, profile: WorkloadProfile) -> str:
    partial = model.recommendable_profiles()
    largest = f" (largest partial profile: {partial[-1].name})" if partial else ""
    full = next((p for p in model.mig_profiles if p.compute_slices == model.mig_compute_slices), None)
    need = format_gb(profile.gpu_memory_gb / profile.gpu_count)
    if full is not None and full.memory_gb * profile.gpu_count >= profile.gpu_memory_gb:
        return (
            f"No partial MIG profile of {model.name} holds {need}{largest}; only the full-GPU profile {full.name} "
            "would, and a whole GPU is better served as a dedicated GPU."
        )
    return f"No MIG profile of {model.name} holds {need}{largest}."


def _default_time_slice_replicas(ctx: DecisionContext) -> tuple[int, str]:
    if ctx.tier is not None and ctx.tier.default_time_slice_replicas is not None:
        if ctx.tier.default_time_slice_replicas < 2:
            raise ValueError(f"SLA tier {ctx.tier.slug} has default_time_slice_replicas < 2.")
        # Part 4.3: tier3_development -> time_slicing_4x.
        return ctx.tier.default_time_slice_replicas, f"the {ctx.tier.name} default"
    return ctx.default_time_slice_replicas, "the portal default"


def _gpu_rate(ctx: DecisionContext, model: GpuModelSpec) -> tuple[Decimal | None, str | None]:
    """The hourly price of one whole GPU: the price book's, else the catalog's reference price in USD, else None."""
    rate = ctx.lookup(ctx.rates, model)
    if rate is not None:
        return rate, "price book"
    if ctx.currency != CATALOG_CURRENCY:
        return None, None  # never convert currencies by guess (DESIGN.md: money is never guessed)
    rate = catalog_hourly_rate(model)
    if rate is None:
        return None, None
    return rate, CATALOG_PRICE_BASIS


# --- prose helpers -------------------------------------------------------------------------------------------


def need_text(profile: WorkloadProfile) -> str:
    if profile.gpu_count == 1:
        return f"A replica needs {format_gb(profile.gpu_memory_gb)} on one GPU"
    per_gpu = format_gb(profile.gpu_memory_gb / profile.gpu_count)
    return f"A replica needs {format_gb(profile.gpu_memory_gb)} over {profile.gpu_count} GPUs ({per_gpu} per GPU)"


def format_gb(value: Decimal | int) -> str:
    return f"{_plain(Decimal(value))} GB"


def _pct(value: Decimal) -> str:
    return f"{value.quantize(Decimal('0.1'), ROUND_HALF_UP)}%"


def format_money(amount: Decimal, currency: str) -> str:
    """Money in prose, in the portal's one format (``gpucore.formatting``): ``5,022.40 USD``."""
    return formatting.format_money(amount, currency)


def _plain(value: Decimal) -> str:
    """A number for prose: at most two decimals, no trailing zeros, no exponent (13.33, 10, 5.01)."""
    rounded = value.quantize(Decimal("0.01"), ROUND_HALF_UP).normalize()
    return f"{rounded:f}"
