"""Where a request that is not running waits, and until when. Pure.

A request waits at one of four stages (DESIGN.md "Waiting"):

- ``approval``: it is pending approval and its pool could host it now; ``position`` is its place in the approval
  queue (oldest first) and ``ahead_gpu_units`` the units of the same pool and resource asked for by requests ahead.
- ``capacity``: its pool cannot host it now (pending, or its pods unschedulable for want of GPUs). ``eta`` is the
  first expiry of the pool's current allocations after which enough units are free for it and those ahead of it;
  ``None`` when the allocations that would have to end have no end.
- ``kueue``: Kueue has not admitted its Workload (``QuotaReserved`` or ``Admitted`` not true), or evicted it; the
  reasons are the Workload's own condition messages.
- ``provisioning``: approved, its objects on their way to the cluster or its pods starting.

Nothing waits once the workload runs (``waiting_for`` answers ``None``).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum
from typing import Any


class WaitingStage(StrEnum):
    APPROVAL = "approval"
    CAPACITY = "capacity"
    KUEUE = "kueue"
    PROVISIONING = "provisioning"


@dataclass(frozen=True, slots=True)
class Holding:
    """Units of a pool's resource held by one allocation, and when they free (``None``: no end is set)."""

    units: int
    ends_at: datetime | None


@dataclass(frozen=True, slots=True)
class QueueCondition:
    """One condition of a Kueue Workload, as the cluster reported it."""

    type: str
    status: str
    reason: str = ""
    message: str = ""

    @classmethod
    def from_mapping(cls, data: dict[str, Any]) -> QueueCondition:
        return cls(
            type=str(data.get("type") or ""),
            status=str(data.get("status") or ""),
            reason=str(data.get("reason") or ""),
            message=str(data.get("message") or ""),
        )


@dataclass(frozen=True, slots=True)
class PoolOutlook:
    """A pool's units of one resource: how many exist, and the allocations that hold them now (others than the
    request's own)."""

    capacity: int
    holdings: tuple[Holding, ...] = ()

    @property
    def held(self) -> int:
        return sum(holding.units for holding in self.holdings)

    @property
    def free(self) -> int:
        return max(0, self.capacity - self.held)


@dataclass(frozen=True, slots=True)
class WaitingInputs:
    """What is known about one request that is not running yet."""

    status: str
    units: int
    now: datetime
    # The approval queue: 1 for the oldest pending request; the units of the same pool and resource ahead of it.
    queue_position: int | None = None
    units_ahead: int = 0
    pool: PoolOutlook | None = None
    pool_name: str = ""
    resource_name: str = ""
    cluster_name: str = ""
    observed_phase: str = ""
    pending_reason: str = ""
    queue_conditions: tuple[QueueCondition, ...] = ()
    # Other teams' reservation windows on the pool now, in words (their units are among the pool's holdings).
    reservation_notes: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Waiting:
    """Where a request waits: the stage, its place in the approval queue, the units ahead, an ETA, and why."""

    stage: WaitingStage
    position: int | None = None
    ahead_gpu_units: int | None = None
    eta: datetime | None = None
    reasons: tuple[str, ...] = field(default=())

    def to_dict(self) -> dict[str, Any]:
        """The API's ``waiting`` object (DESIGN.md "Waiting"): the ETA as ISO 8601 text."""
        return {
            "stage": str(self.stage),
            "position": self.position,
            "ahead_gpu_units": self.ahead_gpu_units,
            "eta": self.eta.isoformat() if self.eta else None,
            "reasons": list(self.reasons),
        }


# Statuses in which a request has not started running but will (once decided, applied, admitted and scheduled).
WAITING_STATUSES = frozenset({"pending_approval", "approved", "provisioning"})
# Words in a pod's scheduling message that mean the pool has no free GPU for it (as opposed to a label or taint).
_NO_FREE_GPU_MARKERS = ("Insufficient nvidia.com/", "Insufficient gpu.nvidia.com", "cannot allocate all claims")


def capacity_eta(*, needed: int, pool: PoolOutlook, now: datetime) -> datetime | None:
    """When ``needed`` units of the pool are free, as its current allocations end in the order of their ends.

    ``now`` when they are free already; ``None`` when not even every allocation with an end frees enough (those
    without an end are taken to hold their units for good), or the pool is too small for ``needed`` at all.
    """
    if needed > pool.capacity:
        return None
    free = pool.free
    if free >= needed:
        return now
    for holding in sorted((h for h in pool.holdings if h.ends_at is not None), key=lambda h: h.ends_at):
        free += holding.units
        if free >= needed:
            return max(holding.ends_at, now)  # type: ignore[type-var]
    return None


def kueue_waiting(conditions: Iterable[QueueCondition]) -> Waiting | None:
    """The Kueue stage of a Workload that is not admitted or was evicted; ``None`` when it is admitted and running."""
    by_type = {condition.type: condition for condition in conditions}
    if not by_type:
        return None
    evicted = by_type.get("Evicted")
    preempted = by_type.get("Preempted")
    admitted = by_type.get("Admitted")
    reserved = by_type.get("QuotaReserved")
    reasons: list[str] = []
    if preempted is not None and preempted.status == "True":
        reasons.append(f"Preempted by Kueue ({preempted.reason}): {preempted.message}".rstrip(": "))
    if evicted is not None and evicted.status == "True":
        reasons.append(f"Evicted by Kueue ({evicted.reason}): {evicted.message}".rstrip(": "))
    if admitted is not None and admitted.status == "True" and not reasons:
        return None
    if reserved is not None and reserved.status != "True":
        reasons.append(f"Kueue has not reserved quota: {reserved.message or reserved.reason or 'pending'}")
    elif admitted is not None and admitted.status != "True" and not reasons:
        reasons.append(f"Kueue has not admitted the Workload: {admitted.message or admitted.reason or 'pending'}")
    elif reserved is None and admitted is None and not reasons:
        reasons.append("Waiting in the team's Kueue queue for quota.")
    return Waiting(stage=WaitingStage.KUEUE, reasons=tuple(reasons)) if reasons else None


def _capacity_waiting(inputs: WaitingInputs, *, ahead: int, first_reason: str) -> Waiting:
    pool = inputs.pool
    assert pool is not None
    needed = ahead + inputs.units
    eta = capacity_eta(needed=needed, pool=pool, now=inputs.now)
    unit = inputs.resource_name or "units"
    reasons = [
        first_reason,
        f"Pool {inputs.pool_name} has {pool.capacity} {unit}: {pool.held} held, {pool.free} free; "
        f"it needs {inputs.units}" + (f" after {ahead} asked for ahead of it." if ahead else "."),
        *inputs.reservation_notes,
    ]
    if eta is None and needed > pool.capacity:
        reasons.append(f"The pool has fewer than {needed} {unit} in all: nodes must be added.")
    elif eta is None:
        reasons.append("Not enough of the units held have an end date to say when they free.")
    else:
        reasons.append(f"Enough frees when current allocations expire, by {eta:%Y-%m-%d %H:%M} UTC.")
    return Waiting(
        stage=WaitingStage.CAPACITY,
        position=inputs.queue_position,
        ahead_gpu_units=ahead,
        eta=eta,
        reasons=tuple(reasons),
    )


def waiting_for(inputs: WaitingInputs) -> Waiting | None:
    """Where the request waits and until when; ``None`` for a request that runs, ended, or was never submitted."""
    if inputs.status not in WAITING_STATUSES:
        return None
    if inputs.status == "pending_approval":
        if inputs.pool is not None and inputs.pool.free < inputs.units:
            return _capacity_waiting(
                inputs,
                ahead=inputs.units_ahead,
                first_reason="Its pool has no room for it now: an approval would be refused until units free.",
            )
        position = inputs.queue_position
        reasons = [
            f"Waiting for a platform approver: {position - 1} request(s) ahead of it in the approval queue."
            if position
            else "Waiting for a platform approver."
        ]
        if inputs.units_ahead:
            unit = inputs.resource_name or "units"
            reasons.append(f"Requests ahead of it ask for {inputs.units_ahead} {unit} on the same pool.")
        return Waiting(
            stage=WaitingStage.APPROVAL,
            position=position,
            ahead_gpu_units=inputs.units_ahead,
            reasons=tuple(reasons),
        )
    if inputs.status == "approved":
        where = f" to cluster {inputs.cluster_name}" if inputs.cluster_name else ""
        return Waiting(stage=WaitingStage.PROVISIONING, reasons=(f"Approved: its objects are being applied{where}.",))
    # provisioning: admitted by Kueue (if the cluster queues), then scheduled, then started.
    queued = kueue_waiting(inputs.queue_conditions)
    if queued is not None:
        return queued
    if inputs.observed_phase == "Pending" and inputs.pool is not None and _wants_gpus(inputs.pending_reason):
        first = f"The scheduler found no free GPU: {inputs.pending_reason}"
        return _capacity_waiting(inputs, ahead=0, first_reason=first)
    detail = inputs.pending_reason or "Its objects are applied; waiting for the pods to start."
    return Waiting(stage=WaitingStage.PROVISIONING, reasons=(detail,))


def _wants_gpus(reason: str) -> bool:
    return any(marker in reason for marker in _NO_FREE_GPU_MARKERS)


def holdings_of(rows: Sequence[tuple[int, datetime | None]]) -> tuple[Holding, ...]:
    """Holdings from (units, ends_at) pairs, as a database aggregate reads them."""
    return tuple(Holding(units=int(units), ends_at=ends_at) for units, ends_at in rows if units)
