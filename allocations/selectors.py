"""Reads: what a user may see, the catalog as the decision framework wants it, quota usage."""

from __future__ import annotations

from decimal import Decimal

from django.contrib.auth.models import AbstractBaseUser, AnonymousUser
from django.db.models import Q, QuerySet, Sum

from allocations.decision.catalog import Catalog, GpuModelSpec, MigProfile
from allocations.decision.sla import IsolationFloor, SlaTierSpec
from allocations.models import (
    QUOTA_HOLDING_STATUSES,
    GpuModel,
    GpuRequest,
    Membership,
    Quota,
    Role,
    SlaTier,
    Team,
)

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


def teams_led_by(user: User) -> QuerySet[Team]:
    """The teams the user leads."""
    if not user.is_authenticated:
        return Team.objects.none()
    return Team.objects.filter(memberships__user=user, memberships__role=Role.LEAD).distinct()


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
    team_rows = []
    for team in teams:
        quotas = [
            {"quota": quota, "used": quota_usage(team=team, resource_name=quota.resource_name, quota=quota)}
            for quota in team.quotas.all()
        ]
        team_rows.append({"team": team, "quotas": quotas})
    recent = gpu_requests_visible_to(user=user).filter(team__in=teams)[:10] if teams else []
    return {"team_rows": team_rows, "recent_requests": recent}


def quota_usage_by_quota(*, quotas: list[Quota]) -> dict[int, int]:
    """Units each quota's team holds against it now, by quota id, in one query (counted as ``quota_usage`` does)."""
    if not quotas:
        return {}
    held = (
        GpuRequest.objects.filter(
            team_id__in={quota.team_id for quota in quotas},
            resource_name__in={quota.resource_name for quota in quotas},
            status__in=QUOTA_HOLDING_STATUSES,
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
    from django.db.models import Prefetch  # local: this addition leaves the module's shared imports untouched

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
    from allocations.models import RequestStatus

    role = membership_role(user=user, team=request.team)
    approver = user_is_approver(user)
    owner_or_lead = (request.requester_id == user.pk and role is not None) or role == Role.LEAD or approver
    pending = request.status in (RequestStatus.DRAFT, RequestStatus.PENDING_APPROVAL)
    releasable = request.status in (
        RequestStatus.APPROVED,
        RequestStatus.PROVISIONING,
        RequestStatus.ACTIVE,
        RequestStatus.FAILED,
    )
    review = approver and request.status == RequestStatus.PENDING_APPROVAL
    return {
        "cancel": owner_or_lead and pending,
        "release": owner_or_lead and releasable,
        "review": review and request.requester_id != user.pk,
        "own_request_pending_review": review and request.requester_id == user.pk,
    }


def approval_queue(*, user: User) -> list[dict[str, object]]:
    """Pending requests, oldest first, each with the quota headroom it would draw on (approvers only)."""
    from allocations.models import RequestStatus
    from allocations.quotas import quota_headroom

    if not user_is_approver(user):
        return []
    pending = (
        gpu_requests_visible_to(user=user)
        .filter(status=RequestStatus.PENDING_APPROVAL)
        .order_by("submitted_at", "created_at", "id")
    )
    rows = []
    for request in pending:
        headroom = quota_headroom(team=request.team, resource_name=request.resource_name, node_pool=request.node_pool)
        fits = bool(headroom) and all(item.available >= request.resource_units for item in headroom)
        rows.append({"request": request, "headroom": headroom, "fits": fits})
    return rows


def team_overview(*, user: User, slug: str) -> dict[str, object]:
    """A team page: members and roles, quota use per resource, active allocations; Team.DoesNotExist if not visible."""
    team = teams_visible_to(user).get(slug=slug)
    memberships = team.memberships.select_related("user").order_by("role", "user__username")
    quota_rows = list(team.quotas.select_related("cluster", "node_pool__cluster"))
    usage = quota_usage_by_quota(quotas=quota_rows)
    quotas = [{"quota": quota, "used": usage.get(quota.pk, 0)} for quota in quota_rows]
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
