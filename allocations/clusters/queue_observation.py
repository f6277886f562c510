"""What Kueue says about a request's Workload, read while it is provisioned or reconciled, and the preemption notice.

On a Kueue cluster every observation also reads the request's Workload (through the gateway) and keeps its
conditions on the request (``GpuRequest.queue_conditions``): the request's ``waiting`` reads them without a cluster
call. A tier-3 (preemptible or borrowed) workload whose Workload newly shows ``Preempted`` or ``Evicted`` is a
preemption: it is written as a ``RequestEvent`` (the status does not change: Kueue requeues the Workload) and the
``request_preempted`` signal tells the owner (billing sends the mail and the team's chat post, as budget alerts go).
"""

from __future__ import annotations

import logging
from typing import Any

from django.db import transaction
from django.dispatch import Signal

from allocations.clusters.gateways.base import ClusterGateway, GatewayError
from allocations.models import ClusterScheduler, GpuRequest, RequestEvent

logger = logging.getLogger(__name__)
PREEMPTION_ACTOR = "system:kueue"
# Sent on commit with ``request_id`` and ``event_id`` when a preemption was written.
request_preempted = Signal()
# Kueue's Preempted reasons, in words (kueue.x-k8s.io/v1beta2 Workload conditions).
PREEMPTION_REASONS = {
    "InClusterQueue": "preempted by a higher-priority workload of the same team queue",
    "InCohortReclamation": "reclaimed by the team that lent the quota",
    "InCohortReclaimWhileBorrowing": "reclaimed by another borrowing team of higher priority",
    "InCohortFairSharing": "preempted to share the cohort's quota fairly",
    "Preempted": "preempted by a higher-priority workload",
    "PodsReadyTimeout": "evicted because its pods did not become ready in time",
    "InactiveWorkload": "deactivated",
}


def read_queue_conditions(gateway: ClusterGateway, request: GpuRequest) -> list[dict[str, str]] | None:
    """The request's Workload conditions on a Kueue cluster (``[]`` when Kueue has none yet); None elsewhere or when
    the Workload cannot be read (the last conditions read stay)."""
    if request.cluster is None or request.cluster.scheduler != ClusterScheduler.KUEUE:
        return None
    try:
        queued = gateway.queued_workload(namespace=request.team.namespace, request_id=request.pk)
    except GatewayError as exc:
        logger.info("request %s: Kueue Workload not read: %s", request.pk, exc)
        return None
    return list(queued.conditions) if queued is not None else []


def preemption_of(conditions: list[dict[str, str]]) -> dict[str, str] | None:
    """The ``Preempted`` (or else ``Evicted``) condition that is true, with its reason in words; None if neither."""
    by_type = {condition.get("type"): condition for condition in conditions}
    for kind in ("Preempted", "Evicted"):
        condition = by_type.get(kind) or {}
        if condition.get("status") == "True":
            reason = condition.get("reason", "")
            return {
                "type": kind,
                "reason": reason,
                "message": condition.get("message", ""),
                "at": condition.get("lastTransitionTime", ""),
                "explained": PREEMPTION_REASONS.get(reason, f"evicted by Kueue ({reason or 'no reason given'})"),
            }
    return None


def is_preemptible(request: GpuRequest) -> bool:
    """Tier-3 work: a preemptible tier (it may borrow) or an allocation that borrowed."""
    return bool(request.borrowed or (request.sla_tier_id and request.sla_tier.preemptible))


def record_preemption(
    *, request: GpuRequest, previous: list[dict[str, Any]], current: list[dict[str, str]]
) -> RequestEvent | None:
    """Write the preemption event and tell the owner, once per preemption (a new ``Preempted``/``Evicted`` transition
    of a tier-3 workload's Workload); None when there is nothing new."""
    now_preempted = preemption_of(current)
    if now_preempted is None or not is_preemptible(request):
        return None
    before = preemption_of([dict(condition) for condition in previous])
    if before is not None and before["at"] == now_preempted["at"] and before["reason"] == now_preempted["reason"]:
        return None
    comment = f"Preempted: {now_preempted['explained']}." + (
        f" Kueue: {now_preempted['message']}" if now_preempted["message"] else ""
    )
    with transaction.atomic():
        event = RequestEvent.objects.create(
            request=request,
            actor=None,
            actor_label=PREEMPTION_ACTOR,
            from_status=request.status,
            to_status=request.status,
            comment=comment[:2000],
            details={"notice": "preempted", **now_preempted},
        )
        request_id, event_id = request.pk, event.pk
        transaction.on_commit(
            lambda: request_preempted.send(sender=GpuRequest, request_id=request_id, event_id=event_id), robust=True
        )
    return event
