"""The requests page (``views.request_list``): the requests it lists with what its table shows, and its
sortable columns."""

from __future__ import annotations

from django.contrib.auth.models import AbstractBaseUser, AnonymousUser
from django.db.models import QuerySet

from allocations.models import GpuRequest
from allocations.selectors import gpu_requests_visible_to

# What the table shows of each request and of its team, requester and tier: nothing else is read.
REQUEST_LIST_FIELDS = (
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


def request_list_requests(*, user: AbstractBaseUser | AnonymousUser, mine: bool) -> QuerySet[GpuRequest]:
    """The requests the user may see (only theirs with ``mine``), with the columns the table shows."""
    requests = (
        gpu_requests_visible_to(user=user)
        .select_related(None)
        .select_related("team", "requester", "sla_tier")
        .only(*REQUEST_LIST_FIELDS)
    )
    return requests.filter(requester=user) if mine else requests


# The sortable columns, ``?sort=<key>`` or ``?sort=-<key>``: an allow-list of keys mapped to fields (the URL never
# names a field), each ending on the id so pages do not shuffle rows that tie.
REQUEST_LIST_SORTS: dict[str, tuple[str, ...]] = {
    "id": ("id",),
    "name": ("name", "id"),
    "team": ("team__name", "id"),
    "requester": ("requester__username", "id"),
    "workload": ("workload_type", "id"),
    "tier": ("sla_tier__name", "id"),
    "status": ("status", "id"),
    "created": ("created_at", "id"),
}
REQUEST_LIST_DEFAULT_SORT = "-created"


def request_list_ordering(sort: str) -> list[str]:
    """The ``order_by`` fields of a ``?sort=`` value; ValueError naming the allowed keys for any other value."""
    key = sort.removeprefix("-")
    if key not in REQUEST_LIST_SORTS:
        raise ValueError(f"sort: Sort by one of {', '.join(REQUEST_LIST_SORTS)} (with a leading - for descending).")
    direction = "-" if sort.startswith("-") else ""
    return [direction + field for field in REQUEST_LIST_SORTS[key]]
