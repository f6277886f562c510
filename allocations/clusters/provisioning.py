"""Provisioning services: render a request's objects, apply them through its cluster's gateway, observe, tear down.

PostgreSQL is the source of truth. Every function re-reads the request, checks its status, and is safe to run twice:
server-side apply and file writes are idempotent, deletes tolerate what is already gone, and status changes go
through ``gpu_request_transition`` (row lock + event). Tasks call these and decide only about retries.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from django.db import transaction
from django.utils import timezone

from allocations.clusters.gateways.base import ClusterGateway, PermanentGatewayError, WorkloadStatus
from allocations.clusters.queue_observation import read_queue_conditions, record_preemption
from allocations.clusters.rendering import (
    gpu_request_render,
)
from allocations.clusters.workloads import cluster_gateway
from allocations.lifecycle import InvalidTransition, gpu_request_transition
from allocations.models import (
    GpuRequest,
    RequestEvent,
    RequestStatus,
)
from allocations.notifications import notify_expiry_soon_on_commit
from gpucore.manifests import (
    ManifestError,
    is_request_owned,
)

logger = logging.getLogger(__name__)
SYSTEM = "system:provisioning"
# Phases in which every wanted pod runs (or the cluster cannot be observed, as with a GitOps tree). A finished Job is
# not running: it ends its request (``_end_finished``).
RUNNING_PHASES = frozenset({"Running", "Unobservable"})
JOB_FINISHED = "system:job-finished"
# The key of that event's details naming the Job's condition: "Complete" or "Failed".
JOB_CONDITION_DETAIL = "job_condition"


def _load(request_id: int) -> GpuRequest | None:
    return (
        GpuRequest.objects.select_related("team", "cluster", "node_pool__gpu_model", "sla_tier")
        .filter(pk=request_id)
        .first()
    )


@dataclass(frozen=True)
class Outcome:
    """What a provisioning step did, for logs and task results."""

    request_id: int
    action: str
    detail: str = ""


def _observe(request: GpuRequest, status: WorkloadStatus, queue_conditions: list[dict[str, str]] | None) -> Outcome:
    """Record what the cluster says (and Kueue, where it queues), and move provisioning -> active once the workload
    runs; a new preemption of tier-3 work is written and its owner told.

    Raises InvalidTransition when the request ended (released, expired) since it was read.
    """
    with transaction.atomic():
        current = GpuRequest.objects.select_for_update().get(pk=request.pk)
        if current.status not in (RequestStatus.PROVISIONING, RequestStatus.ACTIVE):
            raise InvalidTransition(current, RequestStatus.ACTIVE)
        request.status = current.status
        if queue_conditions is not None:
            record_preemption(request=request, previous=current.queue_conditions or [], current=queue_conditions)
        return _record_observation(request, status, queue_conditions)


def _record_observation(
    request: GpuRequest, status: WorkloadStatus, queue_conditions: list[dict[str, str]] | None = None
) -> Outcome:
    now = timezone.now()
    if status.phase in RUNNING_PHASES:
        detail = status.message or "Running."
    elif status.phase == "Pending":
        detail = f"Pending: {status.pending_reason or 'waiting for the scheduler.'}"
    else:
        detail = status.message or status.phase
    updates: dict[str, Any] = {"observed_phase": status.phase, "observed_at": now, "status_detail": detail}
    if queue_conditions is not None:
        updates["queue_conditions"] = queue_conditions
    if status.finished_at is not None:
        return _end_finished(request, status, updates)
    if request.status == RequestStatus.PROVISIONING and status.phase in RUNNING_PHASES:
        # Billing counts GPUs held from activated_at (allocation_intervals): a re-apply of a running request keeps
        # its first activation; after a failure the held span starts again (the failed one held nothing).
        updates["activated_at"] = request.activated_at if _held_since_activation(request) else now
        if request.expires_at is None and request.duration_hours:
            updates["expires_at"] = now + timedelta(hours=float(request.duration_hours))
        gpu_request_transition(
            request=request, to_status=RequestStatus.ACTIVE, acting_user=None, actor_label=SYSTEM, updates=updates
        )
        return Outcome(request.pk, "activated", detail)
    GpuRequest.objects.filter(pk=request.pk).update(**updates)
    return Outcome(request.pk, "observed", detail)


def _end_finished(request: GpuRequest, status: WorkloadStatus, updates: dict[str, Any]) -> Outcome:
    """A Job that completed or failed ends its request (released, with the reason): its quota frees at once and
    billing counts its GPUs until the Job's end, not until the request would have expired."""
    now = timezone.now()
    started = request.activated_at or request.approved_at
    # The Job's clock, bounded by ours: never in the future, never before the request began holding GPUs.
    ended = min(status.finished_at or now, now)
    if started is not None:
        ended = max(ended, started)
    if status.phase == "Succeeded":
        reason = f"The Job completed at {ended:%Y-%m-%d %H:%M} UTC."
    else:
        reason = f"The Job failed at {ended:%Y-%m-%d %H:%M} UTC: {status.message or 'no reason given'}."
    updates = {**updates, "status_detail": reason[:2000], "ended_at": ended}
    gpu_request_transition(
        request=request,
        to_status=RequestStatus.RELEASED,
        acting_user=None,
        actor_label=JOB_FINISHED,
        comment=reason,
        updates=updates,
        # The Job's own condition, for the request page's "ended Complete at ..." (allocations.requests.run_time).
        details={JOB_CONDITION_DETAIL: "Complete" if status.phase == "Succeeded" else "Failed"},
    )
    return Outcome(request.pk, "completed" if status.phase == "Succeeded" else "job-failed", reason)


def _held_since_activation(request: GpuRequest) -> bool:
    """Whether the request was activated before and has held its GPUs since (no failure in between)."""
    if request.activated_at is None:
        return False
    failed = RequestEvent.objects.filter(request=request, to_status=RequestStatus.FAILED, at__gte=request.activated_at)
    return not failed.exists()


def gpu_request_provision(*, request_id: int, task_id: str = "", gateway: ClusterGateway | None = None) -> Outcome:
    """Render and apply an approved (or re-applied) request, then observe it; safe to run again at any point.

    ``gateway`` defaults to the request's cluster gateway.
    """
    request = _load(request_id)
    if request is None:
        return Outcome(request_id, "missing")
    if request.status == RequestStatus.APPROVED:
        try:
            gpu_request_transition(
                request=request,
                to_status=RequestStatus.PROVISIONING,
                acting_user=None,
                actor_label=SYSTEM,
                updates={"last_task_id": task_id} if task_id else None,
                from_statuses=frozenset({RequestStatus.APPROVED}),
            )
        except InvalidTransition as exc:
            # Another delivery of this task (the sweeper's re-queue, a redelivered message) started it since we read
            # it: carry on as a re-apply, which is idempotent, rather than fail with an error on a healthy request.
            request.status = exc.from_status
    if request.status not in (RequestStatus.PROVISIONING, RequestStatus.ACTIVE):
        return Outcome(request_id, "skipped", f"status is {request.status}")
    if request.cluster is None:
        return _fail(request, "The request has no cluster to run on.")
    try:
        objects = gpu_request_render(request=request)
    except ManifestError as exc:
        return _fail(request, f"The request cannot be rendered for pool {request.node_pool}: {exc}")
    gateway = gateway or cluster_gateway(request.cluster)
    try:
        result = gateway.apply(objects)
        status = gateway.workload_status(namespace=request.team.namespace, request_id=request.pk)
        queue_conditions = read_queue_conditions(gateway, request)
    except PermanentGatewayError as exc:
        return _fail(request, f"The cluster refused the objects: {exc}")
    if result.drifted and request.status == RequestStatus.ACTIVE:
        logger.info("request %s: re-applied drifted objects %s", request.pk, ", ".join(map(str, result.drifted)))
    try:
        return _observe(request, status, queue_conditions)
    except InvalidTransition:
        pass
    # A release or expiry committed while we applied: its teardown may already have run, so take back what this
    # apply (re)created rather than leave GPUs held by a request that billing counts as ended.
    withdrawn = gateway.delete([obj for obj in objects if is_request_owned(obj)])
    return Outcome(request.pk, "withdrawn", ", ".join(map(str, withdrawn)))


def _fail(request: GpuRequest, message: str) -> Outcome:
    gpu_request_transition(
        request=request,
        to_status=RequestStatus.FAILED,
        acting_user=None,
        actor_label=SYSTEM,
        comment=message,
        updates={"status_detail": message},
    )
    return Outcome(request.pk, "failed", message)


def gpu_request_record_error(*, request_id: int, message: str, task_id: str = "") -> None:
    """Keep a task's readable error and id on the request without changing its status (a failure hook)."""
    GpuRequest.objects.filter(pk=request_id).update(status_detail=message[:2000], last_task_id=task_id)


def gpu_request_teardown(*, request_id: int) -> Outcome:
    """Delete the request's own objects from its cluster (shared namespace objects stay); idempotent."""
    request = _load(request_id)
    if request is None or request.cluster is None:
        return Outcome(request_id, "missing")
    if request.status not in (RequestStatus.RELEASED, RequestStatus.EXPIRED, RequestStatus.FAILED):
        return Outcome(request_id, "skipped", f"status is {request.status}")
    owned = [obj for obj in (request.manifests or []) if is_request_owned(obj)]
    if not owned:
        # Nothing of its own was ever rendered: nothing can be running, and the sweeper need not come back.
        GpuRequest.objects.filter(pk=request.pk).update(observed_phase="NotFound", observed_at=timezone.now())
        return Outcome(request_id, "nothing-to-delete")
    deleted = cluster_gateway(request.cluster).delete(owned)
    GpuRequest.objects.filter(pk=request.pk).update(
        observed_phase="NotFound", observed_at=timezone.now(), status_detail="Workload removed from the cluster."
    )
    return Outcome(request_id, "deleted", ", ".join(map(str, deleted)))


# A request in approved or provisioning with no progress for this long is handed to provisioning again, and a released
# or expired one not yet seen removed to teardown: the message published on commit may have been lost (a Redis restart,
# a crash between commit and publish).
STUCK_AFTER = timedelta(minutes=2)


def stuck_request_ids(now: Any = None) -> list[int]:
    """Requests approved or provisioning whose last change is older than STUCK_AFTER."""
    now = now or timezone.now()
    return list(
        GpuRequest.objects.filter(
            status__in=(RequestStatus.APPROVED, RequestStatus.PROVISIONING), updated_at__lt=now - STUCK_AFTER
        ).values_list("pk", flat=True)
    )


def unremoved_request_ids(now: Any = None) -> list[int]:
    """Released or expired requests whose workload was never seen removed, their last change older than STUCK_AFTER:
    the teardown message was lost (a Redis restart) or its retries ran out, and the GPUs may still be held."""
    now = now or timezone.now()
    return list(
        GpuRequest.objects.filter(
            status__in=(RequestStatus.RELEASED, RequestStatus.EXPIRED),
            manifests_rendered_at__isnull=False,
            cluster__isnull=False,
            updated_at__lt=now - STUCK_AFTER,
        )
        .exclude(observed_phase="NotFound")
        .values_list("pk", flat=True)
    )


def active_request_ids() -> list[int]:
    """Requests whose workload should be running, to observe and re-apply on drift."""
    return list(GpuRequest.objects.filter(status=RequestStatus.ACTIVE).values_list("pk", flat=True))


def gpu_requests_expire(*, now: Any = None) -> tuple[list[int], list[int]]:
    """Expire requests past their expiry and return (expired ids, ids whose owner is told it expires in a day)."""
    now = now or timezone.now()
    running = (RequestStatus.APPROVED, RequestStatus.PROVISIONING, RequestStatus.ACTIVE)
    expired = []
    # A suspended request still ends at its expiry (its volume and objects are then removed).
    ending = (*running, RequestStatus.SUSPENDED)
    for request in GpuRequest.objects.filter(status__in=ending, expires_at__lte=now):
        gpu_request_transition(
            request=request,
            to_status=RequestStatus.EXPIRED,
            acting_user=None,
            actor_label="system:expiry",
            comment=f"Expired at {request.expires_at:%Y-%m-%d %H:%M} UTC.",
        )
        expired.append(request.pk)
    warned = []
    soon = GpuRequest.objects.filter(
        status__in=running, expires_at__gt=now, expires_at__lte=now + timedelta(days=1), expiry_notified_at=None
    )
    for request in soon:
        with transaction.atomic():
            if GpuRequest.objects.filter(pk=request.pk, expiry_notified_at=None).update(expiry_notified_at=now):
                notify_expiry_soon_on_commit(request)
                warned.append(request.pk)
    return expired, warned
