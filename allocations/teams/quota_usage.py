"""Quota scope and units held now (approved, provisioning, active requests) against quotas and node pools: reads, no
locks (``allocations.teams.quotas`` checks them under a row lock).

``quota_covers`` is the one rule of which requests count against which quota: the count of what a quota's team holds
(``with_units_held``), the quotas a new request must fit (``quotas.applicable_quotas``) and the headroom the approval
queue shows (``quotas.quota_headroom_by_request``) all go through it."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from django.db.models import F, IntegerField, OuterRef, Q, QuerySet, Subquery, Sum, Value
from django.db.models.functions import Coalesce
from django.db.models.lookups import Exact, IsNull

from allocations.models import QUOTA_HOLDING_STATUSES, GpuRequest, Quota

# A side of the rule: the expression of a column of the quota or of the request, by name.
Side = Callable[[str], Any]


def quota_covers(*, quota: Side, request: Side) -> Q:
    """Whether a request counts against a quota: the quota's team and resource; the quota's pool if it names one;
    its cluster, as the request's own cluster or its pool's, if it names one.

    ``quota(name)`` gives the quota's ``team_id``, ``resource_name``, ``node_pool_id`` and ``cluster_id``;
    ``request(name)`` the request's same four and ``node_pool__cluster_id``: ``columns``, ``outer_columns`` or
    ``constants``, as the query that asks reads each side."""
    return Q(
        Exact(quota("team_id"), request("team_id")),
        Exact(quota("resource_name"), request("resource_name")),
        Q(IsNull(quota("node_pool_id"), True)) | Q(Exact(quota("node_pool_id"), request("node_pool_id"))),
        Q(IsNull(quota("cluster_id"), True))
        | Q(Exact(quota("cluster_id"), request("cluster_id")))
        | Q(Exact(quota("cluster_id"), request("node_pool__cluster_id"))),
    )


def columns(prefix: str = "") -> Side:
    """A side read from the queried model's columns (through ``prefix``, a relation path ending in ``__``)."""
    return lambda name: F(f"{prefix}{name}")


def outer_columns(prefix: str = "") -> Side:
    """A side read from the outer query's columns (a correlated subquery)."""
    return lambda name: OuterRef(f"{prefix}{name}")


def constants(values: Mapping[str, Any]) -> Side:
    """A side of known values (a request not written yet); a missing name is NULL, which matches nothing."""
    return lambda name: Value(values.get(name), output_field=_FIELDS[name])


_FIELDS = {
    "team_id": IntegerField(),
    "resource_name": Quota._meta.get_field("resource_name"),
    "node_pool_id": IntegerField(),
    "cluster_id": IntegerField(),
    "node_pool__cluster_id": IntegerField(),
}


def quota_usage_by_quota(*, quotas: list[Quota], statuses: Iterable[str] = QUOTA_HOLDING_STATUSES) -> dict[int, int]:
    """Units each quota's team holds against it now, by quota id, in one query (``with_units_held``).

    ``statuses`` narrows the count, e.g. to what is running (active) rather than everything approved.
    """
    if not quotas:
        return {}
    chosen = Quota.objects.filter(pk__in=[quota.pk for quota in quotas]).order_by()
    return dict(with_units_held(chosen, statuses=statuses).values_list("pk", "units_held"))


def with_units_held(quotas: QuerySet[Quota], *, statuses: Iterable[str] = QUOTA_HOLDING_STATUSES) -> QuerySet[Quota]:
    """``quotas`` with ``units_held``: the units of the requests in ``statuses`` (by default approved, provisioning
    or active) that count against each quota (``quota_covers``), summed in the same statement."""
    held = (
        GpuRequest.objects.filter(quota_covers(quota=outer_columns(), request=columns()), status__in=sorted(statuses))
        .order_by()
        .values("team_id")
        .annotate(units=Sum("resource_units"))
        .values("units")
    )
    return quotas.annotate(units_held=Coalesce(Subquery(held, output_field=IntegerField()), 0))


def units_allocated_by_pool(*, cluster_ids: list[int]) -> dict[int, dict[str, int]]:
    """Units held now (approved, provisioning, active) per node pool and resource name, in one query."""
    if not cluster_ids:
        return {}
    rows = (
        GpuRequest.objects.filter(node_pool__cluster_id__in=cluster_ids, status__in=sorted(QUOTA_HOLDING_STATUSES))
        .values("node_pool_id", "resource_name")
        .annotate(units=Sum("resource_units"))
        .order_by()
    )
    held: dict[int, dict[str, int]] = {}
    for row in rows:
        held.setdefault(row["node_pool_id"], {})[row["resource_name"]] = int(row["units"] or 0)
    return held
