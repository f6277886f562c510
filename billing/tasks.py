"""Celery tasks of the billing app: thin, named, idempotent; the work is in ``billing.metering`` and ``costs``."""

from __future__ import annotations

import logging

from celery import shared_task
from django.conf import settings
from django.utils import timezone

from allocations.models import Cluster
from billing.costs import tasks as costs_tasks  # registers billing.email_monthly_reports with autodiscovery
from billing.costs.services import monthly_reports_close, previous_month
from billing.metering.alert_inputs import utilization_health_catch_up
from billing.metering.gpu_health import gpu_health_catch_up
from billing.metering.partitions import drop_expired_hourly, ensure_month_partitions
from billing.metering.prometheus import PrometheusUnavailable
from billing.metering.services import HOUR, utilization_pull
from billing.reclaim.services import idle_reclaim_run
from billing.utilization.stored_forecast import capacity_forecast_store

logger = logging.getLogger(__name__)


@shared_task(
    name="billing.pull_utilization",
    acks_late=True,
    reject_on_worker_lost=True,
    # Only an unreachable or overloaded Prometheus is worth retrying; a bad query or a bad secret reference is not.
    autoretry_for=(PrometheusUnavailable,),
    retry_backoff=30,
    retry_backoff_max=900,
    retry_jitter=True,
    max_retries=5,
)
def pull_utilization(cluster_id: int) -> dict[str, object]:
    """Catch one cluster's rollups up to its last complete hour; re-running it re-reads, never doubles, an hour."""
    cluster = Cluster.objects.filter(pk=cluster_id, is_active=True).exclude(prometheus_url="").first()
    if cluster is None:
        return {"cluster": cluster_id, "skipped": "inactive, missing or without a Prometheus URL"}
    result = utilization_pull(cluster=cluster)
    if result.watermark is not None:
        end = result.watermark + HOUR
        read_from = end - result.hours * HOUR if result.hours else None
        # The alert inputs (hottest minute, minutes of memory pressure) and the XID codes and driver versions per GPU
        # (the troubleshooting tree) for the hours the pull just read, and for those a failed try left out.
        utilization_health_catch_up(cluster=cluster, through=end, read_from=read_from)
        gpu_health_catch_up(cluster=cluster, through=end, read_from=read_from)
    return {
        "cluster": cluster.name,
        "hours": result.hours,
        "rows": result.rows,
        "watermark": result.watermark.isoformat() if result.watermark else None,
    }


@shared_task(name="billing.pull_utilization_all", acks_late=True)
def pull_utilization_all() -> list[int]:
    """Queue one ``billing.pull_utilization`` per active cluster with a Prometheus URL (beat: every 5 minutes)."""
    ids = list(
        Cluster.objects.filter(is_active=True).exclude(prometheus_url="").order_by("pk").values_list("pk", flat=True)
    )
    for cluster_id in ids:
        # One task per cluster isolates failures: one dead Prometheus never holds the others back.
        try:
            pull_utilization.delay(cluster_id)
        except Exception:  # an eager run re-raises the task's error; the others must still be queued
            logger.exception("Utilization pull of cluster %s failed", cluster_id)
    return ids


@shared_task(name="billing.close_previous_month", acks_late=True)
def close_previous_month() -> dict[str, object]:
    """Close last month's reports (beat: 1st of the month) and queue their email; re-running changes nothing closed."""
    result = monthly_reports_close(month=previous_month())
    return {
        "month": f"{result.month:%Y-%m}",
        "created": result.created,
        "already_closed": result.already_closed,
        "failed": result.failed,
    }


__all__ = ["close_previous_month", "costs_tasks", "pull_utilization", "pull_utilization_all"]


@shared_task(name="billing.reclaim_idle_workloads", acks_late=True)
def reclaim_idle_workloads() -> dict[str, object]:
    """Warn, then suspend, idle development workloads (beat: hourly, after the pull); a re-run repeats nothing."""
    result = idle_reclaim_run()
    return {
        "enabled": result.enabled,
        "warned": result.warned,
        "suspended": result.suspended,
        "failed": result.failed,
    }


@shared_task(name="billing.maintain_hourly_partitions", acks_late=True)
def maintain_hourly_partitions() -> dict[str, object]:
    """Create the next months' partitions of the hourly tables and drop the months past retention (beat: daily)."""
    now = timezone.now()
    created = ensure_month_partitions(now=now)
    dropped = drop_expired_hourly(now=now, retention_months=settings.HOURLY_RETENTION_MONTHS)
    return {"created": created, "dropped": dropped}


@shared_task(name="billing.store_capacity_forecast", acks_late=True)
def store_capacity_forecast() -> dict[str, object]:
    """Compute the capacity forecast per pool resource and replace the stored one the dashboards read (beat: hourly,
    after the pull); a re-run in the same hour stores the same rows."""
    return {"pool_resources": len(capacity_forecast_store())}
