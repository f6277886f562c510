"""The approval queue page: pending requests and extensions, oldest first, a page at a time, by team if asked.

One query counts what waits per team (the filter's options and each section's count, so the paginator counts
nothing again); one query reads a page of each section; then the quota headroom and the refusals of that page's rows
only. The page costs the same queries with 8 or 8,000 requests waiting.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from functools import cached_property
from typing import Any

from django.core.paginator import Page, Paginator
from django.db.models import QuerySet

from allocations.approvals.pending_queues import (
    QUEUE_PAGE_SIZE,
    pending_extensions_queue,
    pending_requests_queue,
    pending_work_by_team,
)
from allocations.models import AllocationExtension, GpuRequest, Team
from allocations.requests.extension_services import extension_decide_refusal
from allocations.requests.refusals import approve_refusal
from allocations.requests.waiting import waiting_by_request
from allocations.selectors import User
from allocations.teams.quotas import quota_fit, quota_headroom_by_request


def approval_queue_page(*, user: User, params: Mapping[str, str]) -> dict[str, Any]:
    """What the queue shows for the query ``params``: ``team`` (a slug), ``page`` (requests) and ``ext_page``
    (extensions). An unknown team is ``team_error`` and lists nothing, as the request list's filters do."""
    teams = pending_work_by_team(user=user)
    waiting = {kind: sum(option[kind] for option in teams) for kind in ("requests", "extensions")}
    slug = (params.get("team") or "").strip()
    team, team_error, counts = None, "", waiting
    if slug:
        team = next((option for option in teams if option["slug"] == slug), None)
        if team is None:  # a team with nothing waiting, or none of that name
            team = Team.objects.filter(slug=slug).values("id", "slug", "name").first()
            if team is None:
                team_error = f"There is no team “{slug}”."
        counts = {kind: (team or {}).get(kind, 0) for kind in ("requests", "extensions")}
    team_id = team["id"] if team else None
    requests = _page(pending_requests_queue(user=user, team_id=team_id), counts["requests"], params.get("page"))
    extensions = _page(
        pending_extensions_queue(user=user, team_id=team_id), counts["extensions"], params.get("ext_page")
    )
    rows = approval_queue_rows(user=user, requests=requests.object_list)
    return {
        "rows": rows,
        "page": requests,
        "extension_rows": pending_extension_rows(user=user, extensions=extensions.object_list),
        "extension_page": extensions,
        # The teams of this page's requests: their month to date is read for all of them at once (budget column).
        "pending_teams": list({row["request"].team_id: row["request"].team for row in rows}.values()),
        "team_options": teams,
        "team": team,
        "team_error": team_error,
        "waiting": waiting,
    }


class _CountedPaginator(Paginator):
    """Django's paginator over a queryset whose count was read with the team counts: exact, and not read again."""

    def __init__(self, object_list: QuerySet, count: int) -> None:
        super().__init__(object_list, QUEUE_PAGE_SIZE)
        self._known_count = count

    @cached_property
    def count(self) -> int:
        return self._known_count


def _page(pending: QuerySet, count: int, number: str | None) -> Page:
    return _CountedPaginator(pending, count).get_page(number)


def approval_queue_rows(*, user: User, requests: Iterable[GpuRequest]) -> list[dict[str, object]]:
    """Pending requests as the queue prints them, each with the quota headroom it would draw on and why this user
    may not review it (their own), if so."""
    requests = list(requests)
    headroom_by_request = quota_headroom_by_request(requests=requests)
    # Their place in the queue and, where their pool is full, when enough of it frees.
    waiting = waiting_by_request(requests)
    rows = []
    for request in requests:
        # The approval's own quota rule: a tier-3 request over its nominal quota fits by borrowing, others do not.
        fit = quota_fit(request=request, headroom=headroom_by_request[request.pk])
        rows.append(
            {
                "request": request,
                "headroom": fit.headroom,
                "fits": fit.fits,
                "borrows": fit.borrowed,
                "quota_refusal": fit.refusal,
                "quota_refusal_short": fit.short_refusal,
                "review_refusal": approve_refusal(user=user, request=request),
                "waiting": waiting[request.pk],
            }
        )
    return rows


def pending_extension_rows(*, user: User, extensions: Iterable[AllocationExtension]) -> list[AllocationExtension]:
    """Pending extensions for the queue, each with ``decide_refusal``: why this user may not decide it."""
    extensions = list(extensions)
    for extension in extensions:
        extension.decide_refusal = extension_decide_refusal(user=user, extension=extension)
    return extensions
