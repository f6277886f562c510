"""Units held now (approved, provisioning, active requests) against quotas and node pools: reads, no locks
(``allocations.quotas`` checks them under a row lock)."""

from __future__ import annotations

from collections.abc import Iterable

from django.db.models import IntegerField, Lookup, OuterRef, Q, QuerySet, Subquery, Sum
from django.db.models.functions import Coalesce
from django.db.models.lookups import IsNull

from allocations.compiled_reads import IDS_STAND_IN, CompiledRead, id_in
from allocations.models import QUOTA_HOLDING_STATUSES, GpuRequest, Quota


def quota_usage_by_quota(*, quotas: list[Quota], statuses: Iterable[str] = QUOTA_HOLDING_STATUSES) -> dict[int, int]:
    """Units each quota's team holds against it now, by quota id, in one query (``with_units_held``).

    ``statuses`` narrows the count, e.g. to what is running (active) rather than everything approved.
    """
    if not quotas:
        return {}
    chosen = Quota.objects.filter(pk__in=[quota.pk for quota in quotas]).order_by()
    return dict(with_units_held(chosen, statuses=statuses).values_list("pk", "units_held"))


def with_units_held(quotas: QuerySet[Quota], *, statuses: Iterable[str] = QUOTA_HOLDING_STATUSES) -> QuerySet[Quota]:
    """``quotas`` with ``units_held``: what each quota's team holds against it now (approved, provisioning or active
    requests: the same team and resource; the quota's pool if it names one; its cluster, as the request's cluster or
    its pool's, if it names one), in the same statement. The one rule every count of quota use goes through: the
    check under a lock, the headroom and team pages, the home and the approval queue, which read the quotas and what
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
