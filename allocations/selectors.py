"""Reads: who is a platform approver or admin, and what a user may see (teams, requests, clusters, extensions).

Every endpoint starts from these scopes: ``visible_requests`` is the one rule of which requests a user may see; the
API applies these through its visibility registry (``allocations.api.scoping``). Other reads live in their
sub-domains: ``teams.quota_usage`` (what a quota's team holds), ``reference_data`` (catalog and tiers),
``approvals.pending_queues`` (the approval queue), ``requests.held_intervals`` (when a request held GPUs) and
``clusters.workloads`` (what runs on a cluster)."""

from __future__ import annotations

from django.contrib.auth.models import AbstractBaseUser, AnonymousUser
from django.db.models import Count, OuterRef, Prefetch, Q, QuerySet, Subquery

from allocations.models import AllocationExtension, Cluster, GpuRequest, Membership, NodePool, Quota, Team

APPROVE_PERMISSION = "allocations.approve_gpurequest"
APPROVERS_GROUP = "Platform approvers"
# Django's own read-only permissions: a role holding them (the Finance group) reads every team and request, and may
# change nothing the predicates beside the services guard.
VIEW_TEAMS_PERMISSION = "allocations.view_team"
VIEW_REQUESTS_PERMISSION = "allocations.view_gpurequest"

User = AbstractBaseUser | AnonymousUser


def user_is_approver(user: User) -> bool:
    """Platform approvers: staff users, and users holding the approve permission (the approvers group has it)."""
    if not user.is_authenticated or not user.is_active:
        return False
    return bool(user.is_staff or user.has_perm(APPROVE_PERMISSION))


def user_is_platform_admin(user: User) -> bool:
    """Platform admins: active staff accounts (the admin site's gate); what each may change is its model permissions."""
    return bool(user.is_authenticated and user.is_active and user.is_staff)


def _holds(user: User, permission: str) -> bool:
    return bool(user.is_authenticated and user.is_active and user.has_perm(permission))


def user_reads_every_team(user: User) -> bool:
    """Approvers, and read-only roles granted ``view_team`` (the Finance group): every team's page, in read-only."""
    return user_is_approver(user) or _holds(user, VIEW_TEAMS_PERMISSION)


def user_reads_only(user: User) -> bool:
    """A read-only role: reads every team (Finance) but approves nothing; its pages offer no "New request" unless it
    is also a member of a team."""
    return not user_is_approver(user) and _holds(user, VIEW_TEAMS_PERMISSION)


def teams_of(user: User) -> QuerySet[Team]:
    """The teams the user belongs to (any role)."""
    if not user.is_authenticated:
        return Team.objects.none()
    return Team.objects.filter(memberships__user_id=user.pk).distinct()


def teams_visible_to(user: User) -> QuerySet[Team]:
    """Teams the user may see: their own; approvers and read-only roles (Finance) see every team."""
    if user_reads_every_team(user):
        return Team.objects.all()
    return teams_of(user)


def member_teams(user: User) -> list[Team]:
    """``teams_of(user)``, read now (the home's teams)."""
    return list(teams_of(user))


def visible_teams(user: User) -> list[Team]:
    """``teams_visible_to(user)``, read now (the request list's team filter)."""
    return list(teams_visible_to(user))


def visible_requests(user: User) -> QuerySet[GpuRequest]:
    """The requests the user may see: their teams' requests; approvers and Finance see all; anonymous users none.

    The one rule of request visibility: every page, list, search and API read starts here, and chooses what it joins
    (``select_related``) and loads (``only``) itself."""
    scope = gpu_request_scope(user)
    if scope == "all":
        return GpuRequest.objects.all()
    if scope == "none":
        return GpuRequest.objects.none()
    return GpuRequest.objects.filter(requests_of_member_teams(user_id=user.pk))


def gpu_request_scope(user: User) -> str:
    """The branch of ``visible_requests`` the user is on: ``"all"`` (approvers, and read-only roles granted
    ``view_gpurequest``: Finance), ``"teams"`` (their teams', by ``requests_of_member_teams``) or ``"none"``
    (anonymous)."""
    if user_is_approver(user) or _holds(user, VIEW_REQUESTS_PERMISSION):
        return "all"
    if not user.is_authenticated:
        return "none"
    return "teams"


def requests_of_member_teams(*, user_id: int) -> Q:
    """The requests of the teams the user belongs to (``visible_requests`` of a member)."""
    # team_id IN (the user's teams): a semi-join on the membership index, no join on the rows and no DISTINCT.
    return Q(team_id__in=Membership.objects.filter(user_id=user_id).values("team_id"))


# What the request reads of the pages and API join in.
_REQUEST_RELATED = ("team", "requester", "sla_tier", "cluster", "node_pool")


def gpu_requests_visible_to(*, user: User) -> QuerySet[GpuRequest]:
    """``visible_requests(user)`` with the team, requester, tier, cluster and pool joined (what most reads print)."""
    return visible_requests(user).select_related(*_REQUEST_RELATED)


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
    return with_members_and_quotas(teams_visible_to(user))


def with_members_and_quotas(teams: QuerySet[Team]) -> QuerySet[Team]:
    """``teams`` with their members (by username) and quotas (with cluster and pool) loaded."""
    return teams.prefetch_related(
        Prefetch("memberships", queryset=Membership.objects.select_related("user").order_by("user__username")),
        Prefetch("quotas", queryset=Quota.objects.select_related("cluster", "node_pool__cluster")),
    )


def gpu_request_detail(*, user: User, pk: int) -> GpuRequest:
    """One request the user may see, with its events and ``viewer_role`` (the user's role in its team, None when not
    a member); raises GpuRequest.DoesNotExist for anything else (a 404)."""
    # The pool's cluster too: the page names the pool as cluster/pool. The events' actors are not read (each event
    # keeps its actor_label). The role comes in the same query, not one more.
    role = Membership.objects.filter(user_id=user.pk, team=OuterRef("team_id")).order_by().values("role")[:1]
    return (
        gpu_requests_visible_to(user=user)
        .select_related("node_pool__cluster")
        .annotate(viewer_role=Subquery(role))
        .prefetch_related("events")
        .get(pk=pk)
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


def node_pools_visible_to(*, user: User) -> QuerySet[NodePool]:
    """Node pools of the clusters the user may inspect."""
    return NodePool.objects.filter(cluster__in=clusters_visible_to(user=user))
