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
from gpucore.decision.throughput import PER_WORK_WORKLOADS, precision_words, work_tflops
from gpucore.vocabulary import Strategy, WorkloadType


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
    kind = ctx.profile.workload_type
    if kind in PER_WORK_WORKLOADS:
        return _choose_by_work(ctx, order, outcomes, kind)
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


def cost_per_work(option: Option, workload_type: WorkloadType, replicas: int) -> Decimal | None:
    """The option's hourly price per TFLOPS of work its GPUs do (None: price or throughput unknown)."""
    tflops = work_tflops(option.model, workload_type)
    if option.hourly is None or not tflops:
        return None
    return option.hourly / (tflops * option.quantity * replicas)


def _choose_by_work(
    ctx: DecisionContext, order: tuple[Strategy, ...], outcomes: list[Option], kind: WorkloadType
) -> Choice:
    """Training and HPC: the model whose GPU-hour buys the most work, not the cheapest hour (16 T4s are cheap by
    the hour but slow the run down far more than they save)."""

    def key(option: Option) -> tuple[int, bool, Decimal, int, str]:
        per_work = cost_per_work(option, kind, ctx.profile.replicas)
        return (
            order.index(option.strategy),
            per_work is None,
            per_work if per_work is not None else Decimal(0),
            option.model.memory_gb,
            option.model.name,
        )

    best = min(outcomes, key=key)
    peers = sum(1 for o in outcomes if o.strategy is best.strategy)
    per_work = cost_per_work(best, kind, ctx.profile.replicas)
    precision = precision_words(kind)
    if per_work is None:
        how = "price or throughput unknown"
    else:
        per_pflop = format_money(per_work * 1000, ctx.currency)
        how = f"{per_pflop} per PFLOPS-hour of {precision} throughput"
    line = (
        f"No GPU model named: {best.model.name} costs the least per unit of work of {peers} model(s) that can serve "
        f"{STRATEGY_WORDS[best.strategy]} for this profile ({how}): a run is priced by the work done, not the "
        "hour, so a cheaper hour on a slower GPU is not cheaper. Models without a known price or throughput rank "
        "last."
    )
    return Choice(best, order[: order.index(best.strategy)], line)
