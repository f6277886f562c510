"""Alert inputs of the hourly rollups: per rollup, the hottest minute and the memory-pressure minutes.

Read from the cluster's Prometheus after a utilization pull (``billing.metering.services``) over the same hours, and
written onto the rollups it wrote.
"""

from __future__ import annotations

from collections import defaultdict
from datetime import datetime

from django.db.models import Max, Q

from allocations.models import Cluster, GpuRequest, Team
from billing.metering.prometheus import PrometheusClient
from billing.metering.pull_chunks import pull_chunk_hours
from billing.metering.services import (
    CATCH_UP_LIMIT,
    HOUR,
    hour_of_evaluation,
    hours_between,
    prometheus_client_for,
    read_hours,
)
from billing.models import UtilizationRollup
from gpucore import attribution
from gpucore.utilization_promql import health_pull_queries
from infra.reference_cache import ROLLUPS, invalidate

_QUERIES = ("temp_max", "pressure_minutes")


def _queries(*, recorded: bool) -> dict[str, str]:
    return {name: query for name, query in health_pull_queries(recorded=recorded).items() if name in _QUERIES}


def utilization_health_pull(
    *, cluster: Cluster, start: datetime, end: datetime, client: PrometheusClient | None = None
) -> int:
    """Fill ``max_temperature_c`` and ``memory_pressure_minutes`` of the cluster's rollups in [start, end).

    Run after ``utilization_pull`` over the same hours. Temperature is the GPU's, whoever held it (a MIG instance
    gets its GPU's); pressure minutes are the owner's series, 0 where memory was read and never pressed.
    """
    client = client or prometheus_client_for(cluster)
    team_by_namespace = dict(Team.objects.values_list("namespace", "id"))
    request_team = dict(GpuRequest.objects.values_list("id", "team_id"))
    hours = hours_between(start, end)
    updated = 0
    chunk_hours = pull_chunk_hours(cluster)
    for index in range(0, len(hours), chunk_hours):
        chunk = hours[index : index + chunk_hours]
        # The temperature is every GPU's every minute: hours without it recorded predate the rules.
        results, _ = read_hours(
            client,
            chunk[0],
            chunk[-1],
            recorded_queries=_queries(recorded=True) if cluster.prometheus_recording_rules else None,
            subqueries=_queries(recorded=False),
            census="temp_max",
        )
        temps: dict[tuple[datetime, str], float] = {}
        pressure: dict[tuple, int] = defaultdict(int)
        for name, series_list in results.items():
            for series in series_list:
                identity = attribution.gpu_identity(series.labels, cluster=cluster.name)
                if identity is None:
                    continue
                owner = attribution.owner_from_labels(
                    series.labels, team_by_namespace=team_by_namespace, request_team=request_team
                )
                for timestamp, raw in series.points:
                    value = attribution.clean_value(raw)
                    if value is None:
                        continue
                    at = hour_of_evaluation(timestamp)
                    if name == "temp_max":
                        temps[(at, identity.uuid)] = max(value, temps.get((at, identity.uuid), value))
                    else:
                        key = (at, identity.uuid, identity.mig_instance_id, owner.namespace, owner.pod)
                        pressure[key] = max(pressure[key], int(value))
        rows = list(UtilizationRollup.objects.filter(cluster=cluster, hour__gte=chunk[0], hour__lte=chunk[-1]))
        for row in rows:
            row.max_temperature_c = temps.get((row.hour, row.gpu_uuid))
            key = (row.hour, row.gpu_uuid, row.mig_instance, row.namespace, row.pod)
            row.memory_pressure_minutes = pressure.get(key, 0) if row.peak_memory_used_mib is not None else None
        UtilizationRollup.objects.bulk_update(rows, ["max_temperature_c", "memory_pressure_minutes"], batch_size=2000)
        invalidate(ROLLUPS)  # the alert inputs changed: the alerts derived from them are read again
        updated += len(rows)
    return updated


def utilization_health_catch_up(
    *, cluster: Cluster, through: datetime, read_from: datetime | None = None, client: PrometheusClient | None = None
) -> int:
    """Fill the alert inputs of the cluster's rollups before ``through`` that no health pull has read; returns rows
    updated.

    As ``gpu_health_catch_up`` does for the XID codes: from the hour after the newest rollup holding an alert input,
    or from ``read_from`` (the hours a utilization pull just read) if earlier, at most ``CATCH_UP_LIMIT`` back. So a
    task retried after this pull failed, whose utilization pull then finds nothing new, still fills the hours left
    out. A health pull sets the pressure minutes of every row whose memory was read (0 when never pressed), so the
    newest such row marks how far it got.
    """
    oldest = through - CATCH_UP_LIMIT
    newest = (
        UtilizationRollup.objects.filter(cluster=cluster, hour__gte=oldest, hour__lt=through)
        .filter(Q(max_temperature_c__isnull=False) | Q(memory_pressure_minutes__isnull=False))
        .aggregate(Max("hour"))["hour__max"]
    )
    starts = [hour for hour in (newest + HOUR if newest else None, read_from) if hour is not None]
    if not starts:
        return 0
    start = max(min(starts), oldest)
    if start >= through:
        return 0
    return utilization_health_pull(cluster=cluster, start=start, end=through, client=client)
