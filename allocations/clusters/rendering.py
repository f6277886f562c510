"""What a request's and a cluster's Kubernetes objects are rendered from: the contexts read from the database, and
the rendering that keeps them on the request or applies a cluster's shared objects."""

from __future__ import annotations

import logging
from datetime import datetime
from typing import Any

from django.conf import settings
from django.db.models import Q, Sum
from django.utils import timezone

from allocations.clusters.dynamic_mig import request_dynamic_mig_gpus
from allocations.clusters.gateways.base import ApplyResult, ClusterGateway
from allocations.clusters.kai_queues import kai_queue_contexts, kai_queues_for
from allocations.clusters.mig_layouts import mig_node_configs_of_cluster
from allocations.clusters.workloads import cluster_gateway
from allocations.models import (
    Cluster,
    ClusterScheduler,
    GpuRequest,
    NodePool,
    Quota,
    SlaTier,
    Team,
)
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
    queue_objects_for,
    render_cluster_objects,
    render_request_objects,
)

logger = logging.getLogger(__name__)


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
        scrape_max_age=int(getattr(settings, "BILLING_SCRAPE_MAX_AGE_SECONDS", 60)),
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
