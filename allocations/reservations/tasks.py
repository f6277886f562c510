"""Celery task of reservations: a Kueue cluster's queues carry each approved window's quota while it lasts."""

from __future__ import annotations

from celery import shared_task


@shared_task(name="allocations.reconcile_reservation_quotas", acks_late=True)
def reconcile_reservation_quotas(cluster_id: int | None = None) -> dict[str, str]:
    """Beat (and after a decision): re-apply the queues of each Kueue cluster (or one) whose reservation windows
    began or ended since the last run; a cluster with nothing to change is left alone, so running it twice is safe."""
    from django.utils import timezone

    from allocations.reservations.quota_windows import reservation_quotas_reconcile

    return reservation_quotas_reconcile(now=timezone.now(), cluster_id=cluster_id)
