"""What the decision framework answers: a ``Recommendation`` and its ``Alternative``s, and their JSON. Pure: no Django.

Also the per-strategy reference figures of the allocation guide that every answer carries (overhead, utilization
target, isolation).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from decimal import ROUND_HALF_UP, Decimal
from enum import StrEnum
from typing import Any

from gpucore.pricing import share_text, to_cents
from gpucore.vocabulary import Strategy


class Isolation(StrEnum):
    """How well an allocation is isolated from its neighbours on the same GPU."""

    FULL = "full"  # a whole GPU: nothing else runs on it
    HARDWARE = "hardware"  # MIG: memory, cache and faults partitioned in hardware
    NONE = "none"  # time-slicing: shared memory, a fault or an OOM hits every tenant


# Part 2 "Performance Impact Summary": MIG <5 % overhead, time-slicing 15-30 %, dedicated optimal.
EXPECTED_OVERHEAD_PCT: dict[Strategy, tuple[int, int]] = {
    Strategy.DEDICATED: (0, 0),
    Strategy.MIG: (0, 5),
    Strategy.TIME_SLICING: (15, 30),
}
# Parts 1.4 and 3.1: dedicated GPUs 80-95 % utilization, shared GPUs 60-80 % (accounting for overhead).
UTILIZATION_TARGET_PCT: dict[Strategy, tuple[int, int]] = {
    Strategy.DEDICATED: (80, 95),
    Strategy.MIG: (60, 80),
    Strategy.TIME_SLICING: (60, 80),
}
ISOLATION: dict[Strategy, Isolation] = {
    Strategy.DEDICATED: Isolation.FULL,
    Strategy.MIG: Isolation.HARDWARE,
    Strategy.TIME_SLICING: Isolation.NONE,
}


@dataclass(frozen=True, slots=True)
class AllocationOption:
    """The core fields of every way to run a workload: the API's recommendation (docs/api.md, "Recommendations")."""

    strategy: Strategy
    resource_name: str
    quantity: int
    replicas: int
    gpu_model: str
    mig_profile: str | None
    time_slice_replicas: int | None
    node_selector: dict[str, str] = field(hash=False)
    expected_overhead_pct: tuple[int, int]
    utilization_target_pct: tuple[int, int]
    isolation: Isolation
    estimated_monthly_cost: Decimal | None
    currency: str
    saving_vs_dedicated_pct: Decimal
    gpu_share: Decimal  # per allocated unit (docs/cost-model.md, "The arithmetic")
    estimated_cost: Decimal | None  # for duration_hours; None without a duration or a price
    duration_hours: Decimal | None


@dataclass(frozen=True, slots=True)
class Alternative(AllocationOption):
    """Another way to run the workload, with its tradeoffs and whether policy permits it."""

    tradeoffs: tuple[str, ...] = ()
    permitted: bool = True
    reason: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """The alternative as JSON-ready data (the recommendation's core fields plus tradeoffs)."""
        json = _core_dict(self)
        json["tradeoffs"] = list(self.tradeoffs)
        json["permitted"] = self.permitted
        json["reason"] = self.reason
        return json


@dataclass(frozen=True, slots=True)
class Recommendation(AllocationOption):
    """How to run a workload: strategy, Kubernetes resource, model, cost, the reasons, and the alternatives."""

    rationale: tuple[str, ...] = ()
    alternatives: tuple[Alternative, ...] = ()
    topology_aware: bool = False

    def to_dict(self) -> dict[str, Any]:
        """The recommendation as the API's JSON (money as strings rounded to the cent)."""
        json = _core_dict(self)
        json["rationale"] = list(self.rationale)
        json["alternatives"] = [alternative.to_dict() for alternative in self.alternatives]
        json["topology_aware"] = self.topology_aware
        return json


_TENTH = Decimal("0.1")


def _core_dict(item: AllocationOption) -> dict[str, Any]:
    amount = item.estimated_monthly_cost
    return {
        "strategy": item.strategy.value,
        "resource_name": item.resource_name,
        "quantity": item.quantity,
        "replicas": item.replicas,
        "gpu_model": item.gpu_model,
        "mig_profile": item.mig_profile,
        "time_slice_replicas": item.time_slice_replicas,
        "node_selector": dict(item.node_selector),
        "expected_overhead_pct": list(item.expected_overhead_pct),
        "utilization_target_pct": list(item.utilization_target_pct),
        "isolation": item.isolation.value,
        "estimated_monthly_cost": {
            "amount": None if amount is None else str(to_cents(amount)),
            "currency": item.currency,
        },
        "saving_vs_dedicated_pct": float(item.saving_vs_dedicated_pct.quantize(_TENTH, ROUND_HALF_UP)),
        "gpu_share": share_text(item.gpu_share),
        "estimated_cost": (
            None
            if item.duration_hours is None
            else {
                "amount": None if item.estimated_cost is None else str(to_cents(item.estimated_cost)),
                "currency": item.currency,
                "hours": _json_hours(item.duration_hours),
            }
        ),
    }


def _json_hours(hours: Decimal) -> int | float:
    return int(hours) if hours == hours.to_integral_value() else float(hours)


__all__ = [
    "EXPECTED_OVERHEAD_PCT",
    "ISOLATION",
    "UTILIZATION_TARGET_PCT",
    "AllocationOption",
    "Alternative",
    "Isolation",
    "Recommendation",
]
