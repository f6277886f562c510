"""A model's silent walk as a few comparisons of the memory, worked out once per context (issue #15). Pure: no Django.

Choosing a model and listing the others as alternatives walk every model of the catalog: the first strategy of its
plan that fits gives its option. Without a node-pool callback, the memory decides what fits only through limits: a
dedicated GPU holds up to its memory x GPUs per replica, a MIG profile up to its memory x GPUs per replica, a
time-sliced share with r tenants while memory x r <= the GPU's memory x GPUs per replica (``sizing``' rules, same
comparisons). So for everything else a walk reads (``DecisionContext.walk_key``: GPUs per replica, price, tier
defaults, pools, node sizes, layouts) the walk is a list of (limit, tenants, option) in the plan's order, the first
whose limit holds giving the option: built once, then each walk compares the memory with a handful of limits instead
of sizing each strategy.

With node-pool offers given as data (``OfferSet``) the walk is steps too (issue #15): a strategy whose option no pool
offers is skipped, and a MIG option is the lightest offered partial profile holding the memory, which for memory up
to each offered limit is the lightest of those at or above that limit (``_offered_mig_steps``); past the largest,
``size_option`` falls back to the smallest recommendable profile (never offered there), listed as an alternative
that no pool offers.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from gpucore.catalog import GpuModelSpec, MigProfile
from gpucore.decision.options import DEDICATED, MIG, DecisionContext, Option
from gpucore.decision.sizing import intern_option, time_slice_default
from gpucore.pricing import mig_weight
from gpucore.vocabulary import Strategy

# (memory limit, tenants per GPU or None, option): fits when memory (x tenants) <= limit.
Step = tuple[int, int | None, Option]


def walk_steps(
    ctx: DecisionContext, model: GpuModelSpec, plan: tuple[Strategy, ...], *, offered_only: bool = True
) -> tuple[Step, ...]:
    """The steps of a silent walk of ``model`` through ``plan`` here; only for a context without offers or with them as
    data (``OfferSet``). ``offered_only=False``: every option ``size_option`` gives, offered or not (alternatives)."""
    offered = ctx.offered
    offers = None if offered is None else offered.offers  # type: ignore[attr-defined]
    only = offered_only and offers is not None
    key = (ctx.walk_key, offers, id(model), plan, only)
    known = _STEPS.get(key)
    if known is None or known[0] is not model:
        if len(_STEPS) >= _STEPS_LIMIT:  # bounded: other prices, pools and tiers bring new contexts
            _STEPS.clear()
        # The entry keeps its model: id() stays unique.
        known = _STEPS[key] = (model, _steps(ctx, model, plan, offers, only=only))
    return known[1]


def first_fit(steps: tuple[Step, ...], memory: Decimal) -> Option | None:
    """The option of the first step whose limit holds ``memory``, else None (nothing in the plan fits)."""
    for limit, tenants, option in steps:
        if (memory if tenants is None else memory * tenants) <= limit:
            return option
    return None


_STEPS: dict[tuple[Any, ...], tuple[GpuModelSpec, tuple[Step, ...]]] = {}
_STEPS_LIMIT = 8_192


def _steps(
    ctx: DecisionContext,
    model: GpuModelSpec,
    plan: tuple[Strategy, ...],
    offers: frozenset[tuple[str, str, str | None]] | None,
    *,
    only: bool,
) -> tuple[Step, ...]:
    n = ctx.profile.gpu_count
    capacity = model.memory_gb * n
    steps: list[Step] = []
    for strategy in plan:
        if strategy is DEDICATED:
            node_gpus = ctx.lookup(ctx.gpus_per_node, model) if ctx.gpus_per_node else None
            if (node_gpus is None or n <= node_gpus) and (not only or (model.name, "dedicated", None) in offers):  # type: ignore[operator]
                steps.append((capacity, None, intern_option(ctx, model, strategy, None, None, None, None)))
        elif strategy is MIG:
            if offers is not None:
                steps.extend(_offered_mig_steps(ctx, model, offers))
            if not only:
                # The smallest recommendable partial profile holding the memory: the first, smallest first.
                for profile in model.recommendable_profiles():
                    steps.append((profile.memory_gb * n, None, _mig_option(ctx, model, profile)))
        elif not only or (model.name, "time-slicing", None) in offers:  # type: ignore[operator]
            for tenants, source in _time_slice_candidates(ctx, model):
                steps.append((capacity, tenants, intern_option(ctx, model, strategy, None, None, tenants, source)))
    return tuple(steps)


def _offered_mig_steps(
    ctx: DecisionContext, model: GpuModelSpec, offers: frozenset[tuple[str, str, str | None]]
) -> list[Step]:
    """``sizing._mig_profile_for`` with offers as steps: up to each offered partial profile's limit, the lightest
    offered one whose limit is at least that (the same order: weight, memory, compute slices, name)."""
    n = ctx.profile.gpu_count
    full = model.mig_compute_slices
    offered = [p for p in model.mig_profiles if p.compute_slices < full and (model.name, "mig", p.name) in offers]
    steps: list[Step] = []
    for limit in sorted({p.memory_gb * n for p in offered}):
        lightest = min(
            (p for p in offered if p.memory_gb * n >= limit),
            key=lambda p: (mig_weight(model, p), p.memory_gb, p.compute_slices, p.name),
        )
        steps.append((limit, None, _mig_option(ctx, model, lightest)))
    return steps


def _mig_option(ctx: DecisionContext, model: GpuModelSpec, profile: MigProfile) -> Option:
    layout = ctx.mig_layouts.get((model.name.casefold(), profile.name)) if ctx.mig_layouts else None
    return intern_option(ctx, model, MIG, profile, layout, None, None)


def _time_slice_candidates(ctx: DecisionContext, model: GpuModelSpec) -> list[tuple[int, str]]:
    """``sizing._time_slice_fit``'s candidates in its order, each with the source it would name."""
    pools = ctx.lookup(ctx.pools, model)
    if pools:
        return [(tenants, "the pool's setting") for tenants in pools]
    default, source = time_slice_default(ctx)
    return [
        (tenants, source if tenants == default else f"{source} of {default} lowered so that a share holds the replica")
        for tenants in range(default, 1, -1)
    ]
