"""Pulling GPU error signals from a cluster's Prometheus: XID codes and driver versions per GPU and hour.

Kept apart from the utilization rollups (``billing.metering.services``) on purpose: its own queries, its own table
(``GpuHealthHour``), one GPU per row whoever held it. Two queries per chunk of hours:

- *devices*: per GPU and driver version, the minutes it reported ``DCGM_FI_DEV_XID_ERRORS`` in the hour (every GPU,
  also those with no XID, so the driver versions of the whole cluster are known); from the cluster's recording
  rules where it has them, else by one-minute subqueries (``gpucore.utilization_promql``);
- *XID minutes*: the one-minute points where the gauge was non-zero, a range query at a 60 s step. XIDs are rare,
  so this returns almost nothing on a healthy cluster; ``gpucore.xid.xid_hours`` turns the minutes into codes and
  events. The range starts one minute before the first hour, so a code that was already showing is not a new event.
"""

from __future__ import annotations

from collections import defaultdict
from datetime import UTC, datetime, timedelta

from django.db import transaction
from django.db.models import Max
from django.utils import timezone

from allocations.models import Cluster
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
from billing.models import GpuHealthHour
from gpucore import attribution
from gpucore.utilization_promql import GPU_BY, XID_EXPR, health_pull_queries
from gpucore.xid import xid_hours

MINUTE = timedelta(minutes=1)
XID_MINUTES_QUERY = f"max by ({GPU_BY}) ({XID_EXPR} > 0)"


def _devices_query(*, recorded: bool) -> dict[str, str]:
    return {"devices": health_pull_queries(recorded=recorded)["devices"]}


def _version_key(version: str) -> tuple[int, ...]:
    return tuple(int(part) for part in version.split(".") if part.isdigit())


def gpu_health_pull(
    *,
    cluster: Cluster,
    start: datetime,
    end: datetime,
    client: PrometheusClient | None = None,
    now: datetime | None = None,
) -> int:
    """Replace the cluster's ``GpuHealthHour`` rows of [start, end) with what Prometheus holds; returns rows written.

    Idempotent: a re-run over the same hours writes the same rows. Run after ``utilization_pull`` over its hours.
    """
    client = client or prometheus_client_for(cluster)
    now = now or timezone.now()
    hours = hours_between(start, end)
    written = 0
    chunk_hours = pull_chunk_hours(cluster)
    for index in range(0, len(hours), chunk_hours):
        chunk = hours[index : index + chunk_hours]
        rows = _read_chunk(client, cluster=cluster, first=chunk[0], last=chunk[-1], now=now)
        with transaction.atomic():
            GpuHealthHour.objects.filter(cluster=cluster, hour__gte=chunk[0], hour__lte=chunk[-1]).delete()
            GpuHealthHour.objects.bulk_create(rows, batch_size=2000)
        written += len(rows)
    return written


def gpu_health_catch_up(
    *, cluster: Cluster, through: datetime, read_from: datetime | None = None, client: PrometheusClient | None = None
) -> int:
    """Pull the GPU health hours before ``through`` that the cluster lacks; returns rows written.

    From the hour after the cluster's newest row, or from ``read_from`` (the hours a utilization pull just read)
    if earlier, at most ``CATCH_UP_LIMIT`` back. So a task retried after this pull failed, whose utilization pull
    then finds nothing new, still fills the hours left out.
    """
    newest = GpuHealthHour.objects.filter(cluster=cluster, hour__lt=through).aggregate(Max("hour"))["hour__max"]
    starts = [hour for hour in (newest + HOUR if newest else None, read_from) if hour is not None]
    if not starts:
        return 0
    start = max(min(starts), through - CATCH_UP_LIMIT)
    if start >= through:
        return 0
    return gpu_health_pull(cluster=cluster, start=start, end=through, client=client)


def _read_chunk(
    client: PrometheusClient, *, cluster: Cluster, first: datetime, last: datetime, now: datetime
) -> list[GpuHealthHour]:
    # Each hour evaluated just before its end, as the utilization pull does (billing.metering.services); from the
    # recorded minutes on a cluster whose Prometheus records them. The XID minutes are a plain range query.
    results, _ = read_hours(
        client,
        first,
        last,
        recorded_queries=_devices_query(recorded=True) if cluster.prometheus_recording_rules else None,
        subqueries=_devices_query(recorded=False),
        census="devices",
    )
    devices = results["devices"]
    minutes = client.query_range(XID_MINUTES_QUERY, first - MINUTE, last + HOUR - MINUTE, 60)
    rows: dict[tuple[datetime, str], GpuHealthHour] = {}
    versions: dict[tuple[datetime, str], dict[str, int]] = defaultdict(dict)
    for series in devices:
        identity = attribution.gpu_identity(series.labels, cluster=cluster.name)
        if identity is None:
            continue
        for timestamp, value in series.points:
            reported = attribution.clean_value(value)
            if not reported:
                continue
            hour = hour_of_evaluation(timestamp)
            key = (hour, identity.uuid)
            row = rows.get(key)
            if row is None:
                row = rows[key] = GpuHealthHour(
                    cluster=cluster,
                    hour=hour,
                    gpu_uuid=identity.uuid,
                    hostname=identity.host[:253],
                    gpu_index=identity.gpu_index,
                    gpu_model_name=identity.model_name[:100],
                    pulled_at=now,
                )
            row.reported_minutes = max(row.reported_minutes, int(reported))
            version = series.labels.get("DCGM_FI_DRIVER_VERSION", "")[:32]
            versions[key][version] = max(versions[key].get(version, 0), int(reported))
    for key, seen in versions.items():
        # An upgrade within the hour shows two versions: the one reported longest, the newer on a tie.
        rows[key].driver_version = max(seen, key=lambda v: (seen[v], _version_key(v), v))
    for series in minutes:
        identity = attribution.gpu_identity(series.labels, cluster=cluster.name)
        if identity is None:
            continue
        for hour_start, summary in xid_hours(series.points, start=first.timestamp()).items():
            row = rows.get((datetime.fromtimestamp(hour_start, tz=UTC), identity.uuid))
            if row is None:  # the devices query is the census: a minute outside it is from a stale series
                continue
            row.xid_minutes, row.xid_events = summary.minutes, summary.events
            row.xid_codes, row.last_xid = list(summary.codes), summary.last
    return list(rows.values())
