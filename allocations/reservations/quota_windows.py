"""Reservation windows as Kueue quota: while an approved window lasts, the team's ClusterQueue carries at least the
reserved units as ``nominalQuota`` on the pool's flavor (``allocations.clusters.rendering.cluster_context``);
after it, the quota as set. This module re-applies a cluster's objects when a window began or ended."""

from __future__ import annotations

import logging
from datetime import datetime

from django.db.models import Q

from allocations.clusters.gateways.base import ClusterGateway, GatewayError
from allocations.clusters.rendering import cluster_objects_apply
from allocations.models import Cluster, ClusterScheduler, Reservation, ReservationStatus
from gpucore.manifests import ManifestError

logger = logging.getLogger(__name__)


def _in_window(now: datetime) -> Q:
    return Q(status=ReservationStatus.APPROVED, start__lte=now, end__gt=now)


def reservations_out_of_step(*, now: datetime, cluster_id: int | None = None) -> dict[int, tuple[list[int], list[int]]]:
    """Per Kueue cluster, the reservations whose window should be applied but is not, and those applied that should
    no longer be (over, cancelled)."""
    due = Reservation.objects.filter(
        node_pool__cluster__scheduler=ClusterScheduler.KUEUE, node_pool__cluster__is_active=True
    )
    if cluster_id is not None:
        due = due.filter(node_pool__cluster_id=cluster_id)
    window = _in_window(now)
    stale = due.filter((window & Q(quota_applied=False)) | (~window & Q(quota_applied=True)))
    by_cluster: dict[int, tuple[list[int], list[int]]] = {}
    for pk, cluster, applied in stale.values_list("pk", "node_pool__cluster_id", "quota_applied"):
        raise_ids, restore_ids = by_cluster.setdefault(cluster, ([], []))
        (restore_ids if applied else raise_ids).append(pk)
    return by_cluster


def reservation_quotas_reconcile(
    *, now: datetime, cluster_id: int | None = None, gateway: ClusterGateway | None = None
) -> dict[str, str]:
    """Re-apply the objects of each Kueue cluster with a window out of step, then mark its reservations applied or
    restored; a cluster that fails keeps its marks, so the next run tries again."""
    results: dict[str, str] = {}
    for cluster_pk, (raise_ids, restore_ids) in reservations_out_of_step(now=now, cluster_id=cluster_id).items():
        cluster = Cluster.objects.get(pk=cluster_pk)
        try:
            cluster_objects_apply(cluster=cluster, gateway=gateway, at=now)
        except (GatewayError, ManifestError) as exc:
            logger.warning("applying reservation quotas on %s failed: %s", cluster.name, exc)
            results[cluster.name] = f"error: {exc}"
            continue
        Reservation.objects.filter(pk__in=raise_ids).update(quota_applied=True)
        Reservation.objects.filter(pk__in=restore_ids).update(quota_applied=False)
        results[cluster.name] = f"{len(raise_ids)} windows applied, {len(restore_ids)} restored"
    return results
