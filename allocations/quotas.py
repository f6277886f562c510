"""Quota enforcement: which quotas apply to an allocation, and the check that holds under concurrency.

Callers lock the team's row (``Team.objects.select_for_update()``) before checking and writing, so concurrent
submissions and approvals of one team are serialized by PostgreSQL instead of racing a read-then-write.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.core.exceptions import ValidationError
from django.db.models import Q

from allocations.models import GpuRequest, NodePool, Quota, Team
from allocations.selectors import quota_usage, quota_usage_by_quota


@dataclass(frozen=True)
class QuotaHeadroom:
    """One quota that applies to an allocation: its limit, what is held now, and what is left."""

    quota: Quota
    in_use: int

    @property
    def available(self) -> int:
        return max(self.quota.limit - self.in_use, 0)


class QuotaExceeded(ValidationError):
    """The allocation would take the team over a quota; the message names the quota, limit, use and ask."""


def _covers(quota: Quota, node_pool: NodePool | None) -> bool:
    # A loaded quota's scope test: the same rule as the query in ``applicable_quotas``.
    if quota.cluster_id is None and quota.node_pool_id is None:
        return True
    return node_pool is not None and (quota.node_pool_id == node_pool.pk or quota.cluster_id == node_pool.cluster_id)


def applicable_quotas(*, team: Team, resource_name: str, node_pool: NodePool | None) -> list[Quota]:
    """Quotas on this resource that cover the pool: the pool's own, its cluster's, and the team-wide one."""
    scope = Q(cluster__isnull=True, node_pool__isnull=True)
    if node_pool is not None:
        scope |= Q(node_pool=node_pool) | Q(cluster_id=node_pool.cluster_id)
    return list(
        Quota.objects.filter(scope, team=team, resource_name=resource_name).select_related(
            "cluster", "node_pool__cluster"
        )
    )


def quota_headroom(*, team: Team, resource_name: str, node_pool: NodePool | None) -> list[QuotaHeadroom]:
    """Each applicable quota with what the team holds against it now."""
    return [
        QuotaHeadroom(quota=quota, in_use=quota_usage(team=team, resource_name=resource_name, quota=quota))
        for quota in applicable_quotas(team=team, resource_name=resource_name, node_pool=node_pool)
    ]


def quota_headroom_by_request(*, requests: list[GpuRequest]) -> dict[int, list[QuotaHeadroom]]:
    """``quota_headroom`` of each request, by request id, read in two queries for the whole list (a display read)."""
    if not requests:
        return {}
    quotas = list(
        Quota.objects.filter(
            team_id__in={request.team_id for request in requests},
            resource_name__in={request.resource_name for request in requests},
        ).select_related("cluster", "node_pool__cluster")
    )
    usage = quota_usage_by_quota(quotas=quotas)
    return {
        request.pk: [
            QuotaHeadroom(quota=quota, in_use=usage[quota.pk])
            for quota in quotas
            if quota.team_id == request.team_id
            and quota.resource_name == request.resource_name
            and _covers(quota, request.node_pool)
        ]
        for request in requests
    }


def quota_check(*, team: Team, resource_name: str, units: int, node_pool: NodePool | None) -> list[QuotaHeadroom]:
    """Raise QuotaExceeded unless ``units`` more of the resource fit every applicable quota of the team.

    A resource with no quota at all is refused: quotas are allowances, and an admin grants them.
    Call it with the team row locked, in the same transaction as the write it guards.
    """
    headroom = quota_headroom(team=team, resource_name=resource_name, node_pool=node_pool)
    where = f" on {node_pool}" if node_pool is not None else ""
    if not headroom:
        raise QuotaExceeded(
            f"Team {team.slug} has no quota for {resource_name}{where}. Ask a platform admin for one.",
            code="no_quota",
        )
    for item in headroom:
        if item.in_use + units > item.quota.limit:
            raise QuotaExceeded(
                f"Quota exceeded: team {team.slug} may hold {item.quota.limit} {resource_name} "
                f"({item.quota.scope_label}); {item.in_use} in use, {units} asked, {item.available} available.",
                code="quota_exceeded",
            )
    return headroom
