"""Reads: what a user may see, the catalog as the decision framework wants it, quota usage."""

from __future__ import annotations

import functools
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.backends import ModelBackend
from django.contrib.auth.models import AbstractBaseUser, AnonymousUser, Group, Permission, PermissionsMixin
from django.contrib.contenttypes.models import ContentType
from django.db import connection, connections, router
from django.db.models import Case, Count, Func, OuterRef, Prefetch, Q, QuerySet, Subquery, Sum, TextField, When
from django.db.models.fields.json import KeyTransform
from django.db.models.functions import Cast, Coalesce, JSONObject
from django.utils.module_loading import import_string

from allocations.compiled_reads import ID_STAND_IN, CompiledRead
from allocations.gateways import gateway_for
from allocations.gateways.base import ClusterGateway, GatewayError, PodStatus, WorkloadEvent
from allocations.models import (
    QUOTA_HOLDING_STATUSES,
    TERMINAL_STATUSES,
    AllocationExtension,
    Cluster,
    ExtensionStatus,
    GpuModel,
    GpuRequest,
    Membership,
    Quota,
    RequestEvent,
    RequestStatus,
    SlaTier,
    Team,
)
from allocations.reference_cache import built_once
from gpucore.catalog import Catalog
from gpucore.manifests.access import WorkloadAccess, workload_access
from gpucore.sla import SlaTierSpec
from gpucore.vocabulary import IsolationFloor

APPROVE_PERMISSION = "allocations.approve_gpurequest"
APPROVERS_GROUP = "Platform approvers"

User = AbstractBaseUser | AnonymousUser


def user_is_approver(user: User) -> bool:
    """Platform approvers: staff users, and users holding the approve permission (the approvers group has it)."""
    if not user.is_authenticated or not user.is_active:
        return False
    if user.is_staff:
        return True
    if not user.is_superuser and not hasattr(user, "_perm_cache"):
        read_permissions(user)
    return bool(user.has_perm(APPROVE_PERMISSION))


def read_permissions(user: AbstractBaseUser) -> None:
    """Read the permissions of an active, non-superuser user, held directly and through groups, in one query, into
    the caches ModelBackend reads them from, so ``has_perm`` answers from them as it would from its own reads.

    ModelBackend reads them in two queries (27 % of an API detail call, issue #15). Nothing outlives the user object:
    the next request reads the user, and so the permissions, afresh. Where a configured backend answers permissions
    its own way (not ModelBackend's code) this does nothing and ``has_perm`` asks it.
    """
    if not _permissions_are_model_backends(user.__class__):  # __class__ sees through a lazy user
        return
    with connections[router.db_for_read(Permission)].cursor() as cursor:
        cursor.execute(_permissions_sql(), [user.pk, user.pk])
        rows = cursor.fetchall()
    held: dict[str, set[str]] = {"user": set(), "group": set()}
    for source, app_label, codename in rows:
        held[source].add(f"{app_label}.{codename}")
    # ModelBackend._get_permissions and get_all_permissions keep these three on the user object.
    user._user_perm_cache = held["user"]
    user._group_perm_cache = held["group"]
    user._perm_cache = held["user"] | held["group"]


@functools.cache
def _permissions_sql() -> str:
    user_model = get_user_model()
    user_permissions = user_model._meta.get_field("user_permissions").remote_field.through._meta.db_table
    user_groups = user_model._meta.get_field("groups").remote_field.through._meta.db_table
    group_permissions = Group._meta.get_field("permissions").remote_field.through._meta.db_table
    permissions, content_types = Permission._meta.db_table, ContentType._meta.db_table
    held = f"{permissions} p JOIN {content_types} ct ON ct.id = p.content_type_id"
    # Table names from the models' own metadata; the user id is a bound parameter.
    return (
        f"SELECT 'user', ct.app_label, p.codename FROM {held} JOIN {user_permissions} up "  # noqa: S608
        "ON up.permission_id = p.id WHERE up.user_id = %s "
        f"UNION ALL SELECT 'group', ct.app_label, p.codename FROM {held} JOIN {group_permissions} gp "
        f"ON gp.permission_id = p.id JOIN {user_groups} ug ON ug.group_id = gp.group_id WHERE ug.user_id = %s"
    )


def _permissions_are_model_backends(user_class: type) -> bool:
    """Whether ``has_perm`` means what ModelBackend reads (the user's and their groups' permissions): the user model's
    is Django's, and every configured backend that answers permissions is ModelBackend's own code."""
    return getattr(user_class, "has_perm", None) is PermissionsMixin.has_perm and _model_backends(
        tuple(settings.AUTHENTICATION_BACKENDS)
    )


@functools.lru_cache(maxsize=8)
def _model_backends(paths: tuple[str, ...]) -> bool:
    methods = ("has_perm", "get_all_permissions", "_get_permissions", "get_user_permissions", "get_group_permissions")
    methods += ("_get_user_permissions", "_get_group_permissions", "with_perm")
    for path in paths:
        backend = import_string(path)
        if not hasattr(backend, "has_perm"):
            continue
        if not issubclass(backend, ModelBackend) or any(
            getattr(backend, name) is not getattr(ModelBackend, name) for name in methods
        ):
            return False
    return True


def user_is_platform_admin(user: User) -> bool:
    """Platform admins: active staff accounts (the admin site's gate); what each may change is its model permissions."""
    return bool(user.is_authenticated and user.is_active and user.is_staff)


def teams_of(user: User) -> QuerySet[Team]:
    """The teams the user belongs to (any role)."""
    if not user.is_authenticated:
        return Team.objects.none()
    return Team.objects.filter(memberships__user=user).distinct()


# The home's teams and their quotas (cluster and pool joined), as teams_of() and a prefetch read them, through SQL
# compiled once per process: building these querysets cost ~1.7 ms of CPU per view, PostgreSQL ~0.2 ms (issue #15).
_TEAMS_OF = CompiledRead(
    Team, lambda user_id: Team.objects.filter(memberships__user_id=user_id).distinct(), stand_in=ID_STAND_IN
)
_QUOTAS_OF_TEAMS_OF = CompiledRead(
    Quota,
    lambda user_id: Quota.objects.filter(
        team_id__in=Membership.objects.filter(user_id=user_id).values("team_id")
    ).select_related("cluster", "node_pool__cluster"),
    stand_in=ID_STAND_IN,
)


def teams_with_quotas_of(user: User) -> list[tuple[Team, list[Quota]]]:
    """``teams_of(user)``, each with its quotas in ``Quota``'s order, their cluster and pool (with its cluster) loaded:
    two queries, read now."""
    if not user.is_authenticated:
        return []
    teams = _TEAMS_OF.instances(user.pk)
    if not teams:  # no quota to read (an approver or admin outside every team)
        return []
    quotas: dict[int, list[Quota]] = {team.pk: [] for team in teams}
    by_pk = {team.pk: team for team in teams}
    for quota in _QUOTAS_OF_TEAMS_OF.instances(user.pk):
        if quota.team_id in quotas:  # a team joined between the two reads is left for the next view
            quota.team = by_pk[quota.team_id]
            quotas[quota.team_id].append(quota)
    return [(team, quotas[team.pk]) for team in teams]


# The columns the home's request tables show (templates/_home_requests.html), read as plain rows.
HOME_REQUEST_COLUMNS = (
    "id",
    "name",
    "requester_id",
    "team__name",
    "workload_type",
    "resource_name",
    "resource_units",
    "status",
    "created_at",
)
HOME_REQUEST_LIMIT = 30
_LATEST_OF_TEAMS_OF = CompiledRead(
    GpuRequest,
    lambda user_id: GpuRequest.objects.filter(requests_of_member_teams(user_id=user_id)).values(*HOME_REQUEST_COLUMNS)[
        :HOME_REQUEST_LIMIT
    ],
    stand_in=ID_STAND_IN,
)


def latest_requests_of_teams_of(user: User) -> list[dict[str, Any]]:
    """The latest ``HOME_REQUEST_LIMIT`` requests of the user's teams (newest first) as ``HOME_REQUEST_COLUMNS`` rows,
    through SQL compiled once per process; visible to the user whatever their role (their own teams')."""
    if not user.is_authenticated:
        return []
    return _LATEST_OF_TEAMS_OF.values(user.pk)


def teams_visible_to(user: User) -> QuerySet[Team]:
    """Teams the user may see: their own; approvers see every team."""
    if user_is_approver(user):
        return Team.objects.all()
    return teams_of(user)


def gpu_requests_visible_to(*, user: User) -> QuerySet[GpuRequest]:
    """Requests the user may see: their teams' requests; approvers see all. Every endpoint starts here."""
    qs = GpuRequest.objects.select_related("team", "requester", "sla_tier", "cluster", "node_pool")
    scope = gpu_request_scope(user)
    if scope == "all":
        return qs
    if scope == "none":
        return qs.none()
    return qs.filter(requests_of_member_teams(user_id=user.pk))


def gpu_request_scope(user: User) -> str:
    """Which requests the user may see: ``"all"`` (approvers), ``"teams"`` (their teams', by
    ``requests_of_member_teams``) or ``"none"`` (anonymous): the rule of ``gpu_requests_visible_to``, for readers that
    build their own SQL from it (``allocations.api.request_rows``)."""
    if user_is_approver(user):
        return "all"
    if not user.is_authenticated:
        return "none"
    return "teams"


def requests_of_member_teams(*, user_id: int) -> Q:
    """The requests of the teams the user belongs to."""
    # team_id IN (the user's teams): a semi-join on the membership index, no join on the rows and no DISTINCT over
    # every column (which cost ~70 % of a list call and made COUNT(*) sort the whole visible set; issue #15).
    return Q(team_id__in=Membership.objects.filter(user_id=user_id).values("team_id"))


def membership_role(*, user: User, team: Team) -> str | None:
    """The user's role in the team, or None when not a member."""
    if not user.is_authenticated:
        return None
    return Membership.objects.filter(user=user, team=team).values_list("role", flat=True).first()


def team_roles_and_sizes(*, user: User, teams: list[Team]) -> tuple[dict[int, str], dict[int, int]]:
    """The user's role per team (where a member) and each team's member count, in two queries."""
    roles = dict(Membership.objects.filter(user=user, team__in=teams).values_list("team_id", "role"))
    sizes = Membership.objects.filter(team__in=teams).values("team_id").annotate(n=Count("id"))
    return roles, {row["team_id"]: row["n"] for row in sizes}


def quota_usage(*, team: Team, resource_name: str, quota: Quota | None = None) -> int:
    """Units of a resource the team holds now (approved, provisioning or active), within the quota's scope."""
    qs = GpuRequest.objects.filter(team=team, resource_name=resource_name, status__in=QUOTA_HOLDING_STATUSES)
    if quota is not None and quota.node_pool_id:
        qs = qs.filter(node_pool_id=quota.node_pool_id)
    elif quota is not None and quota.cluster_id:
        qs = qs.filter(Q(cluster_id=quota.cluster_id) | Q(node_pool__cluster_id=quota.cluster_id))
    return int(qs.aggregate(total=Sum("resource_units"))["total"] or 0)


def catalog_from_db() -> Catalog:
    """The GPU catalog as the decision framework takes it, from the GpuModel table (admins may edit it).

    Built once per process and rebuilt after a change (``allocations.reference_cache``); the Catalog is frozen.
    """
    return built_once("catalog", _read_catalog)


def _read_catalog() -> Catalog:
    rows = GpuModel.objects.prefetch_related("mig_profiles").order_by("name")
    return Catalog(tuple(row.to_spec() for row in rows))


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
    """Every SLA tier, keyed by slug (built once per process and rebuilt after a change, as the catalog)."""
    frozen = built_once("tiers", lambda: tuple((tier.slug, tier_spec(tier)) for tier in SlaTier.objects.all()))
    return dict(frozen)  # a fresh dict: callers may change theirs


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
    return _usage_by_quota(quotas=quotas, rows=list(held))


# The units held of the resources the user's teams have quotas for, as quota_usage_by_quota reads them for the home
# (every quota of the user's teams), through SQL compiled once per process (issue #15).
_HELD_BY_TEAMS_OF = CompiledRead(
    GpuRequest,
    lambda user_id: (
        GpuRequest.objects.filter(
            team_id__in=Membership.objects.filter(user_id=user_id).values("team_id"),
            resource_name__in=Quota.objects.filter(
                team_id__in=Membership.objects.filter(user_id=user_id).values("team_id")
            ).values("resource_name"),
            status__in=list(QUOTA_HOLDING_STATUSES),
        )
        .values("team_id", "resource_name", "cluster_id", "node_pool_id", "node_pool__cluster_id")
        .annotate(units=Sum("resource_units"))
        .order_by()
    ),
    stand_in=ID_STAND_IN,
)


def quota_usage_of_teams_of(*, user: User, quotas: list[Quota]) -> dict[int, int]:
    """``quota_usage_by_quota(quotas=quotas)`` for quotas of the user's teams (the home's), in one query."""
    if not quotas:
        return {}
    return _usage_by_quota(quotas=quotas, rows=_HELD_BY_TEAMS_OF.values(user.pk))


def _usage_by_quota(*, quotas: list[Quota], rows: list[dict[str, Any]]) -> dict[int, int]:
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
    """One request the user may see, with its events and ``viewer_role`` (the user's role in its team, None when not
    a member); raises GpuRequest.DoesNotExist for anything else (a 404)."""
    # The pool's cluster too: the page names the pool as cluster/pool. The events' actors are not read (each event
    # keeps its actor_label), so they are not fetched. The role comes in the same query, not one more.
    qs = gpu_requests_visible_to(user=user).select_related("node_pool__cluster").prefetch_related("events")
    if user.is_authenticated:
        role = Membership.objects.filter(user=user, team=OuterRef("team_id")).order_by().values("role")[:1]
        qs = qs.annotate(viewer_role=Subquery(role))
    return qs.get(pk=pk)


# --- Clusters (platform admins) ------------------------------------------------------------------------------------


def clusters_visible_to(*, user: User) -> QuerySet[Cluster]:
    """Clusters the user may inspect: every one for platform admins (approvers and staff), none for anyone else."""
    if not user_is_approver(user):
        return Cluster.objects.none()
    return Cluster.objects.all()


def units_allocated_by_pool(*, cluster_ids: list[int]) -> dict[int, dict[str, int]]:
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


# --- Allocation extensions (allocations/extension_services.py) -----------------------------------------------------


def allocation_extensions_visible_to(*, user: User) -> QuerySet[AllocationExtension]:
    """Extensions of the requests the user may see (approvers: all). Every extension endpoint starts here."""
    visible = gpu_requests_visible_to(user=user).values("pk")
    return AllocationExtension.objects.select_related(
        "request__team", "request__requester", "requested_by", "decided_by"
    ).filter(request__in=visible)


def pending_extensions_queue(*, user: User, team: Team | None = None) -> QuerySet[AllocationExtension]:
    """Pending extensions, oldest first, for the approval queue (approvers only), of one team's requests when
    ``team`` is given. A queryset: the queue pages it (a burst of asks must not make one unbounded page)."""
    if not user_is_approver(user):
        return AllocationExtension.objects.none()
    pending = _extensions_queue(visible=GpuRequest.objects.all(), status=ExtensionStatus.PENDING)
    return pending if team is None else pending.filter(request__team=team)


def _extensions_queue(*, visible: QuerySet[GpuRequest], status: str) -> QuerySet[AllocationExtension]:
    """The queue's extensions of ``status`` on the ``visible`` requests, oldest first."""
    # What the queue prints and decides on: the request with its team, and who asked; not the request's requester
    # (its id is on the request row) or a decider (none yet): two joins less to plan on each view (issue #15).
    return (
        AllocationExtension.objects.filter(request__in=visible.values("pk"), status=status)
        .select_related("request__team", "requested_by")
        .order_by("created_at", "id")
    )


def pending_requests_queue(*, user: User, team: Team | None = None) -> QuerySet[GpuRequest]:
    """Requests pending approval, oldest first, with what the approval queue prints of them (approvers only), of
    one team when ``team`` is given. A queryset: the queue pages it (400 pending requests were one 1 MB page that
    took 0.6 s to build)."""
    if not user_is_approver(user):
        return GpuRequest.objects.none()
    pending = _requests_queue(visible=GpuRequest.objects.all(), status=RequestStatus.PENDING_APPROVAL)
    return pending if team is None else pending.filter(team=team)


def pending_work_by_team(*, user: User) -> list[dict[str, Any]]:
    """The teams with requests or extensions waiting for approval, by name, each with ``requests`` and
    ``extensions`` pending (approvers only): the approval queue's team filter, in one query."""
    if not user_is_approver(user):
        return []
    # A count per team on the (team, status) index: not a join over every request the team ever made.
    requests = GpuRequest.objects.filter(team=OuterRef("pk"), status=RequestStatus.PENDING_APPROVAL)
    extensions = AllocationExtension.objects.filter(request__team=OuterRef("pk"), status=ExtensionStatus.PENDING)
    teams = (
        Team.objects.annotate(
            requests=_count_of(requests, by="team"), extensions=_count_of(extensions, by="request__team")
        )
        .filter(Q(requests__gt=0) | Q(extensions__gt=0))
        .order_by("name")
        .values("slug", "name", "requests", "extensions")
    )
    return list(teams)


def _count_of(rows: QuerySet, *, by: str) -> Coalesce:
    """The rows (all of one ``by``, the outer row's) counted, as a correlated subquery: 0 when none."""
    counted = rows.order_by().values(by).annotate(count=Count("pk")).values("count")
    return Coalesce(Subquery(counted), 0)


def _requests_queue(*, visible: QuerySet[GpuRequest], status: str) -> QuerySet[GpuRequest]:
    """The queue's requests of ``status`` among the ``visible`` ones, oldest first."""
    # The rows the queue prints: team, requester, tier, and the pool as cluster/pool (not a query per row); not the
    # request's own cluster, which it never shows (a join less to plan: issue #15).
    return (
        visible.filter(status=status)
        .select_related(None)
        .select_related("team", "requester", "sla_tier", "node_pool__cluster")
        .order_by("submitted_at", "created_at", "id")
    )


# --- When a request held GPUs (billing's chargeback and capacity forecast read it here) -------------------------

# Statuses after which a request with no ended_at holds nothing any more: its last status change ended it.
_HELD_NOTHING_SINCE_LAST_CHANGE = TERMINAL_STATUSES | {RequestStatus.FAILED}


@dataclass(frozen=True, slots=True)
class AllocationInterval:
    """A span during which a request held GPUs: ``[start, end)``, ``end`` None while it still holds them."""

    request: GpuRequest
    start: datetime
    end: datetime | None

    def overlaps(self, start: datetime, end: datetime) -> bool:
        """Whether the span meets ``[start, end)``."""
        return self.start < end and (self.end is None or self.end > start)


def _requests_holding(*, start: datetime, end: datetime, teams: Iterable[Team] | None) -> QuerySet[GpuRequest]:
    """Requests that may have held GPUs in ``[start, end)``, in request order, each with ``provisioning_started``
    (``_held_span`` decides, from the columns it names, whether and when they did)."""
    provisioning = (
        RequestEvent.objects.filter(request=OuterRef("pk"), to_status=RequestStatus.PROVISIONING)
        .order_by("at")
        .values("at")[:1]
    )
    requests = (
        # Only a request never activated needs its first provisioning: a CASE spares the subquery for every other
        # row (it was most of the statement's time at 50,000 requests held in a month; issue #15).
        GpuRequest.objects.annotate(
            provisioning_started=Case(When(activated_at__isnull=True, then=Subquery(provisioning)))
        )
        .filter(Q(activated_at__lt=end) | Q(activated_at__isnull=True, provisioning_started__lt=end))
        .filter(Q(ended_at__isnull=True) | Q(ended_at__gt=start))
        .order_by("pk")
    )
    if teams is not None:
        requests = requests.filter(team__in=list(teams))
    return requests


# The columns (and the annotation) ``_held_span`` reads, in its argument order.
_SPAN_COLUMNS = ("activated_at", "provisioning_started", "ended_at", "status", "updated_at")


def _held_span(
    activated_at: datetime | None,
    provisioning_started: datetime | None,
    ended_at: datetime | None,
    status: str,
    updated_at: datetime,
) -> tuple[datetime, datetime | None]:
    """When a request held GPUs: from its activation or, never activated, its first entry into provisioning, until
    ``ended_at``, else, failed, rejected, released or expired without one, its last status change."""
    finished = ended_at or (updated_at if status in _HELD_NOTHING_SINCE_LAST_CHANGE else None)
    return activated_at or provisioning_started, finished


def allocation_intervals(
    *, start: datetime, end: datetime, teams: Iterable[Team] | None = None
) -> list[AllocationInterval]:
    """Every request's spans of holding GPUs that meet ``[start, end)``, in request order (the one definition).

    A request holds GPUs from its activation or, never activated, from the first time it entered provisioning (its
    pods may hold GPUs while pending), until it ended: ``ended_at``, else, for a request failed, rejected, released
    or expired without one, its last status change. Approval alone holds quota, not GPUs. The requests come with
    team, SLA tier and pool (and the pool's GPU model) loaded; ``teams`` keeps only theirs.

    Read for every request of a month, the frozen spec (about 4 KB of rationale and alternatives each) and the
    manifests (as much again) are not loaded:
    each request carries ``held_spec``, the keys ``allocation_spec_of`` reads (``GpuRequest.ALLOCATION_SPEC_KEYS``),
    and reading ``spec`` itself costs a query per request (issue #15: the JSON was half of a home page's time).
    A reader that needs only some columns of many requests reads ``held_span_rows`` (no model instances).
    """
    requests = (
        _requests_holding(start=start, end=end, teams=teams)
        .select_related("team", "sla_tier", "node_pool__gpu_model")
        .defer("spec", "manifests", "purpose", "command", "status_detail")
        .annotate(held_spec=_HELD_SPEC)
    )
    intervals = []
    for request in requests:
        began, finished = _held_span(*(getattr(request, column) for column in _SPAN_COLUMNS))
        interval = AllocationInterval(request=request, start=began, end=finished)
        if interval.overlaps(start, end):  # a request failed before the window, without ended_at, held nothing in it
            intervals.append(interval)
    return intervals


# The spec keys ``GpuRequest.allocation_spec_of`` reads, as one JSON object (``held_spec``).
_HELD_SPEC = JSONObject(**{key: KeyTransform(key, "spec") for key in GpuRequest.ALLOCATION_SPEC_KEYS})


class _SpecKeysJson(Func):
    """PostgreSQL: the keys named in ``keys`` of a jsonb object, as one object's text ('{}' when none)."""

    template = (
        "COALESCE((SELECT jsonb_object_agg(key, value) FROM jsonb_each(%(expressions)s) WHERE key IN (%(keys)s)), "
        "'{}')::text"
    )
    output_field = TextField()


def _held_spec_json() -> Func:
    """The spec's allocation keys (``GpuRequest.ALLOCATION_SPEC_KEYS``) as JSON text, equal texts for equal keys."""
    if connection.vendor == "postgresql":
        # The spec (about 4 KB) is stored compressed: each spec -> 'key' decompresses it again, 8 times a row, half
        # of reading 50,000 requests (issue #15); jsonb_each decompresses it once. jsonb's text is canonical.
        return _SpecKeysJson("spec", keys=", ".join(f"'{key}'" for key in GpuRequest.ALLOCATION_SPEC_KEYS))
    return Cast(_HELD_SPEC, TextField())


def held_span_rows(
    *, start: datetime, end: datetime, fields: Sequence[str], teams: Iterable[Team] | None = None
) -> list[tuple[tuple[Any, ...], datetime, datetime | None]]:
    """``allocation_intervals`` as plain rows: for each request's span that meets ``[start, end)``, in request
    order, the ``fields`` asked for (``values_list`` names; ``held_spec_json`` is ``held_spec`` as JSON text, which
    a reader of many requests parses once per distinct text) and the span's start and end. No model instances: a
    month's chargeback curves read tens of thousands (issue #15)."""
    requests = _requests_holding(start=start, end=end, teams=teams)
    if "held_spec_json" in fields:
        requests = requests.annotate(held_spec_json=_held_spec_json())
    width = len(fields)
    rows = []
    for row in requests.values_list(*fields, *_SPAN_COLUMNS):
        began, finished = _held_span(*row[width:])
        if began < end and (finished is None or finished > start):  # AllocationInterval.overlaps
            rows.append((row[:width], began, finished))
    return rows


# --- What runs on the cluster -----------------------------------------------------------------------------------


def cluster_gateway(cluster: Cluster, *, timeout_seconds: float = 30.0) -> ClusterGateway:
    """The gateway for a cluster's backend, configured from its secret references (never from stored secrets)."""
    return gateway_for(
        backend=cluster.backend,
        api_endpoint=cluster.api_endpoint,
        kubeconfig_ref=cluster.kubeconfig_secret_ref,
        gitops_root=settings.PORTAL_GITOPS_ROOT,
        gitops_path=cluster.gitops_path or cluster.name,
        gitops_commit=cluster.gitops_commit,
        timeout_seconds=timeout_seconds,
    )


# Statuses whose objects are (or are about to be) on the cluster: the request page reads their pods and events.
ON_CLUSTER_STATUSES = (RequestStatus.PROVISIONING, RequestStatus.ACTIVE)


@dataclass(frozen=True)
class WorkloadLive:
    """A request's pods and recent events as its cluster reports them now, or why they cannot be read."""

    observable: bool
    pods: tuple[PodStatus, ...] = ()
    events: tuple[WorkloadEvent, ...] = ()
    error: str = ""
    # Observable but not read yet: the request page renders without calling the cluster, then its script reads the
    # pods and events from the workload endpoint.
    unread: bool = False


def _workload_observable(request: GpuRequest) -> bool:
    cluster = request.cluster
    return cluster is not None and request.status in ON_CLUSTER_STATUSES and cluster.backend == "kubernetes"


def gpu_request_workload_unread(*, request: GpuRequest) -> WorkloadLive:
    """What the request page shows of the workload before any cluster call: not observable (a GitOps tree, no
    cluster yet), or observable and still to be read (``unread``), which the page's script then does."""
    observable = _workload_observable(request)
    return WorkloadLive(observable=observable, unread=observable)


def gpu_request_workload_live(*, request: GpuRequest, gateway: ClusterGateway | None = None) -> WorkloadLive:
    """Read the request's pods and newest events from its cluster (short timeout); an unreachable or refusing cluster
    gives ``error`` instead of an exception, so the page still renders. GitOps clusters are not observable."""
    cluster = request.cluster
    if not _workload_observable(request):
        return WorkloadLive(observable=False)
    try:
        gateway = gateway or cluster_gateway(cluster, timeout_seconds=settings.PORTAL_CLUSTER_READ_TIMEOUT_SECONDS)
        status = gateway.workload_status(namespace=request.team.namespace, request_id=request.pk)
        events = gateway.workload_events(namespace=request.team.namespace, request_id=request.pk)
    except GatewayError as exc:
        return WorkloadLive(observable=True, error=f"Cluster {cluster.name} could not be read just now: {exc}")
    return WorkloadLive(observable=True, pods=status.pods, events=events)


def gpu_request_access(*, request: GpuRequest) -> WorkloadAccess:
    """Its Services' DNS names and ports and the kubectl commands, from the objects last rendered for it."""
    return workload_access(request.manifests or [], request_id=request.pk, workload_type=request.workload_type)
