"""Choosing an option: walking one model's plan to the first strategy that policy allows, fits and some pool offers
(``walk``), and, with no model named, the model to walk (``choose_model``). Pure: no Django.

The rationale's fallback sentences are written here as the walk goes. Every model's silent walk (no rationale) is
worked out once per decision (``fitting_options``): choosing the model and listing the alternatives both read it.
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal

from gpucore.catalog import GpuModelSpec
from gpucore.decision.explain import not_mig_capable_line
from gpucore.decision.options import DEDICATED, MIG, STRATEGY_WORDS, TIME_SLICING, DecisionContext, Option
from gpucore.decision.prose import format_money
from gpucore.decision.rules import Intent, model_plan
from gpucore.decision.sizing import size_option
from gpucore.vocabulary import Strategy


@dataclass(frozen=True, slots=True)
class Choice:
    """With no model named: the chosen option (None: nothing fits), the strategies ranked before it that no model
    serves, and the sentence naming the model."""

    chosen: Option | None
    skipped: tuple[Strategy, ...] = ()
    line: str = ""


def walk(
    ctx: DecisionContext,
    model: GpuModelSpec,
    intent: Intent,
    order: tuple[Strategy, ...],
    rationale: list[str] | None = None,
) -> Option | None:
    """The first strategy of the model's plan that policy allows and that fits, noting each fallback in
    ``rationale`` (None: a silent walk)."""
    plan = tuple(s for s in model_plan(intent, model) if s in order)
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


def fitting_options(ctx: DecisionContext, intent: Intent, order: tuple[Strategy, ...]) -> list[Option]:
    """What a silent walk of each model of the catalog gives, in the catalog's order, for the models where one fits."""
    walked = (walk(ctx, model, intent, order) for model in ctx.catalog)
    return [option for option in walked if option is not None]


def choose_model(ctx: DecisionContext, order: tuple[Strategy, ...], outcomes: list[Option]) -> Choice:
    """With no model named: the best-ranked strategy any model can serve (``outcomes``: ``fitting_options``), on the
    cheapest model serving it."""
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
