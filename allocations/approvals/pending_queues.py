"""The approval queue's reads: pending requests and extensions, oldest first, and the teams with work waiting
(approvers only; ``allocations.approvals.queue`` builds the page from them, a page at a time)."""

from __future__ import annotations

from typing import Any

from django.db.models import Count, OuterRef, Q, QuerySet, Subquery
from django.db.models.functions import Coalesce

from allocations.models import AllocationExtension, ExtensionStatus, GpuRequest, RequestStatus, Team
from allocations.selectors import User, user_is_approver, visible_requests

# Rows on a page of the queue (each section's).
QUEUE_PAGE_SIZE = 25


def pending_extensions_queue(*, user: User, team_id: int | None = None) -> QuerySet[AllocationExtension]:
    """Pending extensions, oldest first, for the approval queue (approvers only), of one team's requests when
    ``team_id`` is given. A queryset: the queue pages it (a burst of asks must not make one unbounded page)."""
    if not user_is_approver(user):
        return AllocationExtension.objects.none()
    pending = _extensions_queue(visible=visible_requests(user), status=ExtensionStatus.PENDING)
    return pending if team_id is None else pending.filter(request__team_id=team_id)


def _extensions_queue(*, visible: QuerySet[GpuRequest], status: str) -> QuerySet[AllocationExtension]:
    """The queue's extensions of ``status`` on the ``visible`` requests, oldest first."""
    # What the queue prints and decides on: the request with its team, and who asked; not the request's requester
    # (its id is on the request row) or a decider (none yet).
    return (
        AllocationExtension.objects.filter(request__in=visible.values("pk"), status=status)
        .select_related("request__team", "requested_by")
        .order_by("created_at", "id")
    )


def pending_requests_queue(*, user: User, team_id: int | None = None) -> QuerySet[GpuRequest]:
    """Requests pending approval, oldest first, with what the approval queue prints of them (approvers only), of
    one team when ``team_id`` is given. A queryset: the queue pages it (hundreds pending must not make one page)."""
    if not user_is_approver(user):
        return GpuRequest.objects.none()
    pending = _requests_queue(visible=visible_requests(user), status=RequestStatus.PENDING_APPROVAL)
    return pending if team_id is None else pending.filter(team_id=team_id)


def pending_work_by_team(*, user: User) -> list[dict[str, Any]]:
    """The teams with requests or extensions waiting for approval, by name, each with its ``id``, ``slug``,
    ``name`` and ``requests`` and ``extensions`` pending (approvers only): the approval queue's team filter and its
    sections' counts, in one query."""
    if not user_is_approver(user):
        return []
    return list(_pending_work_by_team())


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
    # request's own cluster, which it never shows.
    return (
        visible.filter(status=status)
        .select_related(None)
        .select_related("team", "requester", "sla_tier", "node_pool__cluster")
        .order_by("submitted_at", "created_at", "id")
    )
