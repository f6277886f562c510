"""Hourly time series of measured use for one request or one team: GPU utilization, memory and power, per UTC hour.

Read from the hourly rollups (``billing.models.UtilizationRollup``) in one grouped query. Per hour: utilization is
the time-weighted mean over the owner's devices (percent), memory the sum of the devices' average use and the
largest single device's peak (GB = MiB / 1024), power the devices' energy in that hour as average watts (kWh x 1000:
an hour's kWh is its mean kW). MIG instances report no power of their own, so their hours have none.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from django.db.models import Max, QuerySet, Sum
from django.utils import timezone

from allocations.models import GpuRequest
from billing.metering.selectors import MIB_PER_GB, utilization_samples, utilization_weighted_sum
from billing.models import UtilizationRollup

REQUEST_SERIES_MAX_DAYS = 90  # an allocation's life, up to this many days back (2,160 points at most)
TEAM_SERIES_DAYS = 30


def hourly_series(qs: QuerySet[UtilizationRollup]) -> list[dict[str, Any]]:
    """One point per hour with rollups: ``hour``, ``utilization_pct``, ``memory_gb``, ``peak_memory_gb``,
    ``power_w`` (each None where not measured)."""
    rows = (
        qs.values("hour")
        .annotate(
            util_weighted=utilization_weighted_sum(),
            util_samples=utilization_samples(),
            memory_mib=Sum("avg_memory_used_mib"),
            peak_mib=Max("peak_memory_used_mib"),
            energy=Sum("energy_kwh"),
        )
        .order_by("hour")
    )
    points = []
    for row in rows:
        points.append(
            {
                "hour": row["hour"],
                "utilization_pct": (
                    round(row["util_weighted"] / row["util_samples"], 1) if row["util_samples"] else None
                ),
                "memory_gb": round(row["memory_mib"] / MIB_PER_GB, 2) if row["memory_mib"] is not None else None,
                "peak_memory_gb": round(row["peak_mib"] / MIB_PER_GB, 2) if row["peak_mib"] is not None else None,
                "power_w": round(row["energy"] * 1000, 1) if row["energy"] is not None else None,
            }
        )
    return points


def request_series_window(request: GpuRequest, *, now: datetime | None = None) -> tuple[datetime, datetime]:
    """The allocation's life: from its activation (else creation) to its end (else now), at most 90 days back."""
    now = now or timezone.now()
    end = min(request.ended_at or now, now)
    start = max(request.activated_at or request.created_at, end - timedelta(days=REQUEST_SERIES_MAX_DAYS))
    return start.replace(minute=0, second=0, microsecond=0), end


def request_series(
    request: GpuRequest, *, now: datetime | None = None, no_rollups_between: tuple[datetime, datetime] | None = None
) -> list[dict[str, Any]]:
    """The request's hourly series over its allocation's life (the caller has checked it may be seen).

    ``no_rollups_between``: [start, end) in which the caller found none of the request's rollups; a life inside it
    has no points, and is not read again."""
    start, end = request_series_window(request, now=now)
    if no_rollups_between is not None and no_rollups_between[0] <= start and end <= no_rollups_between[1]:
        return []
    return hourly_series(UtilizationRollup.objects.filter(request=request, hour__gte=start, hour__lt=end))


def team_series(team_id: int, *, now: datetime | None = None, days: int = TEAM_SERIES_DAYS) -> list[dict[str, Any]]:
    """The team's hourly series over the last ``days`` days, all its devices together (the caller checked access)."""
    now = now or timezone.now()
    end = now.replace(minute=0, second=0, microsecond=0) + timedelta(hours=1)
    return hourly_series(UtilizationRollup.objects.filter(team_id=team_id, hour__gte=end - timedelta(days=days)))
