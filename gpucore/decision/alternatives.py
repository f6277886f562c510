"""The alternatives a recommendation lists: every other (model, strategy) that fits the profile, permitted or not by
the one rule the what-if uses too (``permission.why_not_permitted``), in the intent's order, each with its tradeoffs
and, where it is not open to the profile, why. Pure: no Django.
"""

from __future__ import annotations

from decimal import Decimal

from gpucore.decision.choosing import cost_per_work
from gpucore.decision.explain import ISOLATION_TRADEOFF, PERFORMANCE_TRADEOFF, cost_tradeoff, why_not
from gpucore.decision.options import (
    DEDICATED,
    MIG,
    STRATEGIES,
    TIME_SLICING,
    DecisionContext,
    Option,
    core_values,
)
from gpucore.decision.permission import why_not_permitted
from gpucore.decision.prose import format_money
from gpucore.decision.results import Alternative
from gpucore.decision.rules import STRATEGY_ORDER, Intent
from gpucore.decision.sizing import size_option
from gpucore.decision.throughput import PER_WORK_WORKLOADS, precision_words
from gpucore.vocabulary import Strategy


def list_alternatives(
    ctx: DecisionContext,
    intent: Intent,
    intent_reason: str,
    chosen: Option,
    *,
    named: bool,
) -> tuple[Alternative, ...]:
    """Every other (model, strategy) that fits the profile, permitted or not, in the intent's order."""
    # Every strategy that fits every model, not only each model's first choice: an option the what-if shows as
    # permitted is listed here as permitted too (the same rule, ``why_not_permitted``).
    options = [
        option
        for model in ctx.catalog
        for strategy in STRATEGIES
        if not (model is chosen.model and strategy is chosen.strategy)
        and isinstance(option := size_option(ctx, model, strategy), Option)
    ]
    preference = _PREFERENCE[intent]
    options.sort(
        key=lambda o: (
            why_not_permitted(ctx, o) is not None,
            preference.index(o.strategy),
            o.monthly is None,
            o.monthly if o.monthly is not None else _ZERO,
            o.model.memory_gb,
            o.model.name,
        )
    )
    return tuple(_alternative(ctx, option, chosen, preference, intent_reason, named=named) for option in options)


_ZERO = Decimal(0)
# The order alternatives are listed in: the intent's strategies, then the others.
_PREFERENCE: dict[Intent, tuple[Strategy, ...]] = {
    intent: (*order, *(s for s in (DEDICATED, MIG, TIME_SLICING) if s not in order))
    for intent, order in STRATEGY_ORDER.items()
}


def _alternative(
    ctx: DecisionContext,
    option: Option,
    chosen: Option,
    preference: tuple[Strategy, ...],
    intent_reason: str,
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
    work = _work_tradeoff(ctx, option, chosen)
    if work:
        tradeoffs.append(work)
    reason = why_not_permitted(ctx, option)
    if reason is None:
        by_work = ctx.profile.workload_type in PER_WORK_WORKLOADS
        tradeoffs.append(why_not(option, chosen, preference, intent_reason, named=named, by_work=by_work))
    return Alternative(*core_values(ctx, option), tuple(tradeoffs), reason is None, reason)


def _work_tradeoff(ctx: DecisionContext, option: Option, chosen: Option) -> str:
    """Training and HPC on another model: what its GPU-hours cost per unit of work against the chosen one's."""
    kind = ctx.profile.workload_type
    if kind not in PER_WORK_WORKLOADS or option.model is chosen.model:
        return ""
    mine = cost_per_work(option, kind, ctx.profile.replicas)
    theirs = cost_per_work(chosen, kind, ctx.profile.replicas)
    if mine is None or theirs is None or not theirs:
        return ""
    ratio = (mine / theirs).quantize(Decimal("0.01"))
    return (
        f"Per unit of work ({precision_words(kind)} throughput): {format_money(mine * 1000, ctx.currency)} per "
        f"PFLOPS-hour, {ratio:f} x the chosen {chosen.model.name}'s."
    )
