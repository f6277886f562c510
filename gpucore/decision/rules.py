"""The decision tree (Part 4.6), the characterization matrix (Part 4.1) and the policy floors. Pure: no Django.

``classify_intent`` turns a profile into what the guide prefers; ``apply_floors`` removes what GPUs per replica,
``isolation_required`` and the SLA tier (Part 4.3) rule out. Each rule that fires adds a sentence to the rationale.
"""

from __future__ import annotations

from decimal import Decimal
from enum import Enum

from gpucore.catalog import GpuModelSpec
from gpucore.decision.options import STRATEGY_WORDS, format_gb
from gpucore.profile import WorkloadProfile
from gpucore.sla import SlaTierSpec
from gpucore.vocabulary import IsolationFloor, Strategy, WorkloadType

# Decision tree, Part 4.6: "Latency Sensitive? -> Memory > 10GB? -> yes: Dedicated GPU, no: MIG Instance".
LATENCY_MEMORY_THRESHOLD_GB = Decimal(10)


class Intent(Enum):
    """What the decision tree and the matrix ask for, before floors and fit."""

    DEDICATED = "dedicated"
    MIG = "mig"  # latency-sensitive and small: MIG, else dedicated
    MIG_OR_DEDICATED = "mig-or-dedicated"  # real-time inference, explicitly not latency-sensitive (matrix)
    TIME_SLICING = "time-slicing"


# The order strategies are tried in, across models, for each intent (before policy removes some).
STRATEGY_ORDER: dict[Intent, tuple[Strategy, ...]] = {
    Intent.DEDICATED: (Strategy.DEDICATED,),
    Intent.MIG: (Strategy.MIG, Strategy.DEDICATED),
    Intent.MIG_OR_DEDICATED: (Strategy.MIG, Strategy.TIME_SLICING, Strategy.DEDICATED),
    Intent.TIME_SLICING: (Strategy.TIME_SLICING, Strategy.MIG, Strategy.DEDICATED),
}


def model_plan(intent: Intent, model: GpuModelSpec) -> tuple[Strategy, ...]:
    """The strategies one model is tried with, in order (a subsequence of ``STRATEGY_ORDER[intent]``)."""
    if intent is Intent.DEDICATED:
        return (Strategy.DEDICATED,)
    if intent is Intent.MIG:
        # A model without MIG: latency-sensitive work goes to a dedicated GPU, never to a time-sliced one.
        return (Strategy.MIG, Strategy.DEDICATED) if model.mig_capable else (Strategy.DEDICATED,)
    if intent is Intent.MIG_OR_DEDICATED:
        # "MIG where memory fits a profile, else dedicated"; a model without MIG time-slices work that is neither
        # latency-sensitive nor isolation-bound (the policy filter removes time-slicing otherwise).
        return (Strategy.MIG, Strategy.DEDICATED) if model.mig_capable else (Strategy.TIME_SLICING, Strategy.DEDICATED)
    return (
        (Strategy.TIME_SLICING, Strategy.MIG, Strategy.DEDICATED)
        if model.mig_capable
        else (Strategy.TIME_SLICING, Strategy.DEDICATED)
    )


# --- the tree and the floors -----------------------------------------------------------------------------------


def classify_intent(profile: WorkloadProfile, rationale: list[str]) -> tuple[Intent, str]:
    """The matrix (4.1) and decision tree (4.6) preference, and a short reason for it."""
    kind = profile.workload_type
    memory = profile.gpu_memory_gb
    if kind is WorkloadType.TRAINING:
        rationale.append(
            "Training: dedicated GPUs, because long, memory-heavy runs need predictable performance (matrix, Part 4.1)."
        )
        return Intent.DEDICATED, "the guide gives training dedicated GPUs for predictable performance (Part 4.1)"
    if kind is WorkloadType.HPC_SIMULATION:
        rationale.append(
            "HPC simulation: dedicated GPUs plus affinity, because it is compute-heavy and NUMA-sensitive "
            "(matrix, Part 4.1)."
        )
        rationale.append(
            "Topology-aware placement: keep each replica's GPUs and CPUs in the same NUMA zone "
            "(NUMA-aware scheduling, Part 2.4)."
        )
        return Intent.DEDICATED, "the guide gives HPC simulation dedicated GPUs with NUMA affinity (Part 4.1)"
    if profile.latency_sensitive:
        if memory > LATENCY_MEMORY_THRESHOLD_GB:
            rationale.append(
                f"Latency-sensitive with {format_gb(memory)} > {format_gb(LATENCY_MEMORY_THRESHOLD_GB)}: "
                "a dedicated GPU "
                "(decision tree, Part 4.6)."
            )
            return Intent.DEDICATED, "the decision tree gives latency-sensitive work over 10 GB a dedicated GPU"
        rationale.append(
            f"Latency-sensitive with {format_gb(memory)} <= {format_gb(LATENCY_MEMORY_THRESHOLD_GB)}: "
            "a MIG instance, whose "
            "hardware isolation prevents jitter (decision tree, Part 4.6)."
        )
        return Intent.MIG, "the decision tree gives latency-sensitive work up to 10 GB a MIG instance"
    if kind is WorkloadType.BATCH_INFERENCE:
        rationale.append(
            "Batch inference, not latency-sensitive: time-slicing, the cost-optimization opportunity "
            "(decision tree and matrix, Parts 4.6 and 4.1)."
        )
        return Intent.TIME_SLICING, "the guide time-slices batch inference that is not latency-sensitive"
    if kind is WorkloadType.DEVELOPMENT:
        rationale.append(
            "Development, not latency-sensitive: time-slicing for maximum flexibility "
            "(decision tree and matrix, Parts 4.6 and 4.1)."
        )
        return Intent.TIME_SLICING, "the guide time-slices development work for flexibility"
    rationale.append(
        "Real-time inference marked not latency-sensitive: MIG or dedicated, because isolation prevents jitter "
        "(matrix, Part 4.1); MIG where the memory fits a profile."
    )
    return Intent.MIG_OR_DEDICATED, "the matrix gives real-time inference MIG or dedicated GPUs (Part 4.1)"


def apply_floors(
    profile: WorkloadProfile, tier: SlaTierSpec | None, intent: Intent, rationale: list[str]
) -> tuple[dict[Strategy, str], tuple[Strategy, ...]]:
    """Policy floors (GPUs per replica, isolation, SLA tier): what they forbid and why, and the order that remains."""
    forbidden: dict[Strategy, list[str]] = {}
    order = list(STRATEGY_ORDER[intent])

    def rule_out(strategy: Strategy, reason: str) -> bool:
        forbidden.setdefault(strategy, []).append(reason)
        if strategy in order:
            order.remove(strategy)
            return True
        return False

    if profile.gpu_count > 1:
        n = profile.gpu_count
        removed = [
            rule_out(Strategy.MIG, f"{n} GPUs per replica: a MIG slice cannot span GPUs."),
            rule_out(
                Strategy.TIME_SLICING,
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
        if rule_out(
            Strategy.TIME_SLICING, "Isolation required: time-slicing has no memory or fault isolation (Part 2.2)."
        ):
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
            removed_names = [STRATEGY_WORDS[s] for s in (Strategy.MIG, Strategy.TIME_SLICING) if rule_out(s, reason)]
            verb = "are" if len(removed_names) > 1 else "is"
            tail = (
                f", so {' and '.join(removed_names)} {verb} ruled out." if removed_names else "; the choice meets it."
            )
            rationale.append(f"{label} is a floor on isolation: dedicated GPUs only (Part 4.3){tail}")
        elif tier.isolation_floor is IsolationFloor.HARDWARE:
            reason = f"{label} needs hardware isolation at least: MIG or dedicated, no time-slicing (Part 4.3)."
            tail = (
                ", so time-slicing is ruled out."
                if rule_out(Strategy.TIME_SLICING, reason)
                else "; the choice meets it."
            )
            rationale.append(
                f"{label} is a floor on isolation: hardware isolation at least, MIG or dedicated (Part 4.3){tail}"
            )
        else:
            rationale.append(f"{label} accepts any strategy, time-slicing included (best effort, Part 4.3).")
    return {strategy: " ".join(reasons) for strategy, reasons in forbidden.items()}, tuple(order)
