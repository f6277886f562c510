"""Reads: what a user may see, the catalog as the decision framework wants it, quota usage."""

from __future__ import annotations

from collections.abc import Iterable
from decimal import Decimal

from django.contrib.auth.models import AbstractBaseUser, AnonymousUser
from django.db.models import Prefetch, Q, QuerySet, Sum

from allocations.models import (
    QUOTA_HOLDING_STATUSES,
    AllocationExtension,
    Cluster,
    ExtensionStatus,
    GpuModel,
    GpuRequest,
    Membership,
    NodePool,
    Quota,
    RequestStatus,
    Role,
    SlaTier,
    Team,
)
from gpucore.catalog import Catalog, GpuModelSpec, MigProfile
from gpucore.sla import SlaTierSpec
from gpucore.vocabulary import IsolationFloor

APPROVE_PERMISSION = "allocations.approve_gpurequest"
APPROVERS_GROUP = "Platform approvers"

User = AbstractBaseUser | AnonymousUser


def user_is_approver(user: User) -> bool:
    """Platform approvers: staff users, and users holding the approve permission (the approvers group has it)."""
    if not user.is_authenticated or not user.is_active:
        return False
    return bool(user.is_staff or user.has_perm(APPROVE_PERMISSION))


def teams_of(user: User) -> QuerySet[Team]:
    """The teams the user belongs to (any role)."""
    if not user.is_authenticated:
        return Team.objects.none()
    return Team.objects.filter(memberships__user=user).distinct()


def teams_visible_to(user: User) -> QuerySet[Team]:
    """Teams the user may see: their own; approvers see every team."""
    if user_is_approver(user):
        return Team.objects.all()
    return teams_of(user)


def gpu_requests_visible_to(*, user: User) -> QuerySet[GpuRequest]:
    """Requests the user may see: their teams' requests; approvers see all. Every endpoint starts here."""
    qs = GpuRequest.objects.select_related("team", "requester", "sla_tier", "cluster", "node_pool")
    if user_is_approver(user):
        return qs
    if not user.is_authenticated:
        return qs.none()
    return qs.filter(team__memberships__user=user).distinct()


def membership_role(*, user: User, team: Team) -> str | None:
    """The user's role in the team, or None when not a member."""
    if not user.is_authenticated:
        return None
    return Membership.objects.filter(user=user, team=team).values_list("role", flat=True).first()


def quota_usage(*, team: Team, resource_name: str, quota: Quota | None = None) -> int:
    """Units of a resource the team holds now (approved, provisioning or active), within the quota's scope."""
    qs = GpuRequest.objects.filter(team=team, resource_name=resource_name, status__in=QUOTA_HOLDING_STATUSES)
    if quota is not None and quota.node_pool_id:
        qs = qs.filter(node_pool_id=quota.node_pool_id)
    elif quota is not None and quota.cluster_id:
        qs = qs.filter(Q(cluster_id=quota.cluster_id) | Q(node_pool__cluster_id=quota.cluster_id))
    return int(qs.aggregate(total=Sum("resource_units"))["total"] or 0)


def gpu_model_spec(row: GpuModel) -> GpuModelSpec:
    """A GpuModel row (with its MIG profiles) as the pure GpuModelSpec the framework and manifests take."""
    profiles = tuple(
        MigProfile(
            name=p.name,
            memory_gb=p.memory_gb,
            compute_slices=p.compute_slices,
            memory_slices=p.memory_slices,
            max_instances=p.max_instances,
            placement_starts=tuple(p.placement_starts or ()),
            recommendable=p.recommendable,
        )
        for p in row.mig_profiles.all()
    )
    return GpuModelSpec(
        name=row.name,
        memory_gb=row.memory_gb,
        product_label=row.product_label,
        tdp_watts=row.tdp_watts,
        family=row.family,
        purchase_price_usd=row.purchase_price,
        list_hourly_usd=row.list_hourly_price,
        mig_compute_slices=row.mig_compute_slices,
        mig_memory_slices=row.mig_memory_slices,
        mig_profiles=profiles if row.mig_capable else (),
        dcgm_model_names=tuple(row.dcgm_model_names or ()),
        aliases=tuple(row.aliases or ()),
        notes=row.notes,
        price_source=row.price_source,
        dense_fp16_tflops=row.dense_fp16_tflops,
        throughput_source=row.throughput_source,
    )


def catalog_from_db() -> Catalog:
    """The GPU catalog as the decision framework takes it, built from the GpuModel table (admins may edit it)."""
    rows = GpuModel.objects.prefetch_related("mig_profiles").order_by("name")
    return Catalog(tuple(gpu_model_spec(row) for row in rows))


def tier_spec(tier: SlaTier) -> SlaTierSpec:
    """An SlaTier row as the pure SlaTierSpec the decision framework and manifests take."""
    return SlaTierSpec(
        slug=tier.slug,
        name=tier.name,
        isolation_floor=IsolationFloor(tier.isolation_floor),
        priority_class_name=tier.priority_class_name,
        priority_value=tier.priority_value,
        price_multiplier=Decimal(tier.price_multiplier),
        latency_p99_ms=tier.latency_p99_ms,
        availability_pct=tier.availability_pct,
        preemptible=tier.preemptible,
        default_time_slice_replicas=tier.default_time_slice_replicas,
        description=tier.description,
    )


def tiers_by_slug() -> dict[str, SlaTierSpec]:
    """Every SLA tier, keyed by slug."""
    return {tier.slug: tier_spec(tier) for tier in SlaTier.objects.all()}


def home_overview(*, user: User) -> dict[str, object]:
    """What the home page shows: the user's teams with quota use, and their latest requests."""
    teams = list(teams_of(user).prefetch_related("quotas__cluster", "quotas__node_pool__cluster"))
    usage = quota_usage_by_quota(quotas=[quota for team in teams for quota in team.quotas.all()])
    team_rows = [
        {"team": team, "quotas": [{"quota": quota, "used": usage[quota.pk]} for quota in team.quotas.all()]}
        for team in teams
    ]
    recent = gpu_requests_visible_to(user=user).filter(team__in=teams)[:10] if teams else []
    return {"team_rows": team_rows, "recent_requests": recent}


def quota_usage_by_quota(*, quotas: list[Quota], statuses: Iterable[str] = QUOTA_HOLDING_STATUSES) -> dict[int, int]:
    """Units each quota's team holds against it now, by quota id, in one query (counted as ``quota_usage`` does).

    ``statuses`` narrows the count, e.g. to what is running (active) rather than everything approved.
    """
    if not quotas:
        return {}
    held = (
        GpuRequest.objects.filter(
            team_id__in={quota.team_id for quota in quotas},
            resource_name__in={quota.resource_name for quota in quotas},
            status__in=list(statuses),
        )
        .values("team_id", "resource_name", "cluster_id", "node_pool_id", "node_pool__cluster_id")
        .annotate(units=Sum("resource_units"))
        .order_by()
    )
    rows = list(held)
    usage: dict[int, int] = {}
    for quota in quotas:
        total = 0
        for row in rows:
            if row["team_id"] != quota.team_id or row["resource_name"] != quota.resource_name:
                continue
            if quota.node_pool_id and row["node_pool_id"] != quota.node_pool_id:
                continue
            if quota.cluster_id and quota.cluster_id not in (row["cluster_id"], row["node_pool__cluster_id"]):
                continue
            total += int(row["units"] or 0)
        usage[quota.pk] = total
    return usage


def teams_with_quotas_visible_to(*, user: User) -> QuerySet[Team]:
    """Teams the user may see, with their members and quotas loaded (for the teams API)."""
    return teams_visible_to(user).prefetch_related(
        Prefetch("memberships", queryset=Membership.objects.select_related("user").order_by("user__username")),
        Prefetch("quotas", queryset=Quota.objects.select_related("cluster", "node_pool__cluster")),
    )


# --- Reads for the browser pages (allocations/views.py) ----------------------------------------------------------


def gpu_request_detail(*, user: User, pk: int) -> GpuRequest:
    """One request the user may see, with its events; raises GpuRequest.DoesNotExist for anything else (a 404)."""
    return gpu_requests_visible_to(user=user).prefetch_related("events__actor").get(pk=pk)


def gpu_request_actions(*, user: User, request: GpuRequest) -> dict[str, bool]:
    """Which buttons the detail page shows this user; the services enforce the same rules on submit."""
    from allocations.services import RELEASABLE_STATUSES  # local: services import this module

    role = membership_role(user=user, team=request.team)
    approver = user_is_approver(user)
    owner_or_lead = (request.requester_id == user.pk and role is not None) or role == Role.LEAD or approver
    pending = request.status in (RequestStatus.DRAFT, RequestStatus.PENDING_APPROVAL)
    releasable = request.status in RELEASABLE_STATUSES
    review = approver and request.status == RequestStatus.PENDING_APPROVAL
    return {
        "cancel": owner_or_lead and pending,
        "release": owner_or_lead and releasable,
        "review": review and request.requester_id != user.pk,
        "own_request_pending_review": review and request.requester_id == user.pk,
        "extend": owner_or_lead and _extendable_now(request),
    }


def approval_queue(*, user: User) -> list[dict[str, object]]:
    """Pending requests, oldest first, each with the quota headroom it would draw on (approvers only)."""
    from allocations.quotas import quota_headroom_by_request  # local: quotas import this module

    if not user_is_approver(user):
        return []
    pending = list(
        gpu_requests_visible_to(user=user)
        .filter(status=RequestStatus.PENDING_APPROVAL)
        .order_by("submitted_at", "created_at", "id")
    )
    headroom_by_request = quota_headroom_by_request(requests=pending)
    rows = []
    for request in pending:
        headroom = headroom_by_request[request.pk]
        fits = bool(headroom) and all(item.available >= request.resource_units for item in headroom)
        rows.append({"request": request, "headroom": headroom, "fits": fits})
    return rows


def team_overview(*, user: User, slug: str) -> dict[str, object]:
    """A team page: members and roles, quota use per resource, active allocations; Team.DoesNotExist if not visible."""
    team = teams_visible_to(user).get(slug=slug)
    memberships = team.memberships.select_related("user").order_by("role", "user__username")
    quota_rows = list(team.quotas.select_related("cluster", "node_pool__cluster"))
    usage = quota_usage_by_quota(quotas=quota_rows)
    running = quota_usage_by_quota(quotas=quota_rows, statuses=[RequestStatus.ACTIVE])
    quotas = [
        {
            "quota": quota,
            "used": usage.get(quota.pk, 0),
            "running": running.get(quota.pk, 0),
            # Units held beyond the nominal quota: lent by the cohort to preemptible (tier 3) requests.
            "borrowed": max(usage.get(quota.pk, 0) - quota.limit, 0),
        }
        for quota in quota_rows
    ]
    allocations = (
        gpu_requests_visible_to(user=user)
        .filter(team=team, status__in=QUOTA_HOLDING_STATUSES)
        .order_by("-approved_at", "-id")
    )
    return {
        "team": team,
        "memberships": memberships,
        "quotas": quotas,
        "allocations": allocations,
        "role": membership_role(user=user, team=team),
    }


# --- Provisioning views: a request's manifests and live status, the clusters page (platform admins) ----------------

# While a request is on its way to the cluster its status changes without anyone acting: the page polls.
POLLING_STATUSES = frozenset({"approved", "provisioning"})
DRIFT_PHASES = ("NotFound", "Pending")


def gpu_request_manifests_yaml(*, request: GpuRequest) -> str:
    """The request's last rendered Kubernetes objects as one multi-document YAML ('' before the first render)."""
    from gpucore.manifests import to_yaml

    return to_yaml(request.manifests) if request.manifests else ""


def gpu_request_live_status(*, request: GpuRequest) -> dict[str, object]:
    """What the cluster last said about a request, the causes and fixes of a stuck workload, and whether to poll."""
    from gpucore.troubleshooting import troubleshoot

    phase = request.observed_phase
    hints = troubleshoot(request.status_detail, phase=phase)
    waiting = phase == "Pending" and request.status == "active"
    return {
        "status": request.status,
        "status_display": request.get_status_display(),
        "observed_phase": phase,
        "observed_at": request.observed_at,
        "status_detail": request.status_detail,
        "hints": hints,
        "manifests_rendered_at": request.manifests_rendered_at,
        "manifest_count": len(request.manifests or []),
        "polling": request.status in POLLING_STATUSES or waiting,
    }


def clusters_visible_to(*, user: User) -> QuerySet[Cluster]:
    """Clusters the user may inspect: every one for platform admins (approvers and staff), none for anyone else."""
    if not user_is_approver(user):
        return Cluster.objects.none()
    return Cluster.objects.all()


def _allocated_by_pool(*, cluster_ids: list[int]) -> dict[int, dict[str, int]]:
    """Units held now (approved, provisioning, active) per node pool and resource name, in one query."""
    rows = (
        GpuRequest.objects.filter(node_pool__cluster_id__in=cluster_ids, status__in=QUOTA_HOLDING_STATUSES)
        .values("node_pool_id", "resource_name")
        .annotate(units=Sum("resource_units"))
        .order_by()
    )
    held: dict[int, dict[str, int]] = {}
    for row in rows:
        held.setdefault(row["node_pool_id"], {})[row["resource_name"]] = int(row["units"] or 0)
    return held


def node_pool_capacity_rows(*, pool: NodePool, allocated: dict[str, int]) -> dict[str, object]:
    """One pool's capacity per resource: configured, observed by inventory sync, allocated, free, and any drift."""
    observed = dict(pool.observed_allocatable or {})
    observed_nodes = observed.pop("nodes", None)
    synced = pool.observed_at is not None
    configured = pool.capacity()
    resources = list(dict.fromkeys([*configured, *allocated, *(observed if synced else {})]))
    rows = []
    for resource in resources:
        want = configured.get(resource, 0)
        seen = observed.get(resource, 0) if synced else None
        held = allocated.get(resource, 0)
        rows.append(
            {
                "resource": resource,
                "configured": want,
                "observed": seen,
                "allocated": held,
                "free": want - held,
                "over": held > want,
                "drift": synced and seen != want,
            }
        )
    node_drift = synced and observed_nodes is not None and observed_nodes != pool.node_count
    return {
        "pool": pool,
        "rows": rows,
        "synced": synced,
        "observed_nodes": observed_nodes,
        "node_drift": node_drift,
        "drift": node_drift or any(row["drift"] for row in rows),
    }


def cluster_overview_rows(*, user: User) -> list[dict[str, object]]:
    """Every cluster with its pools' GPUs, units allocated, last inventory sync and drift (platform approvers only)."""
    clusters = list(clusters_visible_to(user=user).prefetch_related("node_pools__gpu_model").order_by("name"))
    held = _allocated_by_pool(cluster_ids=[cluster.pk for cluster in clusters])
    rows = []
    for cluster in clusters:
        pools = [
            node_pool_capacity_rows(pool=pool, allocated=held.get(pool.pk, {})) for pool in cluster.node_pools.all()
        ]
        synced_at = [item["pool"].observed_at for item in pools if item["synced"]]
        rows.append(
            {
                "cluster": cluster,
                "pool_count": len(pools),
                "gpu_total": sum(item["pool"].gpu_total for item in pools),
                "allocated": sum(row["allocated"] for item in pools for row in item["rows"]),
                "last_synced": max(synced_at) if synced_at else None,
                "never_synced": sum(1 for item in pools if not item["synced"]),
                "drifted_pools": sum(1 for item in pools if item["drift"]),
            }
        )
    return rows


def cluster_gpu_operator_configs(*, pools: list[NodePool]) -> list[dict[str, object]]:
    """The GPU Operator ConfigMaps of a cluster's pools (time-slicing, mig-parted) as YAML, or why one cannot render."""
    from allocations.provisioning import pool_context
    from gpucore.manifests import ManifestError, render_mig_parted_configmap, render_time_slicing_configmap, to_yaml
    from gpucore.vocabulary import SharingMode

    configs = []
    renderers = (
        (
            "Device plugin (time-slicing)",
            "ClusterPolicy devicePlugin.config.name; nodes of a time-slicing pool carry "
            "nvidia.com/device-plugin.config=<pool name>.",
            SharingMode.TIME_SLICING,
            lambda contexts: render_time_slicing_configmap(contexts),
        ),
        (
            "MIG manager (mig-parted)",
            "ClusterPolicy migManager.config.name; nodes of a MIG pool carry nvidia.com/mig.config=<config name>.",
            SharingMode.MIG,
            lambda contexts: render_mig_parted_configmap(contexts, catalog=catalog_from_db()),
        ),
    )
    for title, usage, mode, render in renderers:
        chosen = [pool for pool in pools if pool.sharing_mode == mode.value]
        entry = {"title": title, "usage": usage, "pool_count": len(chosen), "yaml": "", "error": ""}
        try:
            entry["yaml"] = to_yaml([render([pool_context(pool) for pool in chosen])])
        except ManifestError as exc:
            entry["error"] = str(exc)
        configs.append(entry)
    return configs


def cluster_detail_overview(*, user: User, name: str) -> dict[str, object]:
    """A cluster page: pool capacity and drift, drifted requests, GPU Operator configs; Cluster.DoesNotExist if not."""

    cluster = clusters_visible_to(user=user).get(name=name)
    pools = list(cluster.node_pools.select_related("gpu_model").order_by("name"))
    held = _allocated_by_pool(cluster_ids=[cluster.pk])
    pool_rows = [node_pool_capacity_rows(pool=pool, allocated=held.get(pool.pk, {})) for pool in pools]
    drifted_requests = (
        gpu_requests_visible_to(user=user)
        .filter(cluster=cluster, status=RequestStatus.ACTIVE, observed_phase__in=DRIFT_PHASES)
        .order_by("observed_at", "id")
    )
    return {
        "cluster": cluster,
        "pool_rows": pool_rows,
        "drifted_requests": list(drifted_requests),
        "configs": cluster_gpu_operator_configs(pools=pools) if pools else [],
        "observable": cluster.backend == "kubernetes",
    }


# --- Allocation extensions (allocations/extension_services.py) -----------------------------------------------------


def _extendable_now(request: GpuRequest) -> bool:
    # The service's own rule (status, an end to extend), plus "no extension pending" (one at a time).
    from allocations.extension_services import extension_refusal  # local: it imports this module

    if extension_refusal(request) is not None:
        return False
    return not request.extensions.filter(status=ExtensionStatus.PENDING).exists()


def allocation_extensions_visible_to(*, user: User) -> QuerySet[AllocationExtension]:
    """Extensions of the requests the user may see (approvers: all). Every extension endpoint starts here."""
    visible = gpu_requests_visible_to(user=user).values("pk")
    return AllocationExtension.objects.select_related(
        "request__team", "request__requester", "requested_by", "decided_by"
    ).filter(request__in=visible)


def pending_extensions_queue(*, user: User) -> list[AllocationExtension]:
    """Pending extensions, oldest first, for the approval queue (approvers only)."""
    if not user_is_approver(user):
        return []
    pending = allocation_extensions_visible_to(user=user).filter(status=ExtensionStatus.PENDING)
    return list(pending.order_by("created_at", "id"))
