"""Helpers for utilization tests: hourly rollup rows as the Prometheus pull would write them."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from django.utils import timezone

from allocations.models import Cluster, GpuRequest, Team
from billing.metering.aggregates import refresh_usage_aggregates
from billing.models import UtilizationRollup


def rollup(
    *,
    cluster: Cluster,
    hour: datetime,
    team: Team | None = None,
    request: GpuRequest | None = None,
    gpu_uuid: str = "GPU-0001",
    **fields: Any,
) -> UtilizationRollup:
    """One device-hour (a full hour of one-minute points unless ``sample_count`` says otherwise)."""
    values: dict[str, Any] = {
        "namespace": team.namespace if team else "",
        "pod": f"gpr-{request.pk}-0" if request else "",
        "gpu_model_name": "NVIDIA H100 80GB HBM3",
        "hostname": "gpu-node-1",
        "gpu_index": 0,
        "sample_count": 60,
        "avg_utilization_pct": 50.0,
        "peak_utilization_pct": 90.0,
        "avg_memory_used_mib": 8000.0,
        "peak_memory_used_mib": 9000.0,
        "energy_kwh": 0.4,
        "max_temperature_c": 65.0,
        "memory_pressure_minutes": 0,
        "is_complete": True,
        "pulled_at": timezone.now(),
    }
    values.update(fields)
    row = UtilizationRollup.objects.create(
        cluster=cluster, hour=hour, gpu_uuid=gpu_uuid, team=team, request=request, **values
    )
    # As every writer of rollups does (the ingest, the demo): the daily and monthly totals follow.
    refresh_usage_aggregates(cluster_id=cluster.pk, start=hour, end=hour + timedelta(hours=1))
    return row


def hours_back(now: datetime, count: int) -> list[datetime]:
    """The starts of the ``count`` whole UTC hours before the hour containing ``now``, oldest first."""
    top = now.replace(minute=0, second=0, microsecond=0)
    return [top - timedelta(hours=count - i) for i in range(count)]
