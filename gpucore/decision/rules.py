"""The decision tree, the characterization matrix and the policy floors. Pure: no Django.

``classify_intent`` turns a profile into what the allocation guide prefers (its decision tree and workload matrix, guide
000 Part 4, docs/reference-sources.md#guides); ``apply_floors`` removes what GPUs per replica, ``isolation_required``,
the latency target and the SLA tier rule out. Each rule that fires adds a plain sentence to the rationale: the guide's
part numbers stay in these comments, never in what a user reads.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from decimal import Decimal
from enum import Enum

from gpucore.catalog import GpuModelSpec
from gpucore.decision.options import DEDICATED, MIG, STRATEGY_WORDS, TIME_SLICING
from gpucore.decision.prose import format_gb, format_number
from gpucore.profile import ProfileError, WorkloadProfile
from gpucore.sla import SlaTierSpec
from gpucore.vocabulary import IsolationFloor, Strategy, WorkloadType

# Decision tree, Part 4.6: "Latency Sensitive? -> Memory > 10GB? -> yes: Dedicated GPU, no: MIG Instance".
LATENCY_MEMORY_THRESHOLD_GB = Decimal(10)
# The tier-1 latency target when no tier with a dedicated floor states one (Part 4.3: tier1_realtime, p99 10 ms).
TIER1_LATENCY_P99_MS = Decimal(10)
# A policy figure, not a measurement: a time-sliced tenant waits while its neighbours run their time slices and
# pays a context switch each time (guide Part 1.3: 25-50 us per switch, 1-5 ms per CUDA context; Part 4.4: 10-30 %
# performance variance from noisy neighbours). With the usual 4 tenants that adds tens of milliseconds to a p99, so
# a p99 target below 50 ms is never time-sliced.
TIME_SLICING_JITTER_MS = Decimal(50)
# Availability at or above this needs at least two replicas: 99.99 % allows 52 minutes of downtime a year, less than
# one node's driver update or reboot, so a single replica cannot keep the promise (Part 4.3: tier1_realtime).
HIGH_AVAILABILITY_PCT = Decimal("99.99")
HIGH_AVAILABILITY_MIN_REPLICAS = 2


class Intent(Enum):
    """What the decision tree and the matrix ask for, before floors and fit."""

    DEDICATED = "dedicated"
    MIG = "mig"  # latency-sensitive and small: MIG, else dedicated
    MIG_OR_DEDICATED = "mig-or-dedicated"  # real-time inference, explicitly not latency-sensitive (matrix)
    TIME_SLICING = "time-slicing"


# The order strategies are tried in, across models, for each intent (before policy removes some).
STRATEGY_ORDER: dict[Intent, tuple[Strategy, ...]] = {
    Intent.DEDICATED: (DEDICATED,),
    Intent.MIG: (MIG, DEDICATED),
    Intent.MIG_OR_DEDICATED: (MIG, DEDICATED),
    Intent.TIME_SLICING: (TIME_SLICING, MIG, DEDICATED),
}


def model_plan(intent: Intent, model: GpuModelSpec) -> tuple[Strategy, ...]:
    """The strategies one model is tried with, in order (a subsequence of ``STRATEGY_ORDER[intent]``)."""
    if intent is Intent.DEDICATED:
        return (DEDICATED,)
    if intent in (Intent.MIG, Intent.MIG_OR_DEDICATED):
        # Real-time inference (latency-sensitive or not: the matrix says isolation prevents jitter) gets MIG or a
        # dedicated GPU; on a model without MIG that means a dedicated GPU, never a time-sliced one.
        return (MIG, DEDICATED) if model.mig_capable else (DEDICATED,)
    return (TIME_SLICING, MIG, DEDICATED) if model.mig_capable else (TIME_SLICING, DEDICATED)


def tier1_latency_ms(tiers: Iterable[SlaTierSpec]) -> Decimal:
    """The tightest p99 target of a tier that accepts dedicated GPUs only (tier 1), else the guide's 10 ms."""
    targets = [
        t.latency_p99_ms
        for t in tiers
        if t.isolation_floor is IsolationFloor.DEDICATED and t.latency_p99_ms is not None
    ]
    return min(targets) if targets else TIER1_LATENCY_P99_MS


def needs_two_replicas(workload_type: WorkloadType | str, tier: SlaTierSpec | None) -> bool:
    """Whether the tier's availability calls for a second replica: serving (a Deployment) at 99.99 % or more. A Job
    is not served: its pods are one run, so more of them would make it a distributed one, not a more available one."""
    return (
        WorkloadType(workload_type) is WorkloadType.REALTIME_INFERENCE
        and tier is not None
        and tier.availability_pct is not None
        and tier.availability_pct >= HIGH_AVAILABILITY_PCT
    )


def default_replicas(workload_type: WorkloadType | str, tier: SlaTierSpec | None) -> int:
    """The replicas a request gets when it names none: 2 for serving on a 99.99 % tier (tier 1), else 1."""
    return HIGH_AVAILABILITY_MIN_REPLICAS if needs_two_replicas(workload_type, tier) else 1


def check_replicas(profile: WorkloadProfile, tier: SlaTierSpec | None) -> None:
    """Refuse serving on a tier whose availability one replica cannot give (99.99 % needs two); ``ProfileError`` on
    replicas. Jobs are not refused: a one-pod tier-1 training run stays one pod."""
    if tier is None or not needs_two_replicas(profile.workload_type, tier):
        return
    if profile.replicas >= HIGH_AVAILABILITY_MIN_REPLICAS:
        return
    raise ProfileError(
        {
            "replicas": [
                f"{tier.name} promises {_plain(tier.availability_pct)} % availability, which one replica cannot "
                "give: a node's driver update, reboot or failure takes the service down for longer than that "
                f"allows (about 52 minutes a year). Ask for at least {HIGH_AVAILABILITY_MIN_REPLICAS} replicas, or "
                f"leave replicas out: real-time inference on this tier defaults to {HIGH_AVAILABILITY_MIN_REPLICAS}."
            ]
        }
    )


# --- the tree and the floors -----------------------------------------------------------------------------------


def classify_intent(profile: WorkloadProfile, rationale: list[str]) -> tuple[Intent, str]:
    """The matrix (Part 4.1) and decision tree (Part 4.6) preference, and a short reason for it."""
    kind = profile.workload_type
    memory = profile.gpu_memory_gb
    if kind is WorkloadType.TRAINING:
        rationale.append("Training: dedicated GPUs, because long, memory-heavy runs need predictable performance.")
        return Intent.DEDICATED, "training gets dedicated GPUs for predictable performance"
    if kind is WorkloadType.HPC_SIMULATION:
        rationale.append(
            "HPC simulation: dedicated GPUs with topology-aware placement, because it is compute-heavy and "
            "sensitive to memory locality: each replica's GPUs and CPUs stay in the same NUMA zone."
        )
        return Intent.DEDICATED, "HPC simulation gets dedicated GPUs with NUMA affinity"
    if profile.latency_sensitive:
        if memory > LATENCY_MEMORY_THRESHOLD_GB:
            rationale.append(
                f"Latency-sensitive and {format_gb(memory)}, more than {format_gb(LATENCY_MEMORY_THRESHOLD_GB)}: "
                "a dedicated GPU."
            )
            return Intent.DEDICATED, "latency-sensitive work over 10 GB gets a dedicated GPU"
        rationale.append(
            f"Latency-sensitive and {format_gb(memory)}, at most {format_gb(LATENCY_MEMORY_THRESHOLD_GB)}: "
            "a MIG slice, whose hardware isolation keeps neighbours from adding jitter; a dedicated GPU where no "
            "slice fits."
        )
        return Intent.MIG, "latency-sensitive work up to 10 GB gets a MIG slice"
    if kind is WorkloadType.BATCH_INFERENCE:
        rationale.append(
            "Batch inference, not latency-sensitive: a time-sliced share of a GPU, the cheapest way to run it; "
            "fewer tenants per GPU where a share of the usual size is too small, then MIG, then a dedicated GPU."
        )
        return Intent.TIME_SLICING, "batch inference that is not latency-sensitive is time-sliced to save cost"
    if kind is WorkloadType.DEVELOPMENT:
        rationale.append(
            "Development: a time-sliced share of a GPU, the most flexible and cheapest way to work; fewer tenants "
            "per GPU where a share of the usual size is too small, then MIG, then a dedicated GPU."
        )
        return Intent.TIME_SLICING, "development work is time-sliced for flexibility"
    rationale.append(
        "Real-time inference, even when not marked latency-sensitive: MIG or a dedicated GPU, because their "
        "isolation keeps neighbours from adding jitter; MIG where the memory fits a slice, else a dedicated GPU."
    )
    return Intent.MIG_OR_DEDICATED, "real-time inference gets MIG or a dedicated GPU for isolation"


def apply_floors(
    profile: WorkloadProfile,
    tier: SlaTierSpec | None,
    intent: Intent,
    rationale: list[str],
    *,
    tier1_p99_ms: Decimal = TIER1_LATENCY_P99_MS,
) -> tuple[dict[Strategy, str], tuple[Strategy, ...]]:
    """Policy floors (GPUs per replica, isolation, latency, SLA tier): what they forbid and why, and what remains."""
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
            rule_out(MIG, f"{n} GPUs per replica: a MIG slice cannot span GPUs."),
            rule_out(
                TIME_SLICING,
                f"{n} GPUs per replica: the device plugin refuses a time-sliced request of more than one, and "
                "several shares of a GPU add no compute.",
            ),
        ]
        rationale.append(
            f"{n} GPUs per replica: dedicated whole GPUs, because a MIG slice cannot span GPUs and the device plugin "
            "refuses a time-sliced request of more than one"
            + ("." if any(removed) else "; the choice is already dedicated.")
        )
    if profile.isolation_required:
        if rule_out(TIME_SLICING, "Isolation required: time-slicing has no memory or fault isolation."):
            rationale.append(
                "Isolation required: time-slicing is ruled out because it has no memory or fault isolation; MIG "
                "where the memory fits a slice, else a dedicated GPU."
            )
        else:
            rationale.append("Isolation required: met, since MIG and dedicated GPUs isolate memory and faults.")
    _latency_floor(profile, tier1_p99_ms, rule_out, rationale)
    if tier is not None:
        label = f"SLA tier {tier.name}"
        if tier.isolation_floor is IsolationFloor.DEDICATED:
            reason = f"{label} accepts dedicated GPUs only."
            removed_names = [STRATEGY_WORDS[s] for s in (MIG, TIME_SLICING) if rule_out(s, reason)]
            verb = "are" if len(removed_names) > 1 else "is"
            tail = (
                f", so {' and '.join(removed_names)} {verb} ruled out." if removed_names else "; the choice meets it."
            )
            rationale.append(f"{label} accepts dedicated GPUs only{tail}")
        elif tier.isolation_floor is IsolationFloor.HARDWARE:
            reason = f"{label} needs hardware isolation at least: MIG or dedicated, no time-slicing."
            tail = ", so time-slicing is ruled out." if rule_out(TIME_SLICING, reason) else "; the choice meets it."
            rationale.append(f"{label} needs hardware isolation at least, MIG or a dedicated GPU{tail}")
        else:
            rationale.append(f"{label} accepts any strategy, time-slicing included (best effort).")
    return {strategy: " ".join(reasons) for strategy, reasons in forbidden.items()}, tuple(order)


def _latency_floor(
    profile: WorkloadProfile, tier1_p99_ms: Decimal, rule_out: Callable[[Strategy, str], bool], rationale: list[str]
) -> None:
    """``latency_p99_ms`` at or below tier 1's target forbids sharing; below time-slicing's jitter, time-slicing."""
    p99 = profile.latency_p99_ms
    if p99 is None:
        return
    target = f"{_ms(p99)} p99"
    if p99 <= tier1_p99_ms:
        reason = (
            f"A {target} target is at or below the {_ms(tier1_p99_ms)} of the real-time tier, which only a "
            "dedicated GPU meets: no neighbour may share the GPU."
        )
        removed = [STRATEGY_WORDS[s] for s in (MIG, TIME_SLICING) if rule_out(s, reason)]
        verb = "are" if len(removed) > 1 else "is"
        tail = f" So {' and '.join(removed)} {verb} ruled out." if removed else ""
        rationale.append(reason + tail)
    elif p99 < TIME_SLICING_JITTER_MS:
        reason = (
            f"A {target} target is below the {_ms(TIME_SLICING_JITTER_MS)} of jitter time-slicing can add "
            "(a tenant waits while its neighbours run): no time-slicing; MIG or a dedicated GPU keep it."
        )
        rule_out(TIME_SLICING, reason)
        rationale.append(reason)
    else:
        rationale.append(f"A {target} target leaves room for any strategy the rest of the profile allows.")


def _plain(value: Decimal) -> str:
    return format(value.normalize(), "f")


def _ms(value: Decimal) -> str:
    return f"{format_number(value)} ms"
