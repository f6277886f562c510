"""The approval queue page: pending requests and extensions, oldest first, a page at a time, by team if asked.

Each page reads its rows and their count in one query, then the quota headroom and the refusals of those rows only:
the page costs the same with 8 or 8,000 requests waiting (issue #15; 400 pending requests were one 1 MB page that
took 0.6 s to build).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from django.db.models import QuerySet

from allocations.extension_services import extension_decide_refusal
from allocations.models import AllocationExtension, GpuRequest, Team
from allocations.pagination import BoundedCountPaginator
from allocations.pending_queues import pending_extensions_queue, pending_requests_queue, pending_work_by_team
from allocations.quotas import quota_fit, quota_headroom_by_request
from allocations.selectors import User
from allocations.services import approve_refusal

QUEUE_PAGE_SIZE = 25


def approval_queue_page(*, user: User, params: Mapping[str, str]) -> dict[str, Any]:
    """What the queue shows for the query ``params``: ``team`` (a slug), ``page`` (requests) and ``ext_page``
    (extensions). An unknown team is ``team_error`` and lists nothing, as the request list's filters do."""
    teams = pending_work_by_team(user=user)
    slug = (params.get("team") or "").strip()
    team, team_error = None, ""
    if slug:
        team = Team.objects.filter(slug=slug).first()
        if team is None:
            team_error = f"There is no team “{slug}”."
    requests = _page(
        GpuRequest.objects.none() if team_error else pending_requests_queue(user=user, team=team), params.get("page")
    )
    extensions = _page(
        AllocationExtension.objects.none() if team_error else pending_extensions_queue(user=user, team=team),
        params.get("ext_page"),
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
        "waiting": {
            "requests": sum(option["requests"] for option in teams),
            "extensions": sum(option["extensions"] for option in teams),
        },
    }


def _page(pending: QuerySet, number: str | None) -> Any:
    # The rows are the queryset's own instances (with their select_related objects), read with the count.
    return BoundedCountPaginator(pending, QUEUE_PAGE_SIZE, read=lambda rows: rows).get_page(number)


def approval_queue_rows(*, user: User, requests: Iterable[GpuRequest]) -> list[dict[str, object]]:
    """Pending requests as the queue prints them, each with the quota headroom it would draw on and why this user
    may not review it (their own), if so."""
    requests = list(requests)
    headroom_by_request = quota_headroom_by_request(requests=requests)
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
            }
        )
    return rows


def pending_extension_rows(*, user: User, extensions: Iterable[AllocationExtension]) -> list[AllocationExtension]:
    """Pending extensions for the queue, each with ``decide_refusal``: why this user may not decide it."""
    extensions = list(extensions)
    for extension in extensions:
        extension.decide_refusal = extension_decide_refusal(user=user, extension=extension)
    return extensions
