"""The alternatives a recommendation lists: every other strategy that fits the chosen model (permitted or not) and
what each other model would give, in the intent's order, each with its tradeoffs and, where it is not open to the
profile, why. Pure: no Django.

An alternative is worked out once per process for what it is made of (``_alternative``), so profiles that differ
in nothing it reads (memory within the same fits, say) share it and its JSON; this memo is cleared together with the
bands (``bands``), which hold alternatives too.
"""

from __future__ import annotations

from decimal import Decimal

from gpucore.decision.choosing import walk
from gpucore.decision.explain import ISOLATION_TRADEOFF, PERFORMANCE_TRADEOFF, cost_tradeoff, why_not
from gpucore.decision.inputs import OfferSet
from gpucore.decision.options import (
    DEDICATED,
    MIG,
    STRATEGIES,
    TIME_SLICING,
    DecisionContext,
    Option,
    core_values,
)
from gpucore.decision.results import Alternative
from gpucore.decision.rules import STRATEGY_ORDER, Intent
from gpucore.decision.sizing import size_option
from gpucore.decision.steps import first_fit, walk_steps
from gpucore.pricing import to_cents
from gpucore.vocabulary import Strategy


def list_alternatives(
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
    for strategy in STRATEGIES:
        if strategy is not chosen.strategy:
            if ctx.offered is None or ctx.offered.__class__ is OfferSet:  # as in choosing._silent_walk: steps
                steps = walk_steps(ctx, chosen.model, (strategy,), offered_only=False)
                option = first_fit(steps, ctx.profile.gpu_memory_gb)
            else:
                option = size_option(ctx, chosen.model, strategy)
            if isinstance(option, Option):
                options.append(option)
    for model in ctx.catalog:
        if model is not chosen.model:
            option = walk(ctx, model, intent, order, None)
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
