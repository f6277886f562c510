"""Reads: who is a platform approver or admin, and what a user may see (teams, requests, clusters, extensions).

Every endpoint starts from these scopes. The other reads live beside them: ``home_reads`` (the home's compiled
reads), ``quota_usage``, ``reference_data`` (catalog and tiers), ``pending_queues`` (the approval queue),
``held_intervals`` (when a request held GPUs) and ``cluster_workloads`` (what runs on a cluster)."""

from __future__ import annotations

from typing import Any

from django.contrib.auth.models import AbstractBaseUser, AnonymousUser
from django.db.models import Count, OuterRef, Prefetch, Q, QuerySet, Subquery

from allocations.compiled_reads import ID_STAND_IN, OTHER_ID_STAND_IN, CompiledRead, fits_bigint
from allocations.models import AllocationExtension, Cluster, GpuRequest, Membership, Quota, RequestEvent, Team

APPROVE_PERMISSION = "allocations.approve_gpurequest"
APPROVERS_GROUP = "Platform approvers"

User = AbstractBaseUser | AnonymousUser


def user_is_approver(user: User) -> bool:
    """Platform approvers: staff users, and users holding the approve permission (the approvers group has it)."""
    if not user.is_authenticated or not user.is_active:
        return False
    if user.is_staff:
        return True
    return bool(user.has_perm(APPROVE_PERMISSION))


def user_is_platform_admin(user: User) -> bool:
    """Platform admins: active staff accounts (the admin site's gate); what each may change is its model permissions."""
    return bool(user.is_authenticated and user.is_active and user.is_staff)


def teams_of(user: User) -> QuerySet[Team]:
    """The teams the user belongs to (any role)."""
    if not user.is_authenticated:
        return Team.objects.none()
    return _teams_of_user(user.pk)


def _teams_of_user(user_id: int) -> QuerySet[Team]:
    return Team.objects.filter(memberships__user_id=user_id).distinct()


def teams_visible_to(user: User) -> QuerySet[Team]:
    """Teams the user may see: their own; approvers see every team."""
    if user_is_approver(user):
        return Team.objects.all()
    return teams_of(user)


def member_teams(user: User) -> list[Team]:
    """``teams_of(user)``, read now through SQL compiled once per process (the home's teams)."""
    if not user.is_authenticated:
        return []
    return _TEAMS_OF.instances(user.pk)


def visible_teams(user: User) -> list[Team]:
    """``teams_visible_to(user)``, read now through SQL compiled once per process (the request list's team filter,
    on every view: issue #15)."""
    return _EVERY_TEAM.instances() if user_is_approver(user) else member_teams(user)


_TEAMS_OF = CompiledRead(Team, _teams_of_user, stand_in=ID_STAND_IN)
_EVERY_TEAM = CompiledRead(Team, lambda: Team.objects.all(), stand_ins={})


# What every request read of the pages and API joins in.
_REQUEST_RELATED = ("team", "requester", "sla_tier", "cluster", "node_pool")


def gpu_requests_visible_to(*, user: User) -> QuerySet[GpuRequest]:
    """Requests the user may see: their teams' requests; approvers see all. Every endpoint starts here."""
    qs = GpuRequest.objects.select_related(*_REQUEST_RELATED)
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


def teams_with_quotas_visible_to(*, user: User) -> QuerySet[Team]:
    """Teams the user may see, with their members and quotas loaded (for the teams API)."""
    return teams_visible_to(user).prefetch_related(
        Prefetch("memberships", queryset=Membership.objects.select_related("user").order_by("user__username")),
        Prefetch("quotas", queryset=Quota.objects.select_related("cluster", "node_pool__cluster")),
    )


def gpu_request_detail(*, user: User, pk: int) -> GpuRequest:
    """One request the user may see, with its events and ``viewer_role`` (the user's role in its team, None when not
    a member); raises GpuRequest.DoesNotExist for anything else (a 404)."""
    scope = gpu_request_scope(user)
    if scope == "none" or not fits_bigint(pk):
        raise GpuRequest.DoesNotExist("GpuRequest matching query does not exist.")
    # Read through SQL compiled once per process: PostgreSQL took 5.1 ms to plan this seven-table read on every
    # view of a request's page, and 0.3 ms to run it (issue #15).
    read = _DETAIL_OF_ANY if scope == "all" else _DETAIL_OF_MEMBER
    found = read.first(request=pk, user=user.pk)
    if found is None:
        raise GpuRequest.DoesNotExist("GpuRequest matching query does not exist.")
    _keep_prefetched(found, "events", _EVENTS_OF.instances(found.pk))
    return found


def _keep_prefetched(instance: Any, name: str, related: list[Any]) -> None:
    """Keep ``related`` as ``instance``'s prefetched reverse relation ``name``, as ``prefetch_related_objects`` keeps
    what it reads: ``instance.<name>.all()`` answers them without a query, and each points back to ``instance``."""
    manager = getattr(instance, name)
    for obj in related:
        setattr(obj, manager.field.name, instance)
    queryset = manager.get_queryset()
    queryset._result_cache, queryset._prefetch_done = related, True
    instance._prefetched_objects_cache = {**getattr(instance, "_prefetched_objects_cache", {}), name: queryset}


def _request_detail(request: int, user: int, *, of_member_teams: bool) -> QuerySet[GpuRequest]:
    # The pool's cluster too: the page names the pool as cluster/pool. The events' actors are not read (each event
    # keeps its actor_label), so they are not fetched. The role comes in the same query, not one more.
    role = Membership.objects.filter(user_id=user, team=OuterRef("team_id")).order_by().values("role")[:1]
    qs = (
        GpuRequest.objects.select_related(*_REQUEST_RELATED, "node_pool__cluster")
        .annotate(viewer_role=Subquery(role))
        .filter(pk=request)
    )
    return qs.filter(requests_of_member_teams(user_id=user)) if of_member_teams else qs


# A request's events in RequestEvent's order (its page's timeline), compiled once per process: prefetching them built
# and compiled the queryset on every view (~0.6 ms; issue #15).
_EVENTS_OF = CompiledRead(
    RequestEvent, lambda request_id: RequestEvent.objects.filter(request_id=request_id), stand_in=ID_STAND_IN
)
_DETAIL_STAND_INS = {"request": ID_STAND_IN, "user": OTHER_ID_STAND_IN}
_DETAIL_OF_ANY = CompiledRead(
    GpuRequest, lambda request, user: _request_detail(request, user, of_member_teams=False), stand_ins=_DETAIL_STAND_INS
)
_DETAIL_OF_MEMBER = CompiledRead(
    GpuRequest, lambda request, user: _request_detail(request, user, of_member_teams=True), stand_ins=_DETAIL_STAND_INS
)


def clusters_visible_to(*, user: User) -> QuerySet[Cluster]:
    """Clusters the user may inspect: every one for platform admins (approvers and staff), none for anyone else."""
    if not user_is_approver(user):
        return Cluster.objects.none()
    return Cluster.objects.all()


def allocation_extensions_visible_to(*, user: User) -> QuerySet[AllocationExtension]:
    """Extensions of the requests the user may see (approvers: all). Every extension endpoint starts here."""
    visible = gpu_requests_visible_to(user=user).values("pk")
    return AllocationExtension.objects.select_related(
        "request__team", "request__requester", "requested_by", "decided_by"
    ).filter(request__in=visible)
