"""Units held now (approved, provisioning, active requests) against quotas and node pools: reads, no locks
(``allocations.quotas`` checks them under a row lock)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from django.db.models import IntegerField, Lookup, OuterRef, Q, QuerySet, Subquery, Sum
from django.db.models.functions import Coalesce
from django.db.models.lookups import IsNull

from allocations.compiled_reads import IDS_STAND_IN, CompiledRead, id_in
from allocations.models import QUOTA_HOLDING_STATUSES, GpuRequest, Quota, Team

# What ``usage_by_quota`` reads of the requests held, grouped (with their ``units``).
USAGE_COLUMNS = ("team_id", "resource_name", "cluster_id", "node_pool_id", "node_pool__cluster_id")


def held_rows(*filters: Q | Lookup, statuses: Iterable[str] = QUOTA_HOLDING_STATUSES, **lookups: Any) -> QuerySet:
    """Units held by the requests in ``statuses`` matching the filters, per ``USAGE_COLUMNS``: ``usage_by_quota``'s
    rows (a queryset, so a ``CompiledRead`` can compile it)."""
    return (
        GpuRequest.objects.filter(*filters, status__in=sorted(statuses), **lookups)
        .values(*USAGE_COLUMNS)
        .annotate(units=Sum("resource_units"))
        .order_by()
    )


def quota_usage(*, team: Team, resource_name: str, quota: Quota | None = None) -> int:
    """Units of a resource the team holds now (approved, provisioning or active), within the quota's scope."""
    qs = GpuRequest.objects.filter(team=team, resource_name=resource_name, status__in=QUOTA_HOLDING_STATUSES)
    if quota is not None and quota.node_pool_id:
        qs = qs.filter(node_pool_id=quota.node_pool_id)
    elif quota is not None and quota.cluster_id:
        qs = qs.filter(Q(cluster_id=quota.cluster_id) | Q(node_pool__cluster_id=quota.cluster_id))
    return int(qs.aggregate(total=Sum("resource_units"))["total"] or 0)


def quota_usage_by_quota(*, quotas: list[Quota], statuses: Iterable[str] = QUOTA_HOLDING_STATUSES) -> dict[int, int]:
    """Units each quota's team holds against it now, by quota id, in one query (counted as ``quota_usage`` does).

    ``statuses`` narrows the count, e.g. to what is running (active) rather than everything approved.
    """
    if not quotas:
        return {}
    held = held_rows(
        statuses=statuses,
        team_id__in={quota.team_id for quota in quotas},
        resource_name__in={quota.resource_name for quota in quotas},
    )
    return usage_by_quota(quotas=quotas, rows=list(held))


def with_units_held(quotas: QuerySet[Quota], *, statuses: Iterable[str] = QUOTA_HOLDING_STATUSES) -> QuerySet[Quota]:
    """``quotas`` with ``units_held``: what each quota's team holds against it now, counted as ``usage_by_quota``
    counts it (the same team and resource; the quota's pool if it names one; its cluster, as the request's cluster or
    its pool's, if it names one), in the same statement: the home and the approval queue read the quotas and what
    was held against them in two round trips (issue #15). Quotas chosen by a list of ids take ``id_among``, not
    ``id_in``: with ``id_in`` PostgreSQL planned such a statement again on every run (0.3 ms, more than the round
    trip saved)."""
    held = (
        GpuRequest.objects.filter(
            team_id=OuterRef("team_id"), resource_name=OuterRef("resource_name"), status__in=sorted(statuses)
        )
        .filter(IsNull(OuterRef("node_pool_id"), True) | Q(node_pool_id=OuterRef("node_pool_id")))
        .filter(
            IsNull(OuterRef("cluster_id"), True)
            | Q(cluster_id=OuterRef("cluster_id"))
            | Q(node_pool__cluster_id=OuterRef("cluster_id"))
        )
        .order_by()
        .values("team_id")
        .annotate(units=Sum("resource_units"))
        .values("units")
    )
    return quotas.annotate(units_held=Coalesce(Subquery(held, output_field=IntegerField()), 0))


def usage_by_quota(*, quotas: list[Quota], rows: list[dict[str, Any]]) -> dict[int, int]:
    """Units held against each quota, by quota id, from ``rows`` of units held per team, resource name, cluster and
    pool (``team_id``, ``resource_name``, ``cluster_id``, ``node_pool_id``, ``node_pool__cluster_id``, ``units``)."""
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


def units_allocated_by_pool(*, cluster_ids: list[int]) -> dict[int, dict[str, int]]:
    """Units held now (approved, provisioning, active) per node pool and resource name, in one query."""
    if not cluster_ids:
        return {}
    rows = _ALLOCATED_BY_POOL.values(clusters=sorted(cluster_ids))
    held: dict[int, dict[str, int]] = {}
    for row in rows:
        held.setdefault(row["node_pool_id"], {})[row["resource_name"]] = int(row["units"] or 0)
    return held


def _allocated_by_pool(clusters: Lookup) -> QuerySet:
    return (
        GpuRequest.objects.filter(clusters, status__in=sorted(QUOTA_HOLDING_STATUSES))
        .values("node_pool_id", "resource_name")
        .annotate(units=Sum("resource_units"))
        .order_by()
    )


# Through SQL compiled once per process, the clusters' ids as one array (the approver's home, issue #15).
_ALLOCATED_BY_POOL = CompiledRead(
    GpuRequest,
    lambda clusters: _allocated_by_pool(id_in("node_pool__cluster_id", clusters)),
    stand_ins={"clusters": IDS_STAND_IN},
)
