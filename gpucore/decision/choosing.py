"""Choosing an option: walking one model's plan to the first strategy that policy allows, fits and some pool offers
(``walk``), and, with no model named, the model to walk (``choose_model``). Pure: no Django.

The rationale's fallback sentences are written here as the walk goes; a silent walk (no rationale) is asked again
for every model when listing alternatives, so it is remembered per decision (``DecisionContext.walked``) and, without
pools or with their offers as data, is a comparison of the memory with limits worked out once (``steps``).
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal

from gpucore.catalog import GpuModelSpec
from gpucore.decision.explain import not_mig_capable_line
from gpucore.decision.inputs import OfferSet
from gpucore.decision.options import (
    DEDICATED,
    MIG,
    STRATEGY_WORDS,
    TIME_SLICING,
    DecisionContext,
    Option,
    model_plan_in,
)
from gpucore.decision.prose import format_money
from gpucore.decision.rules import Intent, model_plan
from gpucore.decision.sizing import size_fresh, size_option
from gpucore.decision.steps import first_fit, walk_steps
from gpucore.vocabulary import Strategy


@dataclass(frozen=True, slots=True)
class Choice:
    """With no model named: the chosen option (None: nothing fits), the strategies ranked before it that no model
    serves, and the sentence naming the model."""

    chosen: Option | None
    skipped: tuple[Strategy, ...] = ()
    line: str = ""


def walk(
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


def choose_model(ctx: DecisionContext, intent: Intent, order: tuple[Strategy, ...]) -> Choice:
    """With no model named: the best-ranked strategy any model can serve, on the cheapest model serving it."""
    outcomes = [o for o in (walk(ctx, m, intent, order, None) for m in ctx.catalog) if o is not None]
    if not outcomes:
        return Choice(None)
    best = min(outcomes, key=lambda o: (order.index(o.strategy), *_price_key(o)))
    peers = sum(1 for o in outcomes if o.strategy is best.strategy)
    price = f"{format_money(best.monthly, ctx.currency)}/month" if best.monthly is not None else "price unknown"
    line = (
        f"No GPU model named: {best.model.name} is the cheapest of {peers} model(s) that can serve "
        f"{STRATEGY_WORDS[best.strategy]} for this profile ({price}); models without a known price rank last, "
        "ties go to the smaller GPU."
    )
    return Choice(best, order[: order.index(best.strategy)], line)


def _price_key(option: Option) -> tuple[bool, Decimal, int, str]:
    return (
        option.monthly is None,
        option.monthly if option.monthly is not None else Decimal(0),
        option.model.memory_gb,
        option.model.name,
    )
