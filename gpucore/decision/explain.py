"""The prose of a recommendation: rationale lines, alternatives' tradeoffs and refusals. Pure: no Django.

Sentences speak to the person asking, in plain words: figures and reasons, never references to internal guides
(the comments here say which part of guide 000, docs/reference-sources.md#guides, each figure comes from).
"""

from __future__ import annotations

import math
from decimal import ROUND_HALF_UP, Decimal

from gpucore.catalog import GpuModelSpec
from gpucore.decision.options import (
    CATALOG_CURRENCY,
    DEDICATED,
    MIG,
    STRATEGY_WORDS,
    TIME_SLICING,
    DecisionContext,
    Option,
)
from gpucore.decision.prose import format_gb, format_money, format_number, format_pct, need_text
from gpucore.decision.results import UTILIZATION_TARGET_PCT
from gpucore.decision.rules import Intent, model_plan
from gpucore.decision.sizing import fewest_time_slice_replicas
from gpucore.pricing import HOURS_PER_MONTH, share_text, to_cents
from gpucore.profile import WorkloadProfile
from gpucore.usable_memory import HEADROOM_RATIO, usable_gib, with_headroom
from gpucore.vocabulary import Strategy

# Figures from the guide: Parts 1.3 and 1.4 (fragmentation, context switches), 2 (overheads), 2.2 (isolation).
PERFORMANCE_TRADEOFF = {
    Strategy.DEDICATED: "Performance: the whole GPU with no sharing overhead and under 10% memory fragmentation.",
    Strategy.MIG: "Performance: under 5% overhead; the slice's memory and compute are guaranteed.",
    Strategy.TIME_SLICING: "Performance: 15-30% overhead from context switches, 15-25% memory fragmentation "
    "and noisy neighbours.",
}
ISOLATION_TRADEOFF = {
    Strategy.DEDICATED: "Isolation: full; nothing else runs on the GPU.",
    Strategy.MIG: "Isolation: hardware; memory and faults stay inside the slice.",
    Strategy.TIME_SLICING: "Isolation: none; a neighbour can exhaust memory or crash the GPU for every tenant.",
}


# --- explaining ------------------------------------------------------------------------------------------------


def sizing_line(ctx: DecisionContext, option: Option) -> str:
    profile, model = ctx.profile, option.model
    per_gpu = profile.gpu_memory_gb / profile.gpu_count
    needs = f"needs {format_gb(with_headroom(per_gpu))} with headroom (peak at most 85% of the memory)"
    if option.strategy is MIG and option.mig is not None:
        return (
            f"MIG profile {option.mig.name} on {model.name}: the smallest "
            f"{'profile a node pool here offers' if ctx.offered is not None else 'recommendable profile'} "
            f"that holds {format_gb(per_gpu)}, which {needs}; the slice offers "
            f"{format_gb(usable_gib(model, option.mig))} ({option.mig.compute_slices}/{model.mig_compute_slices} "
            "of the compute)."
        )
    if option.strategy is TIME_SLICING:
        per_tenant = usable_gib(model) / Decimal(option.time_slice_replicas or 1)
        return (
            f"Time-slicing on {model.name} with {option.time_slice_replicas} tenants per GPU "
            f"({option.time_slice_source}): each can count on {format_gb(per_tenant)}; {format_gb(per_gpu)} {needs}."
        )
    if profile.gpu_count == 1:
        return (
            f"Dedicated: one {model.name} per replica holds {format_gb(per_gpu)}, which {needs}; the GPU offers "
            f"{format_gb(usable_gib(model))}."
        )
    return (
        f"Dedicated: {profile.gpu_count} x {model.name} per replica, {format_gb(per_gpu)} per GPU, which {needs}; "
        f"each GPU offers {format_gb(usable_gib(model))} (gpu_memory_gb is the replica's peak, spread over its GPUs)."
    )


def _share_words(option: Option) -> str:
    if option.strategy is MIG and option.mig is not None:
        mig, model = option.mig, option.model
        return (
            f"GPU share {share_text(option.share / option.quantity)} ({mig.name} holds {mig.compute_slices}/"
            f"{model.mig_compute_slices} of the compute and {mig.memory_slices}/{model.mig_memory_slices} of the "
            "memory; the larger counts)"
        )
    if option.strategy is TIME_SLICING:
        return f"GPU share 1/{option.time_slice_replicas}"
    return f"{option.quantity} GPU" + ("s" if option.quantity > 1 else "")


def cost_line(ctx: DecisionContext, option: Option) -> str:
    """The rationale's cost sentence."""
    saving = option.saving_pct
    saving_words = f", {format_pct(saving)} less than dedicated {option.model.name} GPUs" if saving > 0 else ""
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
        f"x {replicas} replica{'s' if replicas > 1 else ''} = {format_money(option.monthly, ctx.currency)}/month"
        f"{saving_words}." + duration_words(ctx, option)
    )


def duration_words(ctx: DecisionContext, option: Option) -> str:
    """The cost for the profile's duration (" For the 48 hours asked for: 330.24 USD."), or nothing."""
    hours = ctx.profile.duration_hours
    if hours is None or option.duration_cost is None:
        return ""
    amount = format_money(option.duration_cost, ctx.currency)
    return f" For the {format_number(hours)} hours asked for: {amount}."


def utilization_line(profile: WorkloadProfile, strategy: Strategy) -> str | None:
    expected = profile.expected_utilization_pct
    if expected is None:
        return None
    low, high = UTILIZATION_TARGET_PCT[strategy]
    kind = "dedicated" if strategy is DEDICATED else "shared"
    if expected < low:
        advice = (
            "a shared strategy would leave less idle capacity, where policy allows."
            if strategy is DEDICATED
            else "the share may sit idle."
        )
        return f"Expected utilization {expected}% is below the {low}-{high}% target for {kind} GPUs: {advice}"
    if expected > high and strategy is not DEDICATED:
        return (
            f"Expected utilization {expected}% is above the {low}-{high}% target for shared GPUs: expect "
            "contention; a dedicated GPU may serve it better."
        )
    return f"Expected utilization {expected}% fits the {low}-{high}% target for {kind} GPUs."


def cost_tradeoff(ctx: DecisionContext, option: Option, chosen: Option) -> str:
    if option.monthly is None:
        return f"Cost: unknown, no price for {option.model.name}."
    text = f"Cost: {format_money(option.monthly, ctx.currency)}/month"
    if option.duration_cost is not None and ctx.profile.duration_hours is not None:
        text += f" ({format_money(option.duration_cost, ctx.currency)} for the duration asked for)"
    if chosen.monthly is None:
        return text + " (the recommendation's cost is unknown)."
    difference = to_cents(option.monthly) - to_cents(chosen.monthly)
    if difference > 0:
        return text + f", {format_money(difference, ctx.currency)} more than the recommendation."
    if difference < 0:
        return text + f", {format_money(-difference, ctx.currency)} less than the recommendation."
    return text + ", the same as the recommendation."


def why_not(
    option: Option,
    chosen: Option,
    preference: tuple[Strategy, ...],
    intent_reason: str,
    *,
    named: bool,
    by_work: bool = False,
) -> str:
    if option.model is not chosen.model:
        if option.strategy is chosen.strategy:
            if named:
                return f"Not chosen: the request names {chosen.model.name}."
            rank = "least cost per unit of work" if by_work else "cheapest"
            return (
                f"Not chosen: {chosen.model.name} ranks first among the models that can serve "
                f"{STRATEGY_WORDS[chosen.strategy]} ({rank}, then smaller GPU, then name)."
            )
        if named and preference.index(option.strategy) < preference.index(chosen.strategy):
            return f"Not chosen: it needs {option.model.name}, and the request names {chosen.model.name}."
    return f"Not chosen: {intent_reason}."


# --- fallbacks and refusals -----------------------------------------------------------------------------------


def not_mig_capable_line(ctx: DecisionContext, model: GpuModelSpec, *, tried_time_slicing: bool) -> str:
    """Why a model without MIG goes to a dedicated GPU: the one next step, said once."""
    head = f"{model.name} has no MIG ({model.family}), so a dedicated GPU"
    if tried_time_slicing:
        return head + ", since no time-sliced share of it serves the replica."
    if ctx.profile.latency_sensitive:
        why = "the work is latency-sensitive"
    elif ctx.profile.isolation_required:
        why = "isolation is required"
    elif TIME_SLICING in ctx.forbidden:
        why = "time-slicing is ruled out above"
    else:
        why = "real-time inference needs isolation from neighbours"
    return head + f", since {why}."


def nobody_serves_line(ctx: DecisionContext, intent: Intent, strategy: Strategy) -> str:
    profile = ctx.profile
    if strategy is TIME_SLICING:
        shares = [
            (usable_gib(m) / fewest_time_slice_replicas(ctx, m), m.name)
            for m in ctx.catalog
            if TIME_SLICING in model_plan(intent, m)
        ]
        if shares:
            most, name = max(shares)
            return (
                f"No catalog model can time-slice {format_gb(profile.gpu_memory_gb)} (it needs "
                f"{format_gb(with_headroom(profile.gpu_memory_gb))} with headroom): a tenant can only count on the "
                f"GPU's usable memory divided by its tenants, at most {format_gb(most)} here ({name})."
            )
        return "No catalog model can serve time-slicing for this profile."
    partial = [
        (usable_gib(m, p), -p.compute_slices, m.name, p.name) for m in ctx.catalog for p in m.recommendable_profiles()
    ]
    if not partial:
        return "No catalog model is MIG-capable."
    memory, _, model_name, profile_name = max(partial)
    return (
        f"No catalog model has a partial MIG profile that holds {format_gb(profile.gpu_memory_gb)} (it needs "
        f"{format_gb(with_headroom(profile.gpu_memory_gb))} with headroom): the largest is {model_name} "
        f"{profile_name}, which offers {format_gb(memory)}."
    )


def too_big_for_line(ctx: DecisionContext, model: GpuModelSpec) -> str:
    """The refusal for a profile that no single GPU of the named model can hold."""
    profile = ctx.profile
    n = profile.gpu_count
    bigger = [m.name for m in ctx.catalog if profile.gpu_memory_gb <= usable_gib(m) * HEADROOM_RATIO * n]
    needed = _gpus_needed(profile.gpu_memory_gb, usable_gib(model))
    advice = f"choose a bigger model ({', '.join(bigger)}) or " if bigger else ""
    return (
        f"{need_text(profile)}, which needs {format_gb(with_headroom(profile.gpu_memory_gb / n))} per GPU with "
        f"headroom, but one {model.name} GPU offers {format_gb(usable_gib(model))}: {advice}spread the replica over "
        f"more GPUs (gpu_count >= {needed})."
    )


def too_big_for_any_line(ctx: DecisionContext) -> str:
    profile = ctx.profile
    largest = max(ctx.catalog, key=lambda m: (usable_gib(m), m.name))
    needed = _gpus_needed(profile.gpu_memory_gb, usable_gib(largest))
    return (
        f"{need_text(profile)}, which needs {format_gb(with_headroom(profile.gpu_memory_gb / profile.gpu_count))} "
        f"per GPU with headroom, but no GPU model in the catalog is that big: the largest, {largest.name}, offers "
        f"{format_gb(usable_gib(largest))}. Spread the replica over more GPUs (gpu_count >= {needed})."
    )


def _gpus_needed(memory: Decimal, usable: Decimal) -> int:
    """The fewest GPUs of ``usable`` GiB each that hold ``memory`` GiB with headroom."""
    return math.ceil(memory / (usable * HEADROOM_RATIO))
