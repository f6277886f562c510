"""Provisioning services: render a request's objects, apply them through its cluster's gateway, observe, tear down.

PostgreSQL is the source of truth. Every function re-reads the request, checks its status, and is safe to run twice:
server-side apply and file writes are idempotent, deletes tolerate what is already gone, and status changes go
through ``gpu_request_transition`` (row lock + event). Tasks call these and decide only about retries.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import transaction
from django.db.models import Q, Sum
from django.utils import timezone

from allocations.clusters.dynamic_mig import request_dynamic_mig_gpus
from allocations.clusters.gateways.base import ApplyResult, ClusterGateway, PermanentGatewayError, WorkloadStatus
from allocations.clusters.kai_queues import kai_queue_contexts, kai_queues_for
from allocations.clusters.mig_layouts import mig_node_configs_of_cluster
from allocations.clusters.queue_observation import read_queue_conditions, record_preemption
from allocations.clusters.workloads import cluster_gateway
from allocations.lifecycle import InvalidTransition, gpu_request_transition
from allocations.models import (
    Cluster,
    ClusterScheduler,
    GpuRequest,
    NodePool,
    Quota,
    RequestEvent,
    RequestStatus,
    SlaTier,
    Team,
)
from allocations.notifications import notify_expiry_soon_on_commit
from allocations.reference_data import catalog_from_db, tier_spec
from allocations.teams.reservation_holds import reserved_now_by_team_pool
from gpucore.dra_inventory import target_from_json
from gpucore.manifests import (
    ClusterContext,
    ClusterQueueContext,
    FlavorQuota,
    ManifestError,
    PoolContext,
    TeamContext,
    WorkloadContext,
    is_request_owned,
    queue_objects_for,
    render_cluster_objects,
    render_request_objects,
)

logger = logging.getLogger(__name__)
SYSTEM = "system:provisioning"
# Phases in which every wanted pod runs (or the cluster cannot be observed, as with a GitOps tree). A finished Job is
# not running: it ends its request (``_end_finished``).
RUNNING_PHASES = frozenset({"Running", "Unobservable"})
JOB_FINISHED = "system:job-finished"
# The key of that event's details naming the Job's condition: "Complete" or "Failed".
JOB_CONDITION_DETAIL = "job_condition"


def team_context(team: Team, cluster: Cluster) -> TeamContext:
    """The team's namespace and its quotas on this cluster (team-wide, cluster and pool quotas added up), with what
    its cluster and pool quotas may borrow (only they have a cohort)."""
    scope = Q(cluster__isnull=True, node_pool__isnull=True) | Q(cluster=cluster) | Q(node_pool__cluster=cluster)
    rows = (
        Quota.objects.filter(scope, team=team)
        .values("resource_name")
        .annotate(total=Sum("limit"), borrowing=Sum("borrowing_limit"))
    )
    return TeamContext(
        slug=team.slug,
        namespace=team.namespace,
        quotas={r["resource_name"]: r["total"] for r in rows},
        borrowing={r["resource_name"]: r["borrowing"] for r in rows if r["borrowing"]},
        egress_tcp_ports=list(cluster.egress_tcp_ports or []),
        cluster_queue=team.slug if cluster.scheduler == ClusterScheduler.KUEUE else None,
        kai_queue=team.slug if cluster.scheduler == ClusterScheduler.KAI else None,
    )


def pool_context(pool: NodePool) -> PoolContext:
    """A node pool as the renderer takes it."""
    return PoolContext(
        name=pool.name,
        gpu_model=pool.gpu_model.name,
        product_label=pool.gpu_model.product_label,
        sharing_mode=pool.sharing_mode,
        time_slice_replicas=pool.time_slice_replicas,
        node_labels=dict(pool.node_labels or {}),
        taints=list(pool.taints or []),
        mig_devices=dict(pool.mig_devices or {}),
        live_mig_layouts=[
            row["layout"] for row in sorted(pool.live_mig_layouts or [], key=lambda row: -int(row["gpus"]))
        ],
        rename_by_default=pool.rename_by_default,
        topology_level=pool.topology_level or None,
        topology_required=pool.topology_required,
    )


def workload_context(request: GpuRequest) -> WorkloadContext:
    """Everything the renderer needs about one request, from its frozen spec and its team, tier and pool."""
    # The default image's probe paths are configured with it (Triton's by default); an image the requester chose
    # has unknown health endpoints, so it is probed over TCP rather than restarted forever on a wrong path.
    default_image = not request.image
    return WorkloadContext(
        request_id=request.pk,
        name=request.name,
        workload_type=request.workload_type,
        image=request.image or settings.PORTAL_DEFAULT_IMAGES[request.workload_type],
        # The default image's default command where it has one (JupyterLab for development); submission refused
        # the other default images without a command.
        command=list(request.command or [])
        or (list(settings.PORTAL_DEFAULT_COMMANDS.get(request.workload_type, ())) if default_image else []),
        spec=request.spec,
        team=team_context(request.team, request.cluster),
        duration_hours=request.duration_hours,
        tier=tier_spec(request.sla_tier) if request.sla_tier else None,
        pool=pool_context(request.node_pool) if request.node_pool else None,
        health_path=(settings.PORTAL_INFERENCE_LIVENESS_PATH or None) if default_image else None,
        readiness_path=(settings.PORTAL_INFERENCE_READINESS_PATH or None) if default_image else None,
        caller_namespace_selector=settings.PORTAL_INFERENCE_CALLER_NAMESPACE_LABELS,
        device_api=request.cluster.device_api,
        dra_target=target_from_json((request.node_pool.observed_dra or {}).get("target"))
        if request.node_pool
        else None,
        model_memory_gib=request.gpu_memory_gb,
        dynamic_mig_gpus=request_dynamic_mig_gpus(request),
    )


def _flavor_quotas(
    quotas: list[Quota], pools: list[NodePool], reserved: dict[tuple[int, int, str], int] | None = None
) -> list[FlavorQuota]:
    """One team's quotas as Kueue flavor quotas: per pool and advertised resource, the most specific quota; inside
    an approved reservation's window, a nominal quota smaller than the reservation is raised to it and the borrowing
    limit lowered by as much (what the team may hold in all stays the same)."""
    # A pool quota wins over a cluster quota, which wins over a team-wide one. A cluster or team-wide quota
    # becomes a per-flavor ceiling on every pool advertising the resource (Kueue cannot bound a sum across
    # flavors); the portal's own check holds the total before anything reaches Kueue (docs/kubernetes-and-kueue.md,
    # "Kueue mode").
    result = []
    for pool in pools:
        for resource in sorted(pool.capacity()):
            candidates = [q for q in quotas if q.resource_name == resource]
            chosen = next(
                (q for q in candidates if q.node_pool_id == pool.pk),
                next(
                    (q for q in candidates if q.cluster_id == pool.cluster_id),
                    next((q for q in candidates if not q.in_cohort), None),
                ),
            )
            if chosen is None:
                continue
            borrowing = chosen.borrowing_limit if chosen.in_cohort else None
            raised = max((reserved or {}).get((chosen.team_id, pool.pk, resource), 0) - chosen.limit, 0)
            if raised and borrowing is not None:
                borrowing = max(borrowing - raised, 0)
            result.append(
                FlavorQuota(
                    flavor=pool.name,
                    resource=resource,
                    nominal=chosen.limit + raised,
                    borrowing_limit=borrowing,
                    lending_limit=chosen.lending_limit if chosen.in_cohort else None,
                )
            )
    return result


def cluster_context(cluster: Cluster, *, at: datetime | None = None) -> ClusterContext:
    """A cluster as its own objects need it: pools, SLA tiers and, on a Kueue cluster, every team's queue with the
    quota in force at ``at`` (now by default: reservation windows raise it)."""
    pools = list(cluster.node_pools.select_related("gpu_model").order_by("name"))
    tiers = [tier_spec(tier) for tier in SlaTier.objects.order_by("-priority_value", "slug")]
    queues = []
    if cluster.scheduler == ClusterScheduler.KUEUE:
        scope = Q(cluster__isnull=True, node_pool__isnull=True) | Q(cluster=cluster) | Q(node_pool__cluster=cluster)
        quotas = list(Quota.objects.filter(scope).select_related("team").order_by("team__slug", "pk"))
        by_team: dict[int, list[Quota]] = {}
        for quota in quotas:
            by_team.setdefault(quota.team_id, []).append(quota)
        reserved = reserved_now_by_team_pool(team_ids=set(by_team), at=at or timezone.now())
        for team_quotas in by_team.values():
            flavor_quotas = _flavor_quotas(team_quotas, pools, reserved)
            if flavor_quotas:
                team = team_quotas[0].team
                queues.append(
                    ClusterQueueContext(
                        team=TeamContext(slug=team.slug, namespace=team.namespace, cluster_queue=team.slug),
                        quotas=flavor_quotas,
                    )
                )
    return ClusterContext(
        name=cluster.name,
        scheduler=cluster.scheduler,
        pools=[pool_context(pool) for pool in pools],
        tiers=tiers,
        queues=queues,
        kai_queues=kai_queue_contexts(cluster, pools) if cluster.scheduler == ClusterScheduler.KAI else (),
        monitoring_namespace=cluster.monitoring_namespace or None,
        monitoring_labels=dict(cluster.monitoring_labels or {}),
        gpu_operator_namespace=cluster.gpu_operator_namespace,
        mig_node_configs=mig_node_configs_of_cluster(cluster.pk),
    )


def cluster_objects(cluster: Cluster, *, at: datetime | None = None) -> list[dict[str, Any]]:
    """The cluster's own objects (PriorityClasses, GPU Operator ConfigMaps, Kueue objects); ManifestError if bad."""
    try:
        return render_cluster_objects(cluster_context(cluster, at=at), catalog=catalog_from_db())
    except ManifestError as error:
        raise ManifestError(f"Cluster {cluster.name} cannot be rendered: {error}") from error


def cluster_objects_apply(
    *, cluster: Cluster, gateway: ClusterGateway | None = None, at: datetime | None = None
) -> ApplyResult:
    """Apply a cluster's own objects through its gateway (server-side apply or the GitOps tree); idempotent.

    Raises ManifestError when the cluster's pools or quotas cannot be rendered, GatewayError when the cluster
    refuses or cannot be reached.
    """
    result = (gateway or cluster_gateway(cluster)).apply(cluster_objects(cluster, at=at))
    if result.drifted:
        logger.info("cluster %s: re-applied drifted objects %s", cluster.name, ", ".join(map(str, result.drifted)))
    return result


def gpu_request_render(*, request: GpuRequest) -> list[dict[str, Any]]:
    """Render the request's objects and keep them on the request (the detail page and the API show them).

    On a Kueue cluster the team's ClusterQueue, the flavors and the priority classes come first, so the Job's
    queue exists (and has the current quotas) whenever the Job is applied; on a KAI cluster its parent and team
    Queue.
    """
    catalog = catalog_from_db()
    objects = render_request_objects(workload_context(request), catalog=catalog)
    if request.cluster.scheduler == ClusterScheduler.KUEUE:
        shared = render_cluster_objects(cluster_context(request.cluster), catalog=catalog)
        objects = [*queue_objects_for(shared, team_slug=request.team.slug), *objects]
    elif request.cluster.scheduler == ClusterScheduler.KAI:
        # The parent and the team's KAI queue exist before a pod names it (KAI leaves a pod of an unknown queue
        # pending).
        shared = render_cluster_objects(cluster_context(request.cluster), catalog=catalog)
        objects = [*kai_queues_for(shared, team_slug=request.team.slug), *objects]
    GpuRequest.objects.filter(pk=request.pk).update(manifests=objects, manifests_rendered_at=timezone.now())
    request.manifests = objects
    return objects


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
