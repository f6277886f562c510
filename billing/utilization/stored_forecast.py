"""The capacity forecast kept in the database, so the cost dashboards read a few rows instead of every request's held
spans of the week on each view.

``billing.store_capacity_forecast`` (beat: hourly) computes ``pool_forecasts`` and replaces the stored set; the
dashboards read it while it is recent, and compute and store it themselves when it is not (before the task's first
run, or with beat stopped), so they never show a forecast more than ``STALE_AFTER`` old.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from django.db import transaction
from django.utils import timezone

from allocations.models import NodePool
from billing.models import StoredPoolForecast
from billing.utilization.selectors import PoolForecast, pool_forecasts
from gpucore.forecast import forecast_as_json, forecast_from_json

STALE_AFTER = timedelta(hours=2)  # the task runs hourly: one run may be missed


def capacity_forecast_store(*, now: datetime | None = None) -> list[PoolForecast]:
    """Compute every pool resource's forecast as of ``now`` and replace the stored ones; idempotent (the same hour
    stores the same rows again). Returns what was stored."""
    now = now or timezone.now()
    forecasts = pool_forecasts(now=now)
    rows = [
        StoredPoolForecast(
            pool=item.pool,
            resource_name=item.resource_name,
            position=position,
            capacity=item.capacity,
            allocated_now=item.allocated_now,
            allocation=forecast_as_json(item.allocation),
            utilization=forecast_as_json(item.utilization),
            as_of=item.allocation.now,
        )
        for position, item in enumerate(forecasts)
    ]
    with transaction.atomic():
        StoredPoolForecast.objects.all().delete()
        StoredPoolForecast.objects.bulk_create(rows)
    return forecasts


def stored_pool_forecasts(*, now: datetime | None = None) -> list[PoolForecast]:
    """The stored forecasts when computed within ``STALE_AFTER`` of ``now``; otherwise computed and stored now."""
    now = now or timezone.now()
    rows = list(StoredPoolForecast.objects.filter(as_of__gt=now - STALE_AFTER).order_by("position"))
    if not rows or len({row.as_of for row in rows}) > 1:
        return capacity_forecast_store(now=now)
    pools = NodePool.objects.select_related("cluster", "gpu_model").in_bulk({row.pool_id for row in rows})
    return [
        PoolForecast(
            pool=pools[row.pool_id],
            resource_name=row.resource_name,
            capacity=row.capacity,
            allocated_now=row.allocated_now,
            allocation=forecast_from_json(row.allocation),
            utilization=forecast_from_json(row.utilization),
        )
        for row in rows
    ]
