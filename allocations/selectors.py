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


def catalog_from_db() -> Catalog:
    """The GPU catalog as the decision framework takes it, built from the GpuModel table (admins may edit it)."""
    models = []
    for row in GpuModel.objects.prefetch_related("mig_profiles").order_by("name"):
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
        models.append(
            GpuModelSpec(
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
        )
    return Catalog(tuple(models))


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
