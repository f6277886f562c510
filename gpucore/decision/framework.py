"""The decision framework: a workload profile in, a GPU allocation recommendation out. Pure: no Django.

It follows Part 4 of the allocation guide (``shared/domain/000_*.txt``): the decision tree (4.6) and the workload
characterization matrix (4.1) give the preferred strategy; the SLA tier (4.3), ``isolation_required``,
``latency_p99_ms`` and ``gpu_count`` are floors that rule strategies out; the catalog's MIG geometry and memory
decide what fits; the price book (or the catalog's list price) and ``gpucore.pricing`` put a cost on it. Every rule that
fires adds a sentence to ``rationale`` so a reviewer can follow the decision.

This module holds ``recommend`` and the flow of rules; ``rules`` has the tree and the floors, ``options``
sizes and prices each option (and how memory fits), ``steps`` turns a model's walk into memory limits, ``explain``
writes the sentences, ``results`` defines the answers and their JSON, ``inputs`` checks the arguments.

Options, alternatives and walk steps are worked out once per process for what decides them (issue #15), so a
decision mostly compares the memory with limits and assembles sentences already written;
``tests/gpucore/decision/test_golden.py`` checks the answers did not change.
"""

from __future__ import annotations

import itertools
from bisect import bisect_left
from collections.abc import Callable, Mapping, Set
from dataclasses import dataclass, replace
from decimal import Context, Decimal
from types import MappingProxyType
from typing import Any

from gpucore.catalog import Catalog, CatalogError, GpuModelSpec
from gpucore.decision.explain import (
    ISOLATION_TRADEOFF,
    PERFORMANCE_TRADEOFF,
    cost_line,
    cost_tradeoff,
    nobody_serves_line,
    not_mig_capable_line,
    sizing_line,
    too_big_for_any_line,
    too_big_for_line,
    utilization_line,
    why_not,
)
from gpucore.decision.inputs import (
    NodePools,
    OfferSet,
    normalize_layouts,
    normalize_node_sizes,
    normalize_pools,
    normalize_rates,
)
from gpucore.decision.options import (
    CATALOG_CURRENCY,
    DEDICATED,
    MIG,
    STRATEGY_WORDS,
    TIME_SLICING,
    DecisionContext,
    Option,
    core_json,
    core_values,
    format_money,
    model_plan_in,
    need_text,
    size_fresh,
    size_option,
)
from gpucore.decision.results import (
    EXPECTED_OVERHEAD_PCT,
    ISOLATION,
    UTILIZATION_TARGET_PCT,
    Alternative,
    Isolation,
    Recommendation,
)
from gpucore.decision.rules import (
    LATENCY_MEMORY_THRESHOLD_GB,
    STRATEGY_ORDER,
    Intent,
    apply_floors,
    check_replicas,
    classify_intent,
    model_plan,
    tier1_latency_ms,
)
from gpucore.decision.steps import first_fit, walk_steps
from gpucore.pricing import to_cents
from gpucore.profile import ProfileError, WorkloadProfile
from gpucore.sla import DEFAULT_TIERS_BY_SLUG, SlaTierSpec
from gpucore.vocabulary import Strategy, WorkloadType

__all__ = [
    "CATALOG_CURRENCY",
    "EXPECTED_OVERHEAD_PCT",
    "ISOLATION",
    "LATENCY_MEMORY_THRESHOLD_GB",
    "UTILIZATION_TARGET_PCT",
    "Alternative",
    "Isolation",
    "NodePools",
    "Recommendation",
    "recommend",
]


def recommend(
    profile: WorkloadProfile,
    catalog: Catalog,
    *,
    tiers: Mapping[str, SlaTierSpec] = DEFAULT_TIERS_BY_SLUG,
    rates: Mapping[str, Decimal] | None = None,
    time_slice_replicas: Mapping[str, int] | None = None,
    default_time_slice_replicas: int = 4,
    currency: str = "USD",
    offered: Callable[[str, str, str | None], bool] | Set[tuple[str, str, str | None]] | None = None,
    gpus_per_node: Mapping[str, int] | None = None,
    mig_layouts: Mapping[tuple[str, str], Mapping[str, int]] | None = None,
    pools: NodePools | None = None,
) -> Recommendation:
    """Recommend a GPU allocation for ``profile`` from ``catalog``; raises ``ProfileError`` for what cannot be served.

    ``rates`` maps model names to the hourly price of one whole GPU (the price book); a model without one falls back
    to the catalog's reference price (USD only), else its cost is unknown and it ranks after priced models.
    ``time_slice_replicas`` maps model names to their time-sliced pools' replicas (one number, or one per pool);
    otherwise the SLA tier's default applies, else ``default_time_slice_replicas``, lowered until a share holds the
    replica. ``gpus_per_node`` maps model names to the most GPUs one node of a dedicated pool has: a replica needing
    more is refused on ``gpu_count`` (its GPUs must share a node). ``mig_layouts`` maps (model, MIG profile) to the
    per-GPU layout of the pool serving it, so a slice's GPU share is the one chargeback bills on that pool.
    ``offered`` says which (model, strategy, MIG profile) options some node pool serves: a callback, or the set of
    them. Given as a set (data, not code), the answers are remembered per band of memory as without pools; a callback
    is asked afresh every time. ``pools`` gives the last four at once, normalised already (``NodePools``), in place
    of them. The cost is monthly, and for ``duration_hours``.
    """
    model, tier = _resolve(profile, catalog, tiers)
    if default_time_slice_replicas < 2:
        raise ValueError("default_time_slice_replicas must be at least 2 (the device plugin's minimum).")
    check_replicas(profile, tier)
    if pools is not None:
        if offered is not None or time_slice_replicas or gpus_per_node or mig_layouts:
            raise ValueError("Give the node pools either as pools= or as their four mappings, not both.")
        offered = pools.offered
        node_sizes = pools.gpus_per_node
    else:
        if offered is not None and not callable(offered):
            offered = OfferSet(offered if offered.__class__ is frozenset else frozenset(offered))  # type: ignore[arg-type]
        node_sizes = normalize_node_sizes(gpus_per_node) if gpus_per_node else _NONE
    _check_node_size(profile, model, node_sizes)
    rationale: list[str] = []
    intent, intent_reason = classify_intent(profile, rationale)
    floors = _floors(profile, tier, intent, intent_reason, tier1_latency_ms(tiers.values()))
    forbidden, order = floors[1], floors[2]
    rationale.extend(floors[3])
    ctx = DecisionContext(
        profile=profile,
        catalog=catalog,
        tier=tier,
        multiplier=tier.price_multiplier if tier else Decimal(1),
        currency=currency,
        rates=normalize_rates(rates) if rates else _NONE,
        pools=(
            pools.time_slice_replicas
            if pools is not None
            else normalize_pools(time_slice_replicas)
            if time_slice_replicas
            else _NONE
        ),
        default_time_slice_replicas=default_time_slice_replicas,
        forbidden=forbidden,
        offered=offered,
        gpus_per_node=node_sizes,
        mig_layouts=(
            pools.mig_layouts if pools is not None else normalize_layouts(mig_layouts) if mig_layouts else _NONE
        ),
        node_pools=pools,
    )
    # Without pools or with their offers as data, what is chosen and listed depends on the memory only through the
    # bands it falls in; a callback's answers could change between calls, so with one nothing is remembered.
    limits = _limits_here(ctx) if offered is None or offered.__class__ is OfferSet else None
    key: tuple[Any, ...] | None = None
    band: _Band | None = None

    if model is not None:
        rationale.append(f"GPU model {model.name} ({model.family}, {model.memory_gb} GB), as requested.")
        if limits is not None:
            key = (limits.walk_id(ctx), floors[4], model.name, *limits.bands(ctx, floors, intent, order, model))
            band = _BANDS.get(key)
        # Falling back to a later strategy says why each earlier one did not fit, in words of this memory: walk.
        if band is not None and (band.chosen is None or band.chosen.strategy is order[0]):
            chosen = band.chosen
        else:
            chosen = _walk(ctx, model, intent, order, rationale)
            if band is not None and chosen is not band.chosen:  # never expected: the bands' limits are exact
                band = None
        if chosen is None:
            if offered is not None and _walk(replace(ctx, offered=None), model, intent, order, None) is not None:
                raise ProfileError({"cluster": [_no_pool_serves(ctx, model)]})
            if key is not None and band is None:
                _remember_band(key, _NOTHING_FITS)
            raise ProfileError({"gpu_memory_gb": [too_big_for_line(ctx, model)]})
    else:
        if limits is not None:
            choice_key = (limits.walk_id(ctx), floors[4], limits.plan_band(ctx, floors, intent, order))
            choice = _BANDS.get(choice_key)
            if choice is None:
                choice = _choose_model(ctx, intent, order)
                _remember_band(choice_key, choice)
        else:
            choice = _choose_model(ctx, intent, order)
        chosen = choice.chosen
        if chosen is None:
            unfiltered = replace(ctx, offered=None)
            if ctx.offered is not None and any(_walk(unfiltered, m, intent, order, None) for m in ctx.catalog):
                raise ProfileError({"cluster": [_no_pool_serves(ctx, None)]})
            raise ProfileError({"gpu_memory_gb": [too_big_for_any_line(ctx)]})
        for strategy in choice.skipped:
            rationale.append(nobody_serves_line(ctx, intent, strategy))
        rationale.append(choice.line)
        if limits is not None:
            key = (*choice_key, limits.model_band(ctx, chosen.model))
            band = _BANDS.get(key)

    rationale.append(sizing_line(ctx, chosen))
    rationale.append(cost_line(ctx, chosen))
    utilization = utilization_line(profile, chosen.strategy)
    if utilization:
        rationale.append(utilization)

    if band is not None:
        alternatives, alternatives_json = band.alternatives, band.alternatives_json
    else:
        alternatives = _alternatives(ctx, intent, intent_reason, order, chosen, named=model is not None)
        alternatives_json = tuple(alternative.stored_json() for alternative in alternatives)
        if key is not None:
            _remember_band(key, _Band(chosen, alternatives, alternatives_json))
    return Recommendation(
        *core_values(ctx, chosen),
        tuple(rationale),
        alternatives,
        profile.workload_type is WorkloadType.HPC_SIMULATION,
        core_json(ctx, chosen),
        alternatives_json,
    )


_NONE: Mapping[Any, Any] = MappingProxyType({})  # an input not given: read-only, so one serves every decision


# --- policy and memory bands -----------------------------------------------------------------------------------


def _floors(
    profile: WorkloadProfile, tier: SlaTierSpec | None, intent: Intent, intent_reason: str, tier1_p99_ms: Decimal
) -> _Floors:
    """``apply_floors``' answer (the tier, what is forbidden, the order, the rationale's lines), an id for it and one
    for its (intent, order).

    The floors read the intent (one per ``intent_reason``), GPUs per replica, isolation, the latency target and the
    tier, never the memory: a few hundred combinations, each worked out once (shared: callers never change them).
    """
    key = (intent_reason, profile.gpu_count, profile.isolation_required, profile.latency_p99_ms, id(tier), tier1_p99_ms)
    known = _FLOORS.get(key)
    if known is None or known[0] is not tier:
        if len(_FLOORS) >= _FLOORS_LIMIT:  # bounded: tiers read again from the database are new objects
            _FLOORS.clear()
        lines: list[str] = []
        forbidden, order = apply_floors(profile, tier, intent, lines, tier1_p99_ms=tier1_p99_ms)
        # The entry keeps its tier alive, so its id() cannot be reused by another while it is here.
        # One id per (intent, order), a few dozen at most; setdefault is atomic, so two threads never share one.
        plan_id = _PLAN_IDS.setdefault((intent, order), next(_IDS))
        known = _FLOORS[key] = (tier, forbidden, order, tuple(lines), next(_IDS), plan_id)
    return known


_Floors = tuple[SlaTierSpec | None, dict[Strategy, str], tuple[Strategy, ...], tuple[str, ...], int, int]
_FLOORS: dict[tuple[Any, ...], _Floors] = {}
_PLAN_IDS: dict[tuple[Intent, tuple[Strategy, ...]], int] = {}
_FLOORS_LIMIT = 4_096
_IDS = itertools.count()  # never reused: a key holding an id of a cleared entry can only miss


@dataclass(frozen=True, slots=True)
class _Choice:
    """With no model named: the chosen option (None: nothing fits), the strategies ranked before it that no model
    serves, and the sentence naming the model."""

    chosen: Option | None
    skipped: tuple[Strategy, ...] = ()
    line: str = ""


@dataclass(frozen=True, slots=True)
class _Band:
    """The chosen option (None: nothing fits) and the alternatives, with their JSON, of one band of memory."""

    chosen: Option | None
    alternatives: tuple[Alternative, ...] = ()
    alternatives_json: tuple[dict[str, Any], ...] = ()


_NOTHING_FITS = _Band(None)


class _Limits:
    """The memory limits that decide a context's walks, sorted: which of them a memory exceeds is its band.

    A silent walk takes the first step whose limit holds the memory (``steps.first_fit``: memory x tenants <=
    limit), so choosing and listing alternatives depend on the memory only through which limits (limit / tenants)
    it exceeds: those of every model's plan (``plan_band``: which model and strategy is chosen, what each other model
    would give) and those of every strategy of the chosen model (``model_band``: its other strategies). Between two
    consecutive limits, every fit, hence the choice, its peers and the alternatives, are the same. The limits read
    GPUs per replica, time-sliced pools and defaults and node sizes (``limits_key``), never prices.

    With node-pool offers (``OfferSet``), a MIG option is the lightest offered partial profile that holds the memory
    (``options._mig_profile_for``), so the limits of a MIG plan also hold every partial profile's memory x GPUs per
    replica (``filtered``); which options are offered does not depend on the memory, and the offers are in the key
    of every band (``walk_id``).
    """

    __slots__ = ("catalog", "filtered", "models", "plans", "values")

    def __init__(self, catalog: Catalog, *, filtered: bool) -> None:
        self.catalog = catalog  # kept alive: its id() in the key stays unique
        self.filtered = filtered  # the limits of offered contexts (more of them), or of contexts without pools
        self.plans: dict[int, list[Decimal]] = {}  # plan id (``_floors``) -> the limits of every model's plan
        self.models: dict[str, list[Decimal]] = {}  # model name -> the limits of its every strategy
        self.values: dict[Decimal, Decimal] = {}  # one object per limit, whichever lists hold it

    def walk_id(self, ctx: DecisionContext) -> int:
        """An id of ``ctx.walk_key`` (the prices too) with this catalog and the offers: what options the bands hold.

        The offers are in the key by value: other pools are another key at once, and equal offers give equal answers.
        """
        offered = ctx.offered
        key = (ctx.walk_key, id(self.catalog), None if offered is None else offered.offers)  # type: ignore[union-attr]
        known = _WALK_IDS.get(key)
        if known is None or known[0] is not self.catalog:
            if len(_WALK_IDS) >= _WALKS_LIMIT:  # bounded: other prices, pools and tiers bring new contexts
                _WALK_IDS.clear()
            known = _WALK_IDS[key] = (self.catalog, next(_IDS))
        return known[1]

    def plan_band(self, ctx: DecisionContext, floors: _Floors, intent: Intent, order: tuple[Strategy, ...]) -> int:
        plan = self.plans.get(floors[5])
        if plan is None:
            plans = [(m, model_plan_in(model_plan(intent, m), order)) for m in self.catalog]
            plan = self.plans[floors[5]] = self._interned(_sorted_limits(ctx, plans, filtered=self.filtered))
        return bisect_left(plan, ctx.profile.gpu_memory_gb)

    def model_band(self, ctx: DecisionContext, model: GpuModelSpec) -> int:
        own = self.models.get(model.name)
        if own is None:
            plans = [(model, (s,)) for s in _STRATEGIES]
            own = self.models[model.name] = self._interned(_sorted_limits(ctx, plans, filtered=self.filtered))
        return bisect_left(own, ctx.profile.gpu_memory_gb)

    def _interned(self, limits: list[Decimal]) -> list[Decimal]:
        return [self.values.setdefault(limit, limit) for limit in limits]

    def bands(
        self, ctx: DecisionContext, floors: _Floors, intent: Intent, order: tuple[Strategy, ...], model: GpuModelSpec
    ) -> tuple[int, int]:
        return self.plan_band(ctx, floors, intent, order), self.model_band(ctx, model)


def _limits_here(ctx: DecisionContext) -> _Limits:
    tier = ctx.tier
    default = ctx.default_time_slice_replicas
    if tier is not None and tier.default_time_slice_replicas is not None:
        default = tier.default_time_slice_replicas
    filtered = ctx.offered is not None
    key = (ctx.profile.gpu_count, default, ctx.pools_key(with_layouts=False), id(ctx.catalog), filtered)
    known = _LIMITS.get(key)
    if known is None or known.catalog is not ctx.catalog:
        if len(_LIMITS) >= _LIMITS_LIMIT:
            _LIMITS.clear()
        known = _LIMITS[key] = _Limits(ctx.catalog, filtered=filtered)
    return known


def _sorted_limits(
    ctx: DecisionContext, plans: list[tuple[GpuModelSpec, tuple[Strategy, ...]]], *, filtered: bool
) -> list[Decimal]:
    limits = set()
    n = ctx.profile.gpu_count
    for model, plan in plans:
        # Every option's limits, offered or not (the alternatives list both).
        for limit, tenants, _ in walk_steps(ctx, model, plan, offered_only=False):
            # Exact for every memory a profile can hold (at most 6 decimal places): a quotient that does not
            # terminate is more than 1e-30 away from any such number, far above this context's rounding.
            limits.add(Decimal(limit) if tenants is None else _EXACT.divide(Decimal(limit), Decimal(tenants)))
        if filtered:
            # Offered MIG profiles need not be recommendable; a dedicated GPU's limit stays, node size or not.
            limits.add(Decimal(model.memory_gb * n))
            if MIG in plan:
                full = model.mig_compute_slices
                limits.update(Decimal(p.memory_gb * n) for p in model.mig_profiles if p.compute_slices < full)
    return sorted(limits)


def _remember_band(key: tuple[Any, ...], band: _Band | _Choice) -> None:
    if len(_BANDS) >= _BANDS_LIMIT:  # bounded: each new context, policy and band adds one
        _BANDS.clear()
    _BANDS[key] = band


_EXACT = Context(prec=60)
_LIMITS: dict[tuple[Any, ...], _Limits] = {}
_LIMITS_LIMIT = 64
_WALK_IDS: dict[tuple[Any, ...], tuple[Catalog, int]] = {}
_WALKS_LIMIT = 1_024
# The bands this process worked out. Cleared with the alternatives' memo, so it never keeps more of them alive.
_BANDS: dict[tuple[Any, ...], _Band | _Choice] = {}
_BANDS_LIMIT = 16_384


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


def _check_node_size(profile: WorkloadProfile, model: GpuModelSpec | None, node_sizes: Mapping[str, int]) -> None:
    """A replica's GPUs share a node: more GPUs than the largest node that could serve it is a ``gpu_count`` error."""
    if profile.gpu_count == 1 or not node_sizes:
        return
    if model is not None:
        keys = [k.casefold() for k in (model.name, *model.aliases) if k.casefold() in node_sizes]
        sizes = [node_sizes[k] for k in keys]
        where = f"a {model.name} node here"
    else:
        sizes = list(node_sizes.values())
        where = "any node here that serves dedicated GPUs"
    if not sizes:
        return  # no dedicated pool of that model: the "no node pool offers" refusal says it better
    largest = max(sizes)
    if profile.gpu_count > largest:
        raise ProfileError(
            {
                "gpu_count": [
                    f"{profile.gpu_count} GPUs per replica, but {where} has at most {largest} GPUs, and a replica's "
                    f"GPUs must share a node. Ask for at most {largest} GPUs per replica, and run multi-node work as "
                    f"several replicas (for example {-(-profile.gpu_count // largest)} replicas of {largest} GPUs)."
                ]
            }
        )


# --- choosing --------------------------------------------------------------------------------------------------


def _walk(
    ctx: DecisionContext, model: GpuModelSpec, intent: Intent, order: tuple[Strategy, ...], rationale: list[str] | None
) -> Option | None:
    """The first strategy of the model's plan that policy allows and that fits, noting each fallback."""
    if rationale is None:  # a silent walk is asked again for the alternatives: once per context
        known = ctx.walked.get(model.name)
        if known is not None and known[0] is intent and known[1] is order:
            return known[2]
        option = _silent_walk(ctx, model, model_plan_in(model_plan(intent, model), order))
        ctx.walked[model.name] = (intent, order, option)
        return option
    return _walk_model(ctx, model, intent, order, rationale)


def _silent_walk(ctx: DecisionContext, model: GpuModelSpec, plan: tuple[Strategy, ...]) -> Option | None:
    """``_walk_model`` with nothing to say: the plan's strategies keep ``order``'s order, so it is the loop."""
    offered = ctx.offered
    if offered is None or offered.__class__ is OfferSet:  # the walk is a few limits to compare the memory with (steps)
        return first_fit(walk_steps(ctx, model, plan), ctx.profile.gpu_memory_gb)
    sized = ctx.sized
    for strategy in plan:
        key = (model.name, strategy)
        option = sized.get(key)
        if option is None:
            option = sized[key] = size_fresh(ctx, model, strategy)
        if option.__class__ is Option and (ctx.offered is None or ctx.is_offered(option)):
            return option
    return None


def _walk_model(
    ctx: DecisionContext, model: GpuModelSpec, intent: Intent, order: tuple[Strategy, ...], rationale: list[str] | None
) -> Option | None:
    plan = model_plan_in(model_plan(intent, model), order)
    tried: list[Strategy] = []
    for strategy in order:
        if strategy not in plan:
            says_next = DEDICATED in plan and rationale is not None
            if strategy is MIG and not model.mig_capable and says_next:
                rationale.append(not_mig_capable_line(ctx, model, tried_time_slicing=TIME_SLICING in tried))
            continue
        tried.append(strategy)
        option = size_option(ctx, model, strategy)
        if isinstance(option, Option):
            if ctx.is_offered(option):
                return option
            option = (
                f"No node pool offers {option.resource_name} on {model.name} ({STRATEGY_WORDS[strategy]}); "
                "trying the next option."
            )
        if rationale is not None:
            rationale.append(str(option))
    return None


def _choose_model(ctx: DecisionContext, intent: Intent, order: tuple[Strategy, ...]) -> _Choice:
    """With no model named: the best-ranked strategy any model can serve, on the cheapest model serving it."""
    outcomes = [o for o in (_walk(ctx, m, intent, order, None) for m in ctx.catalog) if o is not None]
    if not outcomes:
        return _Choice(None)
    best = min(outcomes, key=lambda o: (order.index(o.strategy), *_price_key(o)))
    peers = sum(1 for o in outcomes if o.strategy is best.strategy)
    price = f"{format_money(best.monthly, ctx.currency)}/month" if best.monthly is not None else "price unknown"
    line = (
        f"No GPU model named: {best.model.name} is the cheapest of {peers} model(s) that can serve "
        f"{STRATEGY_WORDS[best.strategy]} for this profile ({price}); models without a known price rank last, "
        "ties go to the smaller GPU."
    )
    return _Choice(best, order[: order.index(best.strategy)], line)


def _price_key(option: Option) -> tuple[bool, Decimal, int, str]:
    return (
        option.monthly is None,
        option.monthly if option.monthly is not None else Decimal(0),
        option.model.memory_gb,
        option.model.name,
    )


def _alternatives(
    ctx: DecisionContext,
    intent: Intent,
    intent_reason: str,
    order: tuple[Strategy, ...],
    chosen: Option,
    *,
    named: bool,
) -> tuple[Alternative, ...]:
    """Every other strategy that fits the chosen model (permitted or not), and what each other model would give."""
    options: list[Option] = []
    for strategy in _STRATEGIES:
        if strategy is not chosen.strategy:
            if ctx.offered is None or ctx.offered.__class__ is OfferSet:  # as in _silent_walk: steps
                steps = walk_steps(ctx, chosen.model, (strategy,), offered_only=False)
                option = first_fit(steps, ctx.profile.gpu_memory_gb)
            else:
                option = size_option(ctx, chosen.model, strategy)
            if isinstance(option, Option):
                options.append(option)
    for model in ctx.catalog:
        if model is not chosen.model:
            option = _walk(ctx, model, intent, order, None)
            if option is not None:
                options.append(option)
    preference = _PREFERENCE[intent]
    options.sort(
        key=lambda o: (
            o.strategy in ctx.forbidden or not ctx.is_offered(o),
            preference.index(o.strategy),
            o.monthly is None,
            o.monthly if o.monthly is not None else _ZERO,
            o.model.memory_gb,
            o.model.name,
        )
    )
    # What an alternative reads of the chosen option: its model and strategy, and its cost to the cent.
    versus = (chosen.model.name, chosen.strategy, None if chosen.monthly is None else to_cents(chosen.monthly))
    return tuple(
        _alternative(ctx, option, chosen, versus, preference, intent_reason, named=named) for option in options
    )


_ZERO = Decimal(0)
_STRATEGIES = tuple(Strategy)  # iterating the enum class itself is slow on Python 3.11
# The order alternatives are listed in: the intent's strategies, then the others.
_PREFERENCE: dict[Intent, tuple[Strategy, ...]] = {
    intent: (*order, *(s for s in (DEDICATED, MIG, TIME_SLICING) if s not in order))
    for intent, order in STRATEGY_ORDER.items()
}


def _alternative(
    ctx: DecisionContext,
    option: Option,
    chosen: Option,
    versus: tuple[str, Strategy, Decimal | None],
    preference: tuple[Strategy, ...],
    intent_reason: str,
    *,
    named: bool,
) -> Alternative:
    """One alternative, worked out once per process for what it is made of.

    An option is one object per sizing and price (``size_option``: its key holds the replicas, duration, SLA
    multiplier and currency), so the option, what it is compared with (``versus``: the chosen option's model,
    strategy and cost to the cent; models are unique by name in a catalog), why the intent prefers what it does
    (which also decides ``preference``), whether a model was named, and what policy and the pools say of the option
    decide the alternative: profiles that differ elsewhere (memory within the same fits, say) share it, and its JSON.
    """
    forbidden = ctx.forbidden.get(option.strategy)
    offered = ctx.is_offered(option)
    key = (option, versus, intent_reason, named, forbidden, offered)
    alternative = _ALTERNATIVES.get(key)
    if alternative is None:
        if len(_ALTERNATIVES) >= _ALTERNATIVES_LIMIT:  # bounded: new price books and pools bring new keys
            _ALTERNATIVES.clear()
            _BANDS.clear()  # a band holds alternatives: it must not keep those this memo lets go
        alternative = _ALTERNATIVES[key] = _explain_alternative(
            ctx, option, chosen, preference, intent_reason, forbidden, offered, named=named
        )
    return alternative


# The alternatives this process worked out, by the key above (the key holds its options: their ids stay unique).
_ALTERNATIVES: dict[tuple[object, ...], Alternative] = {}
_ALTERNATIVES_LIMIT = 32_768


def _explain_alternative(
    ctx: DecisionContext,
    option: Option,
    chosen: Option,
    preference: tuple[Strategy, ...],
    intent_reason: str,
    forbidden: str | None,
    offered: bool,
    *,
    named: bool,
) -> Alternative:
    tradeoffs = [
        PERFORMANCE_TRADEOFF[option.strategy],
        ISOLATION_TRADEOFF[option.strategy],
        cost_tradeoff(ctx, option, chosen),
    ]
    if option.model is not chosen.model:
        tradeoffs.append(
            f"Runs on {option.model.name} ({option.model.family}, {option.model.memory_gb} GB) instead of "
            f"{chosen.model.name}."
        )
    reason = forbidden
    if reason is None and not offered:
        reason = f"No node pool here offers {option.resource_name} on {option.model.name}."
    if reason is None:
        tradeoffs.append(why_not(option, chosen, preference, intent_reason, named=named))
    return Alternative(*core_values(ctx, option), tuple(tradeoffs), reason is None, reason)


def _no_pool_serves(ctx: DecisionContext, model: GpuModelSpec | None) -> str:
    on = f" on {model.name}" if model is not None else ""
    return (
        f"No node pool here offers an allocation{on} that fits this profile ({need_text(ctx.profile)}) and its policy. "
        "Ask a platform admin for a pool with a fitting GPU model and sharing mode, or pick another cluster."
    )
