"""The rows of the requests page (``request_views.request_list``): the columns its table shows, read as plain rows,
and, when no filter or search is asked (the page as most views open it), read by SQL compiled once per process per
shape.

Building and compiling the page's queryset (the visible requests, the order, the window and its bounded count) was
about 0.7 ms of a 5.6 ms page in-process (issue #15). ``UnfilteredRequestRows`` compiles the same queryset once per
scope, "only mine", ordering and window, and runs it with the user's id (``allocations.compiled_reads.CompiledRead``);
``tests/allocations/test_request_list_rows.py`` checks its rows and counts against the queryset's.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Any

from django.db.models import QuerySet

from allocations.compiled_reads import ID_STAND_IN, CompiledRead, prepared_values
from allocations.models import GpuRequest
from allocations.pagination import COUNTED, RowSource, with_bounded_count
from allocations.selectors import gpu_request_scope, requests_of_member_teams

# The columns request_list.html shows, read as plain rows with the page's bounded count in the same query (issue #15):
# no model instances for the request, team, requester and tier of each row.
REQUEST_TABLE_COLUMNS = (
    "id",
    "name",
    "team__slug",
    "team__name",
    "requester__username",
    "workload_type",
    "resource_name",
    "resource_units",
    "sla_tier__name",
    "status",
    "created_at",
)


def request_table_rows(queryset: QuerySet[GpuRequest]) -> QuerySet:
    """The table's columns of these requests (a page's slice), as rows."""
    return queryset.values(*REQUEST_TABLE_COLUMNS)


def _requests(scope: str, *, user: int, mine: bool) -> QuerySet[GpuRequest]:
    """The requests of a scope (``gpu_request_scope``) for this user id, only theirs with ``mine``: what the page lists
    with no filter (``gpu_requests_visible_to``, then ``requester``)."""
    if scope == "all":
        requests = GpuRequest.objects.all()
    else:
        requests = GpuRequest.objects.filter(requests_of_member_teams(user_id=user))
    return requests.filter(requester_id=user) if mine else requests


@functools.lru_cache(maxsize=256)
def _page_read(scope: str, mine: bool, ordering: tuple[str, ...], start: int, stop: int, upto: int) -> CompiledRead:
    """One window of the table with the bounded count, as ``BoundedCountPaginator`` reads a queryset's page (the
    window's bounds are part of the SQL: one read per window asked for)."""
    uses_user = scope != "all" or mine

    def build(user: int = 0) -> QuerySet:  # every user's requests (no user id in the SQL) are built with none
        requests = _requests(scope, user=user, mine=mine)
        return with_bounded_count(request_table_rows(requests.order_by(*ordering)[start:stop]), requests, upto)

    return CompiledRead(GpuRequest, build, stand_ins={"user": ID_STAND_IN} if uses_user else {})


class UnfilteredRequestRows(RowSource):
    """The table's rows of every request the user may see (only theirs with ``mine``), in ``ordering``: a page and
    its count in one read compiled once per shape; a page past the end and the count alone (rare: an empty list, a
    page number too high) through the queryset."""

    def __init__(self, *, user: Any, mine: bool, ordering: Sequence[str]) -> None:
        self.scope = gpu_request_scope(user)
        self.user_id = user.pk
        self.mine = mine
        self.ordering = tuple(ordering)

    def _queryset(self) -> QuerySet[GpuRequest]:
        if self.scope == "none":
            return GpuRequest.objects.none()
        return _requests(self.scope, user=self.user_id, mine=self.mine)

    def count(self, upto: int) -> int:
        return self._queryset().order_by()[:upto].count()

    def rows(self, start: int, stop: int) -> list[dict[str, Any]]:
        if stop <= start:
            return []
        return prepared_values(request_table_rows(self._queryset().order_by(*self.ordering)[start:stop]))

    def rows_with_count(self, start: int, stop: int, upto: int) -> tuple[list[dict[str, Any]], int | None]:
        if self.scope == "none":
            return [], None
        read = _page_read(self.scope, self.mine, self.ordering, start, stop, upto)
        rows = read.values(user=self.user_id) if self.scope != "all" or self.mine else read.values()
        return rows, (rows[0][COUNTED] if rows else None)
