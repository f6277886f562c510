"""Memos of the decision framework: the floors of each policy, and the bands of memory within which a decision's
choice and alternatives cannot change (issue #15). Pure: no Django.

``recommend`` (``framework``) looks here before it walks. The floors never read the memory, so each combination of
what they do read is worked out once (``floors_for``). A decision without pools, or with their offers as data,
depends on the memory only through which limits it exceeds (``Limits``), so the option chosen and the alternatives
listed are remembered per band (``BANDS``) and a later decision in the same band assembles them without walking.

What is decided lives in ``rules``, ``choosing`` and ``alternatives``; this module holds only what is remembered,
under which key, and how each memo is bounded (the ``*_LIMIT`` constants).
"""

from __future__ import annotations

import itertools
from bisect import bisect_left
from dataclasses import dataclass
from decimal import Context, Decimal
from typing import Any

from gpucore.catalog import Catalog, GpuModelSpec
from gpucore.decision.choosing import Choice
from gpucore.decision.options import MIG, STRATEGIES, DecisionContext, Option, model_plan_in
from gpucore.decision.results import Alternative
from gpucore.decision.rules import Intent, apply_floors, model_plan
from gpucore.decision.steps import walk_steps
from gpucore.profile import WorkloadProfile
from gpucore.sla import SlaTierSpec
from gpucore.vocabulary import Strategy


def floors_for(
    profile: WorkloadProfile, tier: SlaTierSpec | None, intent: Intent, intent_reason: str, tier1_p99_ms: Decimal
) -> Floors:
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


Floors = tuple[SlaTierSpec | None, dict[Strategy, str], tuple[Strategy, ...], tuple[str, ...], int, int]
_FLOORS: dict[tuple[Any, ...], Floors] = {}
_PLAN_IDS: dict[tuple[Intent, tuple[Strategy, ...]], int] = {}
_FLOORS_LIMIT = 4_096
_IDS = itertools.count()  # never reused: a key holding an id of a cleared entry can only miss


@dataclass(frozen=True, slots=True)
class Band:
    """The chosen option (None: nothing fits) and the alternatives, with their JSON, of one band of memory."""

    chosen: Option | None
    alternatives: tuple[Alternative, ...] = ()
    alternatives_json: tuple[dict[str, Any], ...] = ()


NOTHING_FITS = Band(None)


class Limits:
    """The memory limits that decide a context's walks, sorted: which of them a memory exceeds is its band.

    A silent walk takes the first step whose limit holds the memory (``steps.first_fit``: memory x tenants <=
    limit), so choosing and listing alternatives depend on the memory only through which limits (limit / tenants)
    it exceeds: those of every model's plan (``plan_band``: which model and strategy is chosen, what each other model
    would give) and those of every strategy of the chosen model (``model_band``: its other strategies). Between two
    consecutive limits, every fit, hence the choice, its peers and the alternatives, are the same. The limits read
    GPUs per replica, time-sliced pools and defaults and node sizes (``limits_key``), never prices.

    With node-pool offers (``OfferSet``), a MIG option is the lightest offered partial profile that holds the memory
    (``sizing._mig_profile_for``), so the limits of a MIG plan also hold every partial profile's memory x GPUs per
    replica (``filtered``); which options are offered does not depend on the memory, and the offers are in the key
    of every band (``walk_id``).
    """

    __slots__ = ("catalog", "filtered", "models", "plans", "values")

    def __init__(self, catalog: Catalog, *, filtered: bool) -> None:
        self.catalog = catalog  # kept alive: its id() in the key stays unique
        self.filtered = filtered  # the limits of offered contexts (more of them), or of contexts without pools
        self.plans: dict[int, list[Decimal]] = {}  # plan id (``floors_for``) -> the limits of every model's plan
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

    def plan_band(self, ctx: DecisionContext, floors: Floors, intent: Intent, order: tuple[Strategy, ...]) -> int:
        plan = self.plans.get(floors[5])
        if plan is None:
            plans = [(m, model_plan_in(model_plan(intent, m), order)) for m in self.catalog]
            plan = self.plans[floors[5]] = self._interned(_sorted_limits(ctx, plans, filtered=self.filtered))
        return bisect_left(plan, ctx.profile.gpu_memory_gb)

    def model_band(self, ctx: DecisionContext, model: GpuModelSpec) -> int:
        own = self.models.get(model.name)
        if own is None:
            plans = [(model, (s,)) for s in STRATEGIES]
            own = self.models[model.name] = self._interned(_sorted_limits(ctx, plans, filtered=self.filtered))
        return bisect_left(own, ctx.profile.gpu_memory_gb)

    def _interned(self, limits: list[Decimal]) -> list[Decimal]:
        return [self.values.setdefault(limit, limit) for limit in limits]

    def bands(
        self, ctx: DecisionContext, floors: Floors, intent: Intent, order: tuple[Strategy, ...], model: GpuModelSpec
    ) -> tuple[int, int]:
        return self.plan_band(ctx, floors, intent, order), self.model_band(ctx, model)


def limits_here(ctx: DecisionContext) -> Limits:
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
        known = _LIMITS[key] = Limits(ctx.catalog, filtered=filtered)
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


def remember_band(key: tuple[Any, ...], band: Band | Choice) -> None:
    if len(BANDS) >= _BANDS_LIMIT:  # bounded: each new context, policy and band adds one
        BANDS.clear()
    BANDS[key] = band


_EXACT = Context(prec=60)
_LIMITS: dict[tuple[Any, ...], Limits] = {}
_LIMITS_LIMIT = 64
_WALK_IDS: dict[tuple[Any, ...], tuple[Catalog, int]] = {}
_WALKS_LIMIT = 1_024
# The bands this process worked out. Cleared with the alternatives' memo, so it never keeps more of them alive.
BANDS: dict[tuple[Any, ...], Band | Choice] = {}
_BANDS_LIMIT = 16_384
