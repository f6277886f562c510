"""The approval queue's reads: pending requests and extensions, oldest first, and the teams with work waiting
(approvers only; ``allocations.approval_queue`` builds the page from them).

The queue opens on its first page, so that page and the teams' counts are read with SQL compiled once per process
(``CompiledRead``; building and compiling the five-join query cost more than PostgreSQL takes to run it, issue #15);
later pages go through the querysets. Either way the rows are read as they are now.
"""

from __future__ import annotations

from typing import Any

from django.db.models import Count, OuterRef, Q, QuerySet, Subquery
from django.db.models.functions import Coalesce

from allocations.compiled_reads import ID_STAND_IN, CompiledRead
from allocations.models import AllocationExtension, ExtensionStatus, GpuRequest, RequestStatus, Team
from allocations.selectors import User, user_is_approver

# Rows on a page of the queue (each section's).
QUEUE_PAGE_SIZE = 25


def pending_extensions_queue(*, user: User, team_id: int | None = None) -> QuerySet[AllocationExtension]:
    """Pending extensions, oldest first, for the approval queue (approvers only), of one team's requests when
    ``team_id`` is given. A queryset: the queue pages it (a burst of asks must not make one unbounded page)."""
    if not user_is_approver(user):
        return AllocationExtension.objects.none()
    return _pending_extensions(ExtensionStatus.PENDING, team_id)


def first_pending_extensions(*, user: User, team_id: int | None = None) -> list[AllocationExtension]:
    """The first ``QUEUE_PAGE_SIZE`` of ``pending_extensions_queue``, read with SQL compiled once per process."""
    if not user_is_approver(user):
        return []
    if team_id is None:
        return _FIRST_PENDING_EXTENSIONS.instances()
    return _FIRST_PENDING_EXTENSIONS_OF_TEAM.instances(team=team_id)


def _pending_extensions(status: str, team_id: int | None) -> QuerySet[AllocationExtension]:
    # An approver sees every request: the statement depends on the status and the team alone.
    pending = _extensions_queue(visible=GpuRequest.objects.all(), status=status)
    return pending if team_id is None else pending.filter(request__team_id=team_id)


def _extensions_queue(*, visible: QuerySet[GpuRequest], status: str) -> QuerySet[AllocationExtension]:
    """The queue's extensions of ``status`` on the ``visible`` requests, oldest first."""
    # What the queue prints and decides on: the request with its team, and who asked; not the request's requester
    # (its id is on the request row) or a decider (none yet): two joins less to plan on each view (issue #15).
    return (
        AllocationExtension.objects.filter(request__in=visible.values("pk"), status=status)
        .select_related("request__team", "requested_by")
        .order_by("created_at", "id")
    )


def pending_requests_queue(*, user: User, team_id: int | None = None) -> QuerySet[GpuRequest]:
    """Requests pending approval, oldest first, with what the approval queue prints of them (approvers only), of
    one team when ``team_id`` is given. A queryset: the queue pages it (400 pending requests were one 1 MB page that
    took 0.6 s to build)."""
    if not user_is_approver(user):
        return GpuRequest.objects.none()
    return _pending_requests(RequestStatus.PENDING_APPROVAL, team_id)


def first_pending_requests(*, user: User, team_id: int | None = None) -> list[GpuRequest]:
    """The first ``QUEUE_PAGE_SIZE`` of ``pending_requests_queue``, read with SQL compiled once per process."""
    if not user_is_approver(user):
        return []
    if team_id is None:
        return _FIRST_PENDING_REQUESTS.instances()
    return _FIRST_PENDING_REQUESTS_OF_TEAM.instances(team=team_id)


def _pending_requests(status: str, team_id: int | None) -> QuerySet[GpuRequest]:
    # An approver sees every request: the statement depends on the status and the team alone.
    pending = _requests_queue(visible=GpuRequest.objects.all(), status=status)
    return pending if team_id is None else pending.filter(team_id=team_id)


def pending_work_by_team(*, user: User) -> list[dict[str, Any]]:
    """The teams with requests or extensions waiting for approval, by name, each with its ``id``, ``slug``,
    ``name`` and ``requests`` and ``extensions`` pending (approvers only): the approval queue's team filter and its
    sections' counts, in one query."""
    if not user_is_approver(user):
        return []
    return _PENDING_WORK_BY_TEAM.values()


def _pending_work_by_team() -> QuerySet[Team]:
    # A count per team on the (team, status) index: not a join over every request the team ever made.
    requests = GpuRequest.objects.filter(team=OuterRef("pk"), status=RequestStatus.PENDING_APPROVAL)
    extensions = AllocationExtension.objects.filter(request__team=OuterRef("pk"), status=ExtensionStatus.PENDING)
    return (
        Team.objects.annotate(
            requests=_count_of(requests, by="team"), extensions=_count_of(extensions, by="request__team")
        )
        .filter(Q(requests__gt=0) | Q(extensions__gt=0))
        .order_by("name")
        .values("id", "slug", "name", "requests", "extensions")
    )


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


# The statuses are constants of the SQL, not parameters: PostgreSQL plans these once per connection (issue #15).
_TEAM_STAND_IN = {"team": ID_STAND_IN}
_FIRST_PENDING_REQUESTS = CompiledRead(
    GpuRequest, lambda: _pending_requests(RequestStatus.PENDING_APPROVAL, None)[:QUEUE_PAGE_SIZE], stand_ins={}
)
_FIRST_PENDING_REQUESTS_OF_TEAM = CompiledRead(
    GpuRequest,
    lambda team: _pending_requests(RequestStatus.PENDING_APPROVAL, team)[:QUEUE_PAGE_SIZE],
    stand_ins=_TEAM_STAND_IN,
)
_FIRST_PENDING_EXTENSIONS = CompiledRead(
    AllocationExtension, lambda: _pending_extensions(ExtensionStatus.PENDING, None)[:QUEUE_PAGE_SIZE], stand_ins={}
)
_FIRST_PENDING_EXTENSIONS_OF_TEAM = CompiledRead(
    AllocationExtension,
    lambda team: _pending_extensions(ExtensionStatus.PENDING, team)[:QUEUE_PAGE_SIZE],
    stand_ins=_TEAM_STAND_IN,
)
_PENDING_WORK_BY_TEAM = CompiledRead(Team, _pending_work_by_team, stand_ins={})
