"""The decision framework: a workload profile in, a GPU allocation recommendation out. Pure: no Django.

It follows Part 4 of the allocation guide (``shared/domain/000_*.txt``): the decision tree (4.6) and the workload
characterization matrix (4.1) give the preferred strategy; the SLA tier (4.3), ``isolation_required`` and
``gpu_count`` are floors that rule strategies out; the catalog's MIG geometry and memory decide what fits; the
price book (or the catalog's reference price) and ``billing.pricing`` put a monthly cost on it. Every rule that
fires adds a sentence to ``rationale`` so a reviewer can follow the decision.

Memory: ``gpu_memory_gb`` is the peak GPU memory one replica needs, spread evenly over its ``gpu_count`` GPUs. A
dedicated allocation fits when ``gpu_memory_gb / gpu_count <= memory of one GPU``; a MIG slice when its profile has at
least ``gpu_memory_gb``; a time-sliced share when ``gpu_memory_gb <= memory / time-slice replicas``, because
time-slicing has no memory isolation and a tenant can only count on a fair share (Part 2.2). Comparisons multiply
instead of dividing so boundaries such as exactly 10 GB are exact.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from decimal import ROUND_HALF_UP, Decimal
from enum import Enum, StrEnum
from typing import Any

from billing.pricing import (
    HOURS_PER_MONTH,
    Strategy,
    allocation_hourly_rate,
    allocation_share,
    catalog_hourly_rate,
    monthly_cost,
    to_cents,
)

from .catalog import Catalog, CatalogError, GpuModelSpec, MigProfile
from .profile import ProfileError, WorkloadProfile, WorkloadType
from .sla import DEFAULT_TIERS_BY_SLUG, IsolationFloor, SlaTierSpec

# Decision tree, Part 4.6: "Latency Sensitive? -> Memory > 10GB? -> yes: Dedicated GPU, no: MIG Instance".
LATENCY_MEMORY_THRESHOLD_GB = Decimal(10)
# The catalog's reference prices (cloud list price, or TCO from a USD purchase price) are in US dollars.
CATALOG_CURRENCY = "USD"

_D, _M, _TS = Strategy.DEDICATED, Strategy.MIG, Strategy.TIME_SLICING
_STRATEGY_WORDS = {_D: "a dedicated GPU", _M: "MIG", _TS: "time-slicing"}


class Isolation(StrEnum):
    """How well an allocation is isolated from its neighbours on the same GPU."""

    FULL = "full"  # a whole GPU: nothing else runs on it
    HARDWARE = "hardware"  # MIG: memory, cache and faults partitioned in hardware
    NONE = "none"  # time-slicing: shared memory, a fault or an OOM hits every tenant


# Part 2 "Performance Impact Summary": MIG <5 % overhead, time-slicing 15-30 %, dedicated optimal.
EXPECTED_OVERHEAD_PCT: dict[Strategy, tuple[int, int]] = {_D: (0, 0), _M: (0, 5), _TS: (15, 30)}
# Parts 1.4 and 3.1: dedicated GPUs 80-95 % utilization, shared GPUs 60-80 % (accounting for overhead).
UTILIZATION_TARGET_PCT: dict[Strategy, tuple[int, int]] = {_D: (80, 95), _M: (60, 80), _TS: (60, 80)}
ISOLATION: dict[Strategy, Isolation] = {_D: Isolation.FULL, _M: Isolation.HARDWARE, _TS: Isolation.NONE}

_PERFORMANCE_TRADEOFF = {
    _D: "Performance: the whole GPU with no sharing overhead and under 10% memory fragmentation (Part 1.4).",
    _M: "Performance: under 5% overhead; the slice's memory and compute are guaranteed (Part 2.1).",
    _TS: "Performance: 15-30% overhead from context switches, 15-25% memory fragmentation and noisy neighbours "
    "(Parts 1.3, 1.4 and 2).",
}
_ISOLATION_TRADEOFF = {
    _D: "Isolation: full; nothing else runs on the GPU.",
    _M: "Isolation: hardware; memory and faults stay inside the slice.",
    _TS: "Isolation: none; a neighbour can exhaust memory or crash the GPU for every tenant (Part 2.2).",
}


class _Intent(Enum):
    """What the decision tree and the matrix ask for, before floors and fit."""

    DEDICATED = "dedicated"
    MIG = "mig"  # latency-sensitive and small: MIG, else dedicated
    MIG_OR_DEDICATED = "mig-or-dedicated"  # real-time inference, explicitly not latency-sensitive (matrix)
    TIME_SLICING = "time-slicing"


# The order strategies are tried in, across models, for each intent (before policy removes some).
_ORDER: dict[_Intent, tuple[Strategy, ...]] = {
    _Intent.DEDICATED: (_D,),
    _Intent.MIG: (_M, _D),
    _Intent.MIG_OR_DEDICATED: (_M, _TS, _D),
    _Intent.TIME_SLICING: (_TS, _M, _D),
}


def _model_plan(intent: _Intent, model: GpuModelSpec) -> tuple[Strategy, ...]:
    """The strategies one model is tried with, in order (a subsequence of ``_ORDER[intent]``)."""
    if intent is _Intent.DEDICATED:
        return (_D,)
    if intent is _Intent.MIG:
        # A model without MIG: latency-sensitive work goes to a dedicated GPU, never to a time-sliced one.
        return (_M, _D) if model.mig_capable else (_D,)
    if intent is _Intent.MIG_OR_DEDICATED:
        # "MIG where memory fits a profile, else dedicated"; a model without MIG time-slices work that is neither
        # latency-sensitive nor isolation-bound (the policy filter removes time-slicing otherwise).
        return (_M, _D) if model.mig_capable else (_TS, _D)
    return (_TS, _M, _D) if model.mig_capable else (_TS, _D)


@dataclass(frozen=True, slots=True)
class _Option:
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
    monthly: Decimal | None  # unrounded; None when no price is known

    @property
    def resource_name(self) -> str:
        return self.mig.resource_name if self.mig else "nvidia.com/gpu"

    @property
    def saving_pct(self) -> Decimal:
        # Against the same profile on dedicated GPUs of the same model: the price and SLA multiplier cancel out,
        # so the saving is known even when the price is not.
        return (Decimal(1) - self.share / Decimal(self.quantity)) * Decimal(100)


@dataclass(frozen=True, slots=True)
class _Context:
    """Everything ``recommend`` resolved from its arguments (internal)."""

    profile: WorkloadProfile
    catalog: Catalog
    tier: SlaTierSpec | None
    multiplier: Decimal
    currency: str
    rates: Mapping[str, Decimal]  # casefolded model name -> hourly rate
    pools: Mapping[str, int]  # casefolded model name -> time-slice replicas
    default_time_slice_replicas: int
    forbidden: Mapping[Strategy, str]  # strategy -> why policy rules it out

    def lookup(self, table: Mapping[str, Any], model: GpuModelSpec) -> Any:
        for key in (model.name, *model.aliases):
            if key.casefold() in table:
                return table[key.casefold()]
        return None


@dataclass(frozen=True, slots=True)
class Alternative:
    """Another way to run the workload, with its tradeoffs and whether policy permits it."""

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
class Recommendation:
    """How to run a workload: strategy, Kubernetes resource, model, cost, the reasons, and the alternatives."""

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


def _core_dict(item: Recommendation | Alternative) -> dict[str, Any]:
    amount = item.estimated_monthly_cost
    return {
        "strategy": item.strategy.value,
        "resource_name": item.resource_name,
        "quantity": item.quantity,
        "replicas": item.replicas,
        "gpu_model": item.gpu_model,
        "mig_profile": item.mig_profile,
        "time_slice_replicas": item.time_slice_replicas,
        "node_selector": dict(item.node_selector),
        "expected_overhead_pct": list(item.expected_overhead_pct),
        "utilization_target_pct": list(item.utilization_target_pct),
        "isolation": item.isolation.value,
        "estimated_monthly_cost": {
            "amount": None if amount is None else str(to_cents(amount)),
            "currency": item.currency,
        },
        "saving_vs_dedicated_pct": float(item.saving_vs_dedicated_pct.quantize(Decimal("0.1"), ROUND_HALF_UP)),
    }


def recommend(
    profile: WorkloadProfile,
    catalog: Catalog,
    *,
    tiers: Mapping[str, SlaTierSpec] = DEFAULT_TIERS_BY_SLUG,
    rates: Mapping[str, Decimal] | None = None,
    time_slice_replicas: Mapping[str, int] | None = None,
    default_time_slice_replicas: int = 4,
    currency: str = "USD",
) -> Recommendation:
    """Recommend a GPU allocation for ``profile`` from ``catalog``; raises ``ProfileError`` for what cannot be served.

    ``rates`` maps model names to the hourly price of one whole GPU (the price book); a model without one falls back
    to the catalog's reference price (USD only), else its cost is unknown and it ranks after priced models.
    ``time_slice_replicas`` maps model names to their pool's time-slicing replicas; otherwise the SLA tier's default
    applies, else ``default_time_slice_replicas``.
    """
    model, tier = _resolve(profile, catalog, tiers)
    if default_time_slice_replicas < 2:
        raise ValueError("default_time_slice_replicas must be at least 2 (the device plugin's minimum).")
    rationale: list[str] = []
    intent, intent_reason = _intent(profile, rationale)
    forbidden, order = _apply_floors(profile, tier, intent, rationale)
    ctx = _Context(
        profile=profile,
        catalog=catalog,
        tier=tier,
        multiplier=tier.price_multiplier if tier else Decimal(1),
        currency=currency,
        rates=_normalize_rates(rates or {}),
        pools=_normalize_pools(time_slice_replicas or {}),
        default_time_slice_replicas=default_time_slice_replicas,
        forbidden=forbidden,
    )

    if model is not None:
        rationale.append(f"GPU model {model.name} ({model.family}, {model.memory_gb} GB), as requested.")
        chosen = _walk(ctx, model, intent, order, rationale)
        if chosen is None:
            raise ProfileError({"gpu_memory_gb": [_too_big_for(ctx, model)]})
    else:
        chosen = _choose_model(ctx, intent, order, rationale)

    rationale.append(_sizing_line(ctx, chosen))
    rationale.append(_cost_line(ctx, chosen))
    utilization = _utilization_line(profile, chosen.strategy)
    if utilization:
        rationale.append(utilization)

    alternatives = _alternatives(ctx, intent, intent_reason, order, chosen, named=model is not None)
    return Recommendation(
        **_core_fields(ctx, chosen),
        rationale=tuple(rationale),
        alternatives=alternatives,
        topology_aware=profile.workload_type is WorkloadType.HPC_SIMULATION,
    )


# --- arguments -------------------------------------------------------------------------------------------------


def _resolve(
    profile: WorkloadProfile, catalog: Catalog, tiers: Mapping[str, SlaTierSpec]
) -> tuple[GpuModelSpec | None, SlaTierSpec | None]:
    """The named model and tier, or a ``ProfileError`` listing what is known (both fields at once)."""
    errors: dict[str, list[str]] = {}
    model = tier = None
    if profile.gpu_model is not None:
        try:
            model = catalog.get(profile.gpu_model)
        except CatalogError as error:
            errors["gpu_model"] = [str(error)]
    if profile.sla_tier is not None:
        tier = tiers.get(profile.sla_tier)
        if tier is None:
            known = ", ".join(tiers) or "none"
            errors["sla_tier"] = [f"Unknown SLA tier '{profile.sla_tier}'. Known tiers: {known}."]
    if errors:
        raise ProfileError(errors)
    if not len(catalog):
        raise CatalogError("The GPU catalog is empty: no model to recommend.")
    return model, tier


def _normalize_rates(rates: Mapping[str, Decimal]) -> dict[str, Decimal]:
    result = {}
    for name, rate in rates.items():
        value = rate if isinstance(rate, Decimal) else Decimal(str(rate))
        if not value.is_finite() or value < 0:
            raise ValueError(f"The hourly rate of {name} must be a non-negative amount, not {rate!r}.")
        result[name.casefold()] = value
    return result


def _normalize_pools(pools: Mapping[str, int]) -> dict[str, int]:
    result = {}
    for name, replicas in pools.items():
        if isinstance(replicas, bool) or not isinstance(replicas, int) or replicas < 2:
            # The device plugin rejects a time-slicing config with replicas < 2 ("number of replicas must be >= 2").
            raise ValueError(f"The time-slicing replicas of {name} must be an integer >= 2, not {replicas!r}.")
        result[name.casefold()] = replicas
    return result


# --- the tree and the floors -----------------------------------------------------------------------------------


def _intent(profile: WorkloadProfile, rationale: list[str]) -> tuple[_Intent, str]:
    """The matrix (4.1) and decision tree (4.6) preference, and a short reason for it."""
    kind = profile.workload_type
    memory = profile.gpu_memory_gb
    if kind is WorkloadType.TRAINING:
        rationale.append(
            "Training: dedicated GPUs, because long, memory-heavy runs need predictable performance (matrix, Part 4.1)."
        )
        return _Intent.DEDICATED, "the guide gives training dedicated GPUs for predictable performance (Part 4.1)"
    if kind is WorkloadType.HPC_SIMULATION:
        rationale.append(
            "HPC simulation: dedicated GPUs plus affinity, because it is compute-heavy and NUMA-sensitive "
            "(matrix, Part 4.1)."
        )
        rationale.append(
            "Topology-aware placement: keep each replica's GPUs and CPUs in the same NUMA zone "
            "(NUMA-aware scheduling, Part 2.4)."
        )
        return _Intent.DEDICATED, "the guide gives HPC simulation dedicated GPUs with NUMA affinity (Part 4.1)"
    if profile.latency_sensitive:
        if memory > LATENCY_MEMORY_THRESHOLD_GB:
            rationale.append(
                f"Latency-sensitive with {_gb(memory)} > {_gb(LATENCY_MEMORY_THRESHOLD_GB)}: a dedicated GPU "
                "(decision tree, Part 4.6)."
            )
            return _Intent.DEDICATED, "the decision tree gives latency-sensitive work over 10 GB a dedicated GPU"
        rationale.append(
            f"Latency-sensitive with {_gb(memory)} <= {_gb(LATENCY_MEMORY_THRESHOLD_GB)}: a MIG instance, whose "
            "hardware isolation prevents jitter (decision tree, Part 4.6)."
        )
        return _Intent.MIG, "the decision tree gives latency-sensitive work up to 10 GB a MIG instance"
    if kind is WorkloadType.BATCH_INFERENCE:
        rationale.append(
            "Batch inference, not latency-sensitive: time-slicing, the cost-optimization opportunity "
            "(decision tree and matrix, Parts 4.6 and 4.1)."
        )
        return _Intent.TIME_SLICING, "the guide time-slices batch inference that is not latency-sensitive"
    if kind is WorkloadType.DEVELOPMENT:
        rationale.append(
            "Development, not latency-sensitive: time-slicing for maximum flexibility "
            "(decision tree and matrix, Parts 4.6 and 4.1)."
        )
        return _Intent.TIME_SLICING, "the guide time-slices development work for flexibility"
    rationale.append(
        "Real-time inference marked not latency-sensitive: MIG or dedicated, because isolation prevents jitter "
        "(matrix, Part 4.1); MIG where the memory fits a profile."
    )
    return _Intent.MIG_OR_DEDICATED, "the matrix gives real-time inference MIG or dedicated GPUs (Part 4.1)"


def _apply_floors(
    profile: WorkloadProfile, tier: SlaTierSpec | None, intent: _Intent, rationale: list[str]
) -> tuple[dict[Strategy, str], tuple[Strategy, ...]]:
    """Policy floors (GPUs per replica, isolation, SLA tier): what they forbid and why, and the order that remains."""
    forbidden: dict[Strategy, list[str]] = {}
    order = list(_ORDER[intent])

    def rule_out(strategy: Strategy, reason: str) -> bool:
        forbidden.setdefault(strategy, []).append(reason)
        if strategy in order:
            order.remove(strategy)
            return True
        return False

    if profile.gpu_count > 1:
        n = profile.gpu_count
        removed = [
            rule_out(_M, f"{n} GPUs per replica: a MIG slice cannot span GPUs."),
            rule_out(
                _TS,
                f"{n} GPUs per replica: the device plugin refuses a time-sliced request of more than one, and "
                "several shares of a GPU add no compute (Part 2.2).",
            ),
        ]
        rationale.append(
            f"{n} GPUs per replica: dedicated whole GPUs, because a MIG slice cannot span GPUs and the device plugin "
            "refuses a time-sliced request of more than one"
            + ("." if any(removed) else "; the choice is already dedicated.")
        )
    if profile.isolation_required:
        if rule_out(_TS, "Isolation required: time-slicing has no memory or fault isolation (Part 2.2)."):
            rationale.append(
                "Isolation required: time-slicing is ruled out because it has no memory or fault isolation "
                "(Part 2.2); MIG where the memory fits a profile, else dedicated (Part 4.3: isolation -> MIG vs "
                "time-slicing)."
            )
        else:
            rationale.append("Isolation required: met, since MIG and dedicated GPUs isolate memory and faults.")
    if tier is not None:
        label = f"SLA tier {tier.slug} ({tier.name})"
        if tier.isolation_floor is IsolationFloor.DEDICATED:
            reason = f"{label} accepts dedicated GPUs only (Part 4.3)."
            removed_names = [_STRATEGY_WORDS[s] for s in (_M, _TS) if rule_out(s, reason)]
            verb = "are" if len(removed_names) > 1 else "is"
            tail = (
                f", so {' and '.join(removed_names)} {verb} ruled out." if removed_names else "; the choice meets it."
            )
            rationale.append(f"{label} is a floor on isolation: dedicated GPUs only (Part 4.3){tail}")
        elif tier.isolation_floor is IsolationFloor.HARDWARE:
            reason = f"{label} needs hardware isolation at least: MIG or dedicated, no time-slicing (Part 4.3)."
            tail = ", so time-slicing is ruled out." if rule_out(_TS, reason) else "; the choice meets it."
            rationale.append(
                f"{label} is a floor on isolation: hardware isolation at least, MIG or dedicated (Part 4.3){tail}"
            )
        else:
            rationale.append(f"{label} accepts any strategy, time-slicing included (best effort, Part 4.3).")
    return {strategy: " ".join(reasons) for strategy, reasons in forbidden.items()}, tuple(order)


# --- fit, size and price ---------------------------------------------------------------------------------------


def _size(ctx: _Context, model: GpuModelSpec, strategy: Strategy) -> _Option | str:
    """The option of running the profile on ``model`` with ``strategy``, or why it does not fit."""
    profile = ctx.profile
    memory, n = profile.gpu_memory_gb, profile.gpu_count
    mig: MigProfile | None = None
    replicas: int | None = None
    source: str | None = None
    if strategy is _D:
        if memory > model.memory_gb * n:
            return f"{_need(profile)} does not fit on {model.name} ({model.memory_gb} GB per GPU)."
        share = allocation_share(strategy, quantity=n)
    elif strategy is _M:
        if not model.mig_capable:
            return f"{model.name} is not MIG-capable ({model.family})."
        mig = next((p for p in model.recommendable_profiles() if p.memory_gb * n >= memory), None)
        if mig is None:
            return _no_mig_profile(model, profile)
        share = allocation_share(
            strategy, quantity=n, mig_compute_slices=mig.compute_slices, gpu_compute_slices=model.mig_compute_slices
        )
    else:
        replicas, source = _time_slice_replicas(ctx, model)
        if memory * replicas > model.memory_gb * n:
            return (
                f"Time-slicing does not fit on {model.name}: {_gb(memory / n)} > {model.memory_gb} GB / {replicas} "
                f"replicas = {_gb(Decimal(model.memory_gb) / replicas)} per tenant; time-slicing has no memory "
                "isolation, so a tenant can only count on a fair share (Part 2.2)."
            )
        share = allocation_share(strategy, quantity=n, time_slice_replicas=replicas)
    rate, rate_source = _gpu_rate(ctx, model)
    monthly = None
    if rate is not None:
        monthly = monthly_cost(allocation_hourly_rate(rate, share, ctx.multiplier), ctx.profile.replicas)
    return _Option(model, strategy, n, mig, replicas, source, share, rate, rate_source, monthly)


def _no_mig_profile(model: GpuModelSpec, profile: WorkloadProfile) -> str:
    partial = model.recommendable_profiles()
    largest = f" (largest partial profile: {partial[-1].name})" if partial else ""
    full = next((p for p in model.mig_profiles if p.compute_slices == model.mig_compute_slices), None)
    need = _gb(profile.gpu_memory_gb / profile.gpu_count)
    if full is not None and full.memory_gb * profile.gpu_count >= profile.gpu_memory_gb:
        return (
            f"No partial MIG profile of {model.name} holds {need}{largest}; only the full-GPU profile {full.name} "
            "would, and a whole GPU is better served as a dedicated GPU."
        )
    return f"No MIG profile of {model.name} holds {need}{largest}."


def _time_slice_replicas(ctx: _Context, model: GpuModelSpec) -> tuple[int, str]:
    pool = ctx.lookup(ctx.pools, model)
    if pool is not None:
        return pool, "the pool's setting"
    if ctx.tier is not None and ctx.tier.default_time_slice_replicas is not None:
        if ctx.tier.default_time_slice_replicas < 2:
            raise ValueError(f"SLA tier {ctx.tier.slug} has default_time_slice_replicas < 2.")
        # Part 4.3: tier3_development -> time_slicing_4x.
        return ctx.tier.default_time_slice_replicas, f"the {ctx.tier.slug} default"
    return ctx.default_time_slice_replicas, "the portal default"


def _gpu_rate(ctx: _Context, model: GpuModelSpec) -> tuple[Decimal | None, str | None]:
    """The hourly price of one whole GPU: the price book's, else the catalog's reference price in USD, else None."""
    rate = ctx.lookup(ctx.rates, model)
    if rate is not None:
        return rate, "price book"
    if ctx.currency != CATALOG_CURRENCY:
        return None, None  # never convert currencies by guess (DESIGN.md: money is never guessed)
    rate = catalog_hourly_rate(
        purchase_price=model.purchase_price_usd, tdp_watts=model.tdp_watts, list_hourly=model.list_hourly_usd
    )
    if rate is None:
        return None, None
    return rate, "catalog TCO" if model.purchase_price_usd is not None else "catalog list price"


# --- choosing --------------------------------------------------------------------------------------------------


def _walk(
    ctx: _Context, model: GpuModelSpec, intent: _Intent, order: tuple[Strategy, ...], rationale: list[str] | None
) -> _Option | None:
    """The first strategy of the model's plan that policy allows and that fits, noting each fallback."""
    plan = [s for s in _model_plan(intent, model) if s in order]
    for strategy in order:
        if strategy not in plan:
            if strategy is _M and not model.mig_capable and rationale is not None:
                rationale.append(_not_mig_capable_line(ctx, model, plan))
            continue
        option = _size(ctx, model, strategy)
        if isinstance(option, _Option):
            return option
        if rationale is not None:
            rationale.append(option)
    return None


def _not_mig_capable_line(ctx: _Context, model: GpuModelSpec, plan: list[Strategy]) -> str:
    head = f"{model.name} is not MIG-capable ({model.family}): "
    if plan and plan[0] is _TS:
        return head + "time-slicing instead, since the work is neither latency-sensitive nor isolation-bound."
    if ctx.profile.latency_sensitive:
        why = "the work is latency-sensitive"
    elif ctx.profile.isolation_required:
        why = "isolation is required"
    else:
        why = "policy rules out time-slicing"
    return head + f"a dedicated GPU instead, since {why}."


def _choose_model(ctx: _Context, intent: _Intent, order: tuple[Strategy, ...], rationale: list[str]) -> _Option:
    """With no model named: the best-ranked strategy any model can serve, on the cheapest model serving it."""
    outcomes = [o for o in (_walk(ctx, m, intent, order, None) for m in ctx.catalog) if o is not None]
    if not outcomes:
        raise ProfileError({"gpu_memory_gb": [_too_big_for_any(ctx)]})
    best = min(outcomes, key=lambda o: (order.index(o.strategy), *_price_key(o)))
    for strategy in order[: order.index(best.strategy)]:
        rationale.append(_nobody_serves(ctx, intent, strategy))
    peers = sum(1 for o in outcomes if o.strategy is best.strategy)
    price = f"{_money(best.monthly, ctx.currency)}/month" if best.monthly is not None else "price unknown"
    rationale.append(
        f"No GPU model named: {best.model.name} is the cheapest of {peers} model(s) that can serve "
        f"{_STRATEGY_WORDS[best.strategy]} for this profile ({price}); models without a known price rank last, "
        "ties go to the smaller GPU."
    )
    return best


def _price_key(option: _Option) -> tuple[bool, Decimal, int, str]:
    return (
        option.monthly is None,
        option.monthly if option.monthly is not None else Decimal(0),
        option.model.memory_gb,
        option.model.name,
    )


def _nobody_serves(ctx: _Context, intent: _Intent, strategy: Strategy) -> str:
    profile = ctx.profile
    if strategy is _TS:
        shares = [
            (Decimal(m.memory_gb) / _time_slice_replicas(ctx, m)[0], m.name)
            for m in ctx.catalog
            if _TS in _model_plan(intent, m)
        ]
        if shares:
            most, name = max(shares)
            return (
                f"No catalog model can time-slice {_gb(profile.gpu_memory_gb)}: a tenant can only count on the GPU's "
                f"memory / replicas (Part 2.2), at most {_gb(most)} here ({name})."
            )
        return "No catalog model can serve time-slicing for this profile."
    partial = [
        (p.memory_gb, -p.compute_slices, m.name, p.name) for m in ctx.catalog for p in m.recommendable_profiles()
    ]
    if not partial:
        return "No catalog model is MIG-capable."
    memory, _, model_name, profile_name = max(partial)
    return (
        f"No catalog model has a partial MIG profile with {_gb(profile.gpu_memory_gb)}: the largest is "
        f"{model_name} {profile_name} ({memory} GB)."
    )


def _too_big_for(ctx: _Context, model: GpuModelSpec) -> str:
    """The refusal for a profile that no single GPU of the named model can hold."""
    profile = ctx.profile
    bigger = [m.name for m in ctx.catalog if m.memory_gb * profile.gpu_count >= profile.gpu_memory_gb]
    needed = math.ceil(profile.gpu_memory_gb / model.memory_gb)
    advice = f"choose a bigger model ({', '.join(bigger)}) or " if bigger else ""
    return (
        f"{_need(profile)} but one {model.name} GPU has {model.memory_gb} GB: {advice}spread the replica over "
        f"more GPUs (gpu_count >= {needed})."
    )


def _too_big_for_any(ctx: _Context) -> str:
    profile = ctx.profile
    largest = max(ctx.catalog, key=lambda m: m.memory_gb)
    needed = math.ceil(profile.gpu_memory_gb / largest.memory_gb)
    return (
        f"{_need(profile)} but no GPU model in the catalog is that big: the largest, {largest.name}, has "
        f"{largest.memory_gb} GB. Spread the replica over more GPUs (gpu_count >= {needed})."
    )


def _need(profile: WorkloadProfile) -> str:
    if profile.gpu_count == 1:
        return f"A replica needs {_gb(profile.gpu_memory_gb)} on one GPU"
    per_gpu = _gb(profile.gpu_memory_gb / profile.gpu_count)
    return f"A replica needs {_gb(profile.gpu_memory_gb)} over {profile.gpu_count} GPUs ({per_gpu} per GPU)"


# --- explaining ------------------------------------------------------------------------------------------------


def _sizing_line(ctx: _Context, option: _Option) -> str:
    profile, model = ctx.profile, option.model
    if option.strategy is _M and option.mig is not None:
        return (
            f"MIG profile {option.mig.name} on {model.name}: the smallest recommendable profile with at least "
            f"{_gb(profile.gpu_memory_gb)} ({option.mig.memory_gb} GB, {option.mig.compute_slices}/"
            f"{model.mig_compute_slices} of the compute)."
        )
    if option.strategy is _TS:
        per_tenant = Decimal(model.memory_gb) / Decimal(option.time_slice_replicas or 1)
        return (
            f"Time-slicing on {model.name} with {option.time_slice_replicas} replicas per GPU "
            f"({option.time_slice_source}): each tenant can count on {_gb(per_tenant)} >= "
            f"{_gb(profile.gpu_memory_gb)}."
        )
    if profile.gpu_count == 1:
        return f"Dedicated: one {model.name} ({model.memory_gb} GB) per replica holds {_gb(profile.gpu_memory_gb)}."
    return (
        f"Dedicated: {profile.gpu_count} x {model.name} per replica, {_gb(profile.gpu_memory_gb / profile.gpu_count)} "
        f"per GPU of {model.memory_gb} GB (gpu_memory_gb is the replica's peak, spread over its GPUs)."
    )


def _share_words(option: _Option) -> str:
    if option.strategy is _M and option.mig is not None:
        return f"{option.mig.compute_slices}/{option.model.mig_compute_slices} of a GPU"
    if option.strategy is _TS:
        return f"1/{option.time_slice_replicas} of a GPU"
    return f"{option.quantity} GPU" + ("s" if option.quantity > 1 else "")


def _cost_line(ctx: _Context, option: _Option) -> str:
    saving = option.saving_pct
    saving_words = f", {_pct(saving)} less than dedicated {option.model.name} GPUs" if saving > 0 else ""
    if option.monthly is None or option.gpu_rate is None:
        why = f"no price book rate for {option.model.name}"
        why += (
            " and no catalog price"
            if ctx.currency == CATALOG_CURRENCY
            else f", and the catalog's prices are in {CATALOG_CURRENCY}, not {ctx.currency}"
        )
        return f"Estimated cost unknown: {why}{saving_words}."
    replicas = ctx.profile.replicas
    return (
        f"Estimated cost: {option.gpu_rate.quantize(Decimal('0.0001'), ROUND_HALF_UP)} {ctx.currency}/GPU-hour "
        f"({option.rate_source}) x {_share_words(option)} x SLA multiplier {ctx.multiplier} x {HOURS_PER_MONTH} h "
        f"x {replicas} replica{'s' if replicas > 1 else ''} = {_money(option.monthly, ctx.currency)}/month"
        f"{saving_words}."
    )


def _utilization_line(profile: WorkloadProfile, strategy: Strategy) -> str | None:
    expected = profile.expected_utilization_pct
    if expected is None:
        return None
    low, high = UTILIZATION_TARGET_PCT[strategy]
    kind = "dedicated" if strategy is _D else "shared"
    if expected < low:
        advice = (
            "a shared strategy would leave less idle capacity, where policy allows."
            if strategy is _D
            else "the share may sit idle."
        )
        return (
            f"Expected utilization {expected}% is below the {low}-{high}% target for {kind} GPUs (Part 3.1): {advice}"
        )
    if expected > high and strategy is not _D:
        return (
            f"Expected utilization {expected}% is above the {low}-{high}% target for shared GPUs (Part 3.1): expect "
            "contention; a dedicated GPU may serve it better."
        )
    return f"Expected utilization {expected}% fits the {low}-{high}% target for {kind} GPUs (Part 3.1)."


def _alternatives(
    ctx: _Context,
    intent: _Intent,
    intent_reason: str,
    order: tuple[Strategy, ...],
    chosen: _Option,
    *,
    named: bool,
) -> tuple[Alternative, ...]:
    """Every other strategy that fits the chosen model (permitted or not), and what each other model would give."""
    options: list[_Option] = []
    for strategy in Strategy:
        if strategy is not chosen.strategy:
            option = _size(ctx, chosen.model, strategy)
            if isinstance(option, _Option):
                options.append(option)
    for model in ctx.catalog:
        if model is not chosen.model:
            option = _walk(ctx, model, intent, order, None)
            if option is not None:
                options.append(option)
    preference = (*_ORDER[intent], *(s for s in (_D, _M, _TS) if s not in _ORDER[intent]))
    options.sort(key=lambda o: (o.strategy in ctx.forbidden, preference.index(o.strategy), *_price_key(o)))
    return tuple(_alternative(ctx, option, chosen, preference, intent_reason, named=named) for option in options)


def _alternative(
    ctx: _Context,
    option: _Option,
    chosen: _Option,
    preference: tuple[Strategy, ...],
    intent_reason: str,
    *,
    named: bool,
) -> Alternative:
    tradeoffs = [
        _PERFORMANCE_TRADEOFF[option.strategy],
        _ISOLATION_TRADEOFF[option.strategy],
        _cost_tradeoff(ctx, option, chosen),
    ]
    if option.model is not chosen.model:
        tradeoffs.append(
            f"Runs on {option.model.name} ({option.model.family}, {option.model.memory_gb} GB) instead of "
            f"{chosen.model.name}."
        )
    reason = ctx.forbidden.get(option.strategy)
    if reason is None:
        tradeoffs.append(_why_not(option, chosen, preference, intent_reason, named=named))
    return Alternative(**_core_fields(ctx, option), tradeoffs=tuple(tradeoffs), permitted=reason is None, reason=reason)


def _cost_tradeoff(ctx: _Context, option: _Option, chosen: _Option) -> str:
    if option.monthly is None:
        return f"Cost: unknown, no price for {option.model.name}."
    text = f"Cost: {_money(option.monthly, ctx.currency)}/month"
    if chosen.monthly is None:
        return text + " (the recommendation's cost is unknown)."
    difference = to_cents(option.monthly) - to_cents(chosen.monthly)
    if difference > 0:
        return text + f", {_money(difference, ctx.currency)} more than the recommendation."
    if difference < 0:
        return text + f", {_money(-difference, ctx.currency)} less than the recommendation."
    return text + ", the same as the recommendation."


def _why_not(
    option: _Option, chosen: _Option, preference: tuple[Strategy, ...], intent_reason: str, *, named: bool
) -> str:
    if option.model is not chosen.model:
        if option.strategy is chosen.strategy:
            if named:
                return f"Not chosen: the request names {chosen.model.name}."
            return (
                f"Not chosen: {chosen.model.name} ranks first among the models that can serve "
                f"{_STRATEGY_WORDS[chosen.strategy]} (cheapest, then smaller GPU, then name)."
            )
        if named and preference.index(option.strategy) < preference.index(chosen.strategy):
            return f"Not chosen: it needs {option.model.name}, and the request names {chosen.model.name}."
    return f"Not chosen: {intent_reason}."


def _core_fields(ctx: _Context, option: _Option) -> dict[str, Any]:
    return {
        "strategy": option.strategy,
        "resource_name": option.resource_name,
        "quantity": option.quantity,
        "replicas": ctx.profile.replicas,
        "gpu_model": option.model.name,
        "mig_profile": option.mig.name if option.mig else None,
        "time_slice_replicas": option.time_slice_replicas,
        "node_selector": option.model.node_selector,
        "expected_overhead_pct": EXPECTED_OVERHEAD_PCT[option.strategy],
        "utilization_target_pct": UTILIZATION_TARGET_PCT[option.strategy],
        "isolation": ISOLATION[option.strategy],
        "estimated_monthly_cost": option.monthly,
        "currency": ctx.currency,
        "saving_vs_dedicated_pct": option.saving_pct,
    }


def _gb(value: Decimal | int) -> str:
    return f"{_plain(Decimal(value))} GB"


def _pct(value: Decimal) -> str:
    return f"{value.quantize(Decimal('0.1'), ROUND_HALF_UP)}%"


def _money(amount: Decimal, currency: str) -> str:
    return f"{to_cents(amount)} {currency}"


def _plain(value: Decimal) -> str:
    """A number for prose: at most two decimals, no trailing zeros, no exponent (13.33, 10, 5.01)."""
    rounded = value.quantize(Decimal("0.01"), ROUND_HALF_UP).normalize()
    return f"{rounded:f}"
