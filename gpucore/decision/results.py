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
    """The core fields of every way to run a workload: DESIGN.md's "Recommendation" contract."""

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
    gpu_share: Decimal  # per allocated unit (DESIGN.md "GPU share")
    estimated_cost: Decimal | None  # for duration_hours; None without a duration or a price
    duration_hours: Decimal | None


@dataclass(frozen=True, slots=True)
class Alternative(AllocationOption):
    """Another way to run the workload, with its tradeoffs and whether policy permits it."""

    tradeoffs: tuple[str, ...] = ()
    permitted: bool = True
    reason: str | None = None
    # ``stored_json``, worked out on first use: the alternative's JSON lives and goes with it.
    json: dict[str, Any] | None = field(default=None, init=False, repr=False, compare=False)

    def to_dict(self) -> dict[str, Any]:
        """The alternative as JSON-ready data (DESIGN.md "Recommendation" core fields plus tradeoffs).

        The framework hands out the same frozen alternative for the same inputs (``explain.alternatives``), so its
        JSON is worked out once and each call gets its own copy of it (nothing a caller changes reaches another).
        """
        return _fresh_alternative_json(self.stored_json())

    def stored_json(self) -> dict[str, Any]:
        """``to_dict``'s answer as this process keeps it, tuples for lists (shared: never change it; copy it with
        ``fresh_alternative_json``)."""
        json = self.json
        if json is None:
            json = _core_dict(self)
            json["tradeoffs"] = self.tradeoffs
            json["permitted"] = self.permitted
            json["reason"] = self.reason
            object.__setattr__(self, "json", json)
        return json


@dataclass(frozen=True, slots=True)
class Recommendation(AllocationOption):
    """How to run a workload: strategy, Kubernetes resource, model, cost, the reasons, and the alternatives."""

    rationale: tuple[str, ...] = ()
    alternatives: tuple[Alternative, ...] = ()
    topology_aware: bool = False
    # The stored JSON of the core fields, where the framework already has it (``core_json``: shared, never changed).
    core_json: dict[str, Any] | None = field(default=None, repr=False, compare=False)
    # The alternatives' stored JSON in their order, where the framework already has it (``Alternative.stored_json``).
    alternatives_json: tuple[dict[str, Any], ...] | None = field(default=None, repr=False, compare=False)

    def to_dict(self) -> dict[str, Any]:
        """The recommendation as the JSON contract of DESIGN.md (money as strings rounded to the cent)."""
        json = _fresh_core_json(_core_dict(self) if self.core_json is None else self.core_json)
        json["rationale"] = list(self.rationale)
        stored = self.alternatives_json
        if stored is None:
            stored = tuple(alternative.stored_json() for alternative in self.alternatives)
        json["alternatives"] = [_fresh_alternative_json(entry) for entry in stored]
        json["topology_aware"] = self.topology_aware
        return json


# The stored JSON keeps tuples where the contract has lists or objects (``node_selector`` as its items, the costs as
# their values in the contract's key order), and a copy rebuilds them: the stored dicts then hold no list or dict, so
# the garbage collector stops tracking them (a full collection walks every object it tracks, and these memos hold
# tens of thousands; issue #15).


def _fresh_alternative_json(stored: dict[str, Any]) -> dict[str, Any]:
    """A copy of an alternative's stored JSON with its own lists and dicts (the strings and numbers are immutable)."""
    json = _fresh_core_json(stored)
    json["tradeoffs"] = list(stored["tradeoffs"])
    return json


def _fresh_core_json(stored: dict[str, Any]) -> dict[str, Any]:
    json = stored.copy()  # keeps the key order
    json["node_selector"] = dict(stored["node_selector"])
    json["expected_overhead_pct"] = list(stored["expected_overhead_pct"])
    json["utilization_target_pct"] = list(stored["utilization_target_pct"])
    amount, currency = stored["estimated_monthly_cost"]
    json["estimated_monthly_cost"] = {"amount": amount, "currency": currency}
    cost = stored["estimated_cost"]
    if cost is not None:
        json["estimated_cost"] = {"amount": cost[0], "currency": cost[1], "hours": cost[2]}
    return json


# Enum ``.value`` goes through a descriptor; these plain lookups are what every alternative of every answer reads.
_STRATEGY_VALUE = {strategy: strategy.value for strategy in Strategy}
_ISOLATION_VALUE = {isolation: isolation.value for isolation in Isolation}
_TENTH = Decimal("0.1")


def core_json_of(values: tuple[Any, ...]) -> dict[str, Any]:
    """The stored JSON of the core fields given in ``AllocationOption``'s field order (keep it: callers get copies,
    ``Recommendation.to_dict``)."""
    return _core_dict(_CoreView(*values))


@dataclass(slots=True)
class _CoreView:
    """The core fields as attributes, for ``_core_dict`` (no frozen dataclass to construct)."""

    strategy: Strategy
    resource_name: str
    quantity: int
    replicas: int
    gpu_model: str
    mig_profile: str | None
    time_slice_replicas: int | None
    node_selector: dict[str, str]
    expected_overhead_pct: tuple[int, int]
    utilization_target_pct: tuple[int, int]
    isolation: Isolation
    estimated_monthly_cost: Decimal | None
    currency: str
    saving_vs_dedicated_pct: Decimal
    gpu_share: Decimal
    estimated_cost: Decimal | None
    duration_hours: Decimal | None


def _core_dict(item: AllocationOption | _CoreView) -> dict[str, Any]:
    amount = item.estimated_monthly_cost
    return {
        "strategy": _STRATEGY_VALUE[item.strategy],
        "resource_name": item.resource_name,
        "quantity": item.quantity,
        "replicas": item.replicas,
        "gpu_model": item.gpu_model,
        "mig_profile": item.mig_profile,
        "time_slice_replicas": item.time_slice_replicas,
        "node_selector": tuple(item.node_selector.items()),
        "expected_overhead_pct": tuple(item.expected_overhead_pct),
        "utilization_target_pct": tuple(item.utilization_target_pct),
        "isolation": _ISOLATION_VALUE[item.isolation],
        "estimated_monthly_cost": (None if amount is None else str(to_cents(amount)), item.currency),
        "saving_vs_dedicated_pct": float(item.saving_vs_dedicated_pct.quantize(_TENTH, ROUND_HALF_UP)),
        "gpu_share": _share_text(item.gpu_share),
        "estimated_cost": (
            None
            if item.duration_hours is None
            else (
                None if item.estimated_cost is None else str(to_cents(item.estimated_cost)),
                item.currency,
                _json_hours(item.duration_hours),
            )
        ),
    }


_SHARE_TEXTS: dict[Decimal, str] = {}


def _share_text(share: Decimal) -> str:
    """``share_text``, remembered: a catalog has a few dozen distinct shares and every answer prints several."""
    text = _SHARE_TEXTS.get(share)
    if text is None:
        if len(_SHARE_TEXTS) > 4096:  # bounded: an odd price book or layout must not grow it without end
            _SHARE_TEXTS.clear()
        text = _SHARE_TEXTS[share] = share_text(share)
    return text


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
