"""Writes of the billing app: pulling DCGM utilization from a cluster's Prometheus into hourly rollups.

How a pull reads Prometheus, and why: per hour, the per-minute measured series (``gpucore.utilization_promql``) are
reduced on the server to one point per series and hour (``avg_over_time`` and friends, evaluated at step 3600 s), so
1,000 GPUs x 24 h transfer 24,000 points per aggregate instead of 1.44 million raw ones. The minute series come from
the cluster's recording rules where it has them (``Cluster.prometheus_recording_rules``), else from one-minute
subqueries; the one-minute grid makes ``count_over_time`` a count of minutes measured (GPU-hours = minutes / 60)
whatever the scrape interval up to a minute, and lets each minute filter DCGM blank sentinels before averaging. An
hour is complete only where every device was scraped at every minute. Each hour [H, H+1h) is evaluated just before
its end (``_SUBQUERY_END``, ``_RECORDED_END``) so its 60 minutes are read on Prometheus 2 (closed ranges) and 3
(left-open) alike.
"""

from __future__ import annotations

import logging
import math
import time
from collections import defaultdict
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from allocations.models import Cluster, GpuRequest, Team
from billing.metering.aggregates import refresh_usage_aggregates
from billing.metering.prometheus import PrometheusClient, PrometheusError, Series
from billing.metering.pull_chunks import pull_chunk_hours
from billing.metering.rollup_store import ingest_hours_log, rollups_replace
from billing.models import IngestStatus, UtilizationWatermark
from gpucore import attribution
from gpucore.attribution import HourStats
from gpucore.utilization_promql import recorded_pull_queries, subquery_pull_queries

logger = logging.getLogger(__name__)

HOUR = timedelta(hours=1)
# Data for an hour is final once the last scrape and rule evaluation have landed; Prometheus writes with a delay.
SETTLE_DELAY = timedelta(minutes=2)
# How far back a catch-up of the alert inputs or the XID codes reads at most: a cluster whose rows stopped long ago is
# not re-read from the start.
CATCH_UP_LIMIT = timedelta(days=7)

_FIELD = {
    "util_avg": "avg_utilization_pct",
    "util_max": "peak_utilization_pct",
    "mem_avg": "avg_memory_used_mib",
    "mem_max": "peak_memory_used_mib",
    "energy_kwh": "energy_kwh",
}


@dataclass
class PullResult:
    """What one pull did: hours read, rows written, hours that failed, and the cluster's watermark after it."""

    hours: int = 0
    rows: int = 0
    failed_hours: list[datetime] = field(default_factory=list)
    watermark: datetime | None = None
    reads: int = 0  # chunks of hours read from Prometheus (each a few range queries)
    recorded_hours: int = 0  # hours read from the cluster's recording rules rather than by subqueries
    read_seconds: float = 0.0  # Prometheus queries and parsing
    rollup_seconds: float = 0.0  # attribution and merging in Python
    write_seconds: float = 0.0  # the database transaction (delete, bulk insert, ingest log, watermark)


def floor_hour(value: datetime) -> datetime:
    """The start of the UTC hour containing ``value`` (aware)."""
    if timezone.is_naive(value):
        raise ValueError("naive datetime: times are aware UTC")
    return value.astimezone(UTC).replace(minute=0, second=0, microsecond=0)


def hours_between(start: datetime, end: datetime) -> list[datetime]:
    """The starts of the UTC hours from the one holding ``start`` up to ``end`` (exclusive)."""
    hours = []
    hour = floor_hour(start)
    while hour < end:
        hours.append(hour)
        hour += HOUR
    return hours


def last_complete_hour_end(now: datetime) -> datetime:
    """The end of the last hour whose data Prometheus holds in full at ``now``."""
    return floor_hour(now - SETTLE_DELAY)


def prometheus_client_for(cluster: Cluster) -> PrometheusClient:
    """A Prometheus client for the cluster, with retry settings from ``BILLING_PROMETHEUS_*`` (optional)."""
    return PrometheusClient.for_cluster(
        cluster,
        retries=getattr(settings, "BILLING_PROMETHEUS_RETRIES", 3),
        backoff=getattr(settings, "BILLING_PROMETHEUS_BACKOFF_SECONDS", 0.5),
        timeout=(3.05, float(getattr(settings, "BILLING_PROMETHEUS_TIMEOUT_SECONDS", 60))),
    )


def hour_of_evaluation(timestamp: float) -> datetime:
    """The hour an hourly point sums up: each hour is evaluated shortly before its end (module docstring)."""
    return datetime.fromtimestamp(math.floor(timestamp / 3600) * 3600, tz=UTC)


@dataclass
class _Collected:
    """A chunk's rollups per (hour, device, owner), and per (hour, device) the minutes at which it was scraped."""

    rollups: dict[tuple[datetime, str, str, str, str], tuple[attribution.GpuIdentity, attribution.Owner, HourStats]]
    covered: dict[tuple[datetime, str, str], int]


def _collect(
    results: dict[str, list[Series]],
    *,
    cluster: Cluster,
    team_by_namespace: dict[str, int],
    request_team: dict[int, int],
) -> _Collected:
    """Per (hour, device, owner), the identity, owner and merged statistics of the query results; per device, its
    coverage of each hour."""
    parts: dict[tuple, dict[tuple, dict[str, float]]] = defaultdict(dict)
    meta: dict[tuple, tuple[attribution.GpuIdentity, attribution.Owner]] = {}
    for name, series_list in results.items():
        for series in series_list:
            identity = attribution.gpu_identity(series.labels, cluster=cluster.name)
            if identity is None:
                continue
            owner = attribution.owner_from_labels(
                series.labels, team_by_namespace=team_by_namespace, request_team=request_team
            )
            raw_key = series.key
            for timestamp, value in series.points:
                value = attribution.clean_value(value)
                if value is None:
                    continue
                hour = hour_of_evaluation(timestamp)
                key = (hour, identity.uuid, identity.mig_instance_id, owner.namespace, owner.pod)
                meta.setdefault(key, (identity, owner))
                # Labels other than those in `by` never reach us, so raw_key separates only true duplicates.
                parts[key].setdefault(raw_key - {("__name__", series.labels.get("__name__", ""))}, {})[name] = value
    rollups = {}
    owners_covered: dict[tuple[datetime, str, str], list[int]] = defaultdict(list)
    for key, by_series in parts.items():
        # Duplicate series of one owner measured the same minutes: the most, never the sum.
        owners_covered[key[:3]].append(max(int(values.get("covered", 0)) for values in by_series.values()))
        stats = []
        for values in by_series.values():
            samples = int(values.get("samples", 0))
            if samples <= 0:
                continue
            stats.append(HourStats(samples=samples, **{_FIELD[k]: v for k, v in values.items() if k in _FIELD}))
        merged = attribution.merge_stats(stats)
        if merged.samples:
            identity, owner = meta[key]
            rollups[key] = (identity, owner, merged)
    covered = {device: attribution.device_minutes_covered(minutes) for device, minutes in owners_covered.items()}
    return _Collected(rollups=rollups, covered=covered)


# A subquery's minutes lie on the absolute one-minute grid: evaluated one second before the hour's end, its range
# holds H, H+1m, ..., H+59m. Recorded minutes lie wherever the rule group's evaluation offset puts them: evaluated a
# millisecond before the end, the range holds the hour's 60 evaluations on Prometheus 2 (closed) and 3 (left-open).
_SUBQUERY_END = timedelta(seconds=1)
_RECORDED_END = timedelta(milliseconds=1)


def _run_queries(
    client: PrometheusClient, queries: dict[str, str], start: datetime, end: datetime
) -> dict[str, list[Series]]:
    """The queries' hourly series, ``BILLING_PULL_QUERY_CONCURRENCY`` at a time (Prometheus runs each on a core)."""
    workers = min(len(queries), max(1, int(getattr(settings, "BILLING_PULL_QUERY_CONCURRENCY", 4))))
    with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="prometheus-pull") as pool:
        futures = {name: pool.submit(client.query_range, query, start, end, 3600) for name, query in queries.items()}
        return {name: future.result() for name, future in futures.items()}


def read_hours(
    client: PrometheusClient,
    first_hour: datetime,
    last_hour: datetime,
    *,
    recorded_queries: dict[str, str] | None,
    subqueries: dict[str, str],
    census: str,
) -> tuple[dict[str, list[Series]], bool]:
    """Each query's hourly series over [first_hour, last_hour], and whether they came from the recording rules.

    With ``recorded_queries`` (the cluster's Prometheus records the minutes), hours with no point at all in the
    ``census`` query's answer (before the rules were installed) make the chunk be read by ``subqueries`` instead:
    never empty where the raw series hold data.
    """
    if recorded_queries is not None:
        start, end = first_hour + HOUR - _RECORDED_END, last_hour + HOUR - _RECORDED_END
        results = _run_queries(client, recorded_queries, start, end)
        hours_recorded = {hour_of_evaluation(at) for series in results[census] for at, _ in series.points}
        if len(hours_recorded) >= (last_hour - first_hour) // HOUR + 1:
            return results, True
    start, end = first_hour + HOUR - _SUBQUERY_END, last_hour + HOUR - _SUBQUERY_END
    return _run_queries(client, subqueries, start, end), False


def _read_hours(
    client: PrometheusClient, first_hour: datetime, last_hour: datetime, *, recorded: bool
) -> tuple[dict[str, list[Series]], bool]:
    max_age = int(getattr(settings, "BILLING_SCRAPE_MAX_AGE_SECONDS", 60))
    return read_hours(
        client,
        first_hour,
        last_hour,
        recorded_queries=recorded_pull_queries() if recorded else None,
        subqueries=subquery_pull_queries(max_age),
        census="covered",
    )


def _write_chunk(
    *,
    cluster: Cluster,
    hours: list[datetime],
    collected: _Collected,
    complete_before: datetime,
    now: datetime,
) -> int:
    """Replace the chunk's rollups and ingest log in one transaction; advance the watermark over contiguous hours.

    An ended hour is complete where every device seen in it was scraped at every minute; a device with minutes
    missing keeps what was measured (never zero, never carried over) with ``is_complete=False``, and the hour is
    logged ``partial``, shown as incomplete like a failed one.
    """
    short: dict[datetime, dict[tuple[str, str], int]] = defaultdict(dict)
    for (hour, uuid, mig), minutes in collected.covered.items():
        if not attribution.hour_is_covered(minutes):
            short[hour][(uuid, mig)] = minutes
    rows = [
        (
            cluster.pk,
            hour,
            identity.uuid,
            identity.mig_instance_id,
            owner.namespace[:63],
            owner.pod[:253],
            owner.team,
            owner.request_id,
            identity.model_name[:100],
            identity.mig_profile[:32],
            identity.host[:253],
            identity.gpu_index,
            stats.samples,
            stats.avg_utilization_pct,
            stats.peak_utilization_pct,
            stats.avg_memory_used_mib,
            stats.peak_memory_used_mib,
            None if identity.is_mig_instance else stats.energy_kwh,
            hour + HOUR <= complete_before and (identity.uuid, identity.mig_instance_id) not in short[hour],
            now,
        )
        for (hour, *_), (identity, owner, stats) in collected.rollups.items()
    ]
    per_hour: dict[datetime, int] = defaultdict(int)
    for hour, *_ in collected.rollups:
        per_hour[hour] += 1
    ended = [hour for hour in hours if hour + HOUR <= complete_before]
    log = []
    for hour in ended:
        status, note = IngestStatus.COMPLETE if per_hour.get(hour) else IngestStatus.NO_DATA, ""
        if short.get(hour):
            status, note = IngestStatus.PARTIAL, _coverage_note(short[hour])
        log.append((hour, status, per_hour.get(hour, 0), note))
    with transaction.atomic():
        # Serialises pulls of one cluster: the second waits here, then replaces the same rows.
        watermark = UtilizationWatermark.objects.select_for_update().filter(cluster=cluster).first()
        rollups_replace(cluster_id=cluster.pk, first_hour=hours[0], last_hour=hours[-1], rows=rows)
        # The daily and monthly totals the dashboards and the chargeback read follow the rollups just replaced.
        refresh_usage_aggregates(cluster_id=cluster.pk, start=hours[0], end=hours[-1] + HOUR)
        ingest_hours_log(cluster_id=cluster.pk, entries=log, now=now)
        if ended:
            _advance_watermark(cluster=cluster, watermark=watermark, first=hours[0], last=ended[-1], now=now)
    return len(rows)


def _coverage_note(short: dict[tuple[str, str], int]) -> str:
    """Which devices were not scraped at every minute of the hour, in words, for the ingest log."""
    fewest = min(short.values())
    devices = ", ".join(f"{uuid}/{mig}" if mig else uuid for uuid, mig in sorted(short)[:5])
    more = f" and {len(short) - 5} more" if len(short) > 5 else ""
    return (
        f"Scrapes missing: {len(short)} device(s) measured at fewer than 60 of 60 minutes "
        f"(fewest: {fewest}): {devices}{more}."
    )


def _advance_watermark(
    *, cluster: Cluster, watermark: UtilizationWatermark | None, first: datetime, last: datetime, now: datetime
) -> None:
    # Only over a contiguous run: an old range re-read by hand, or one past a gap, must not skip the gap.
    if watermark is None:
        UtilizationWatermark.objects.create(cluster=cluster, last_complete_hour=last, updated_at=now)
    elif first <= watermark.last_complete_hour + HOUR and last > watermark.last_complete_hour:
        watermark.last_complete_hour, watermark.updated_at = last, now
        watermark.save(update_fields=["last_complete_hour", "updated_at"])


def _mark_failed(*, cluster: Cluster, hours: list[datetime], error: str, now: datetime) -> None:
    with transaction.atomic():
        ingest_hours_log(
            cluster_id=cluster.pk, entries=[(hour, IngestStatus.FAILED, 0, error) for hour in hours], now=now
        )


def utilization_pull(
    *,
    cluster: Cluster,
    start: datetime | None = None,
    end: datetime | None = None,
    now: datetime | None = None,
    client: PrometheusClient | None = None,
    max_hours: int | None = None,
    progress: Callable[[int], None] | None = None,
) -> PullResult:
    """Read [start, end) from the cluster's Prometheus into hourly rollups, replacing what those hours held.

    By default it catches up from the hour after the watermark (or ``BILLING_UTILIZATION_BACKFILL_HOURS`` back,
    24 by default) to the last complete hour, at most ``max_hours`` (``BILLING_UTILIZATION_MAX_HOURS_PER_PULL``,
    a week by default) at a time. An hour not yet ended may be read on request: its rows say ``is_complete=False``
    and it is neither logged nor watermarked. On a Prometheus error the unread hours are logged as failed (shown
    as incomplete, never as zero use), the watermark stays, and the error is raised for the caller to retry.
    """
    now = now or timezone.now()
    complete_before = last_complete_hour_end(now)
    watermark = UtilizationWatermark.objects.filter(cluster=cluster).first()
    if start is None:
        if watermark is not None:
            start = watermark.last_complete_hour + HOUR
        else:
            start = complete_before - HOUR * int(getattr(settings, "BILLING_UTILIZATION_BACKFILL_HOURS", 24))
    start = floor_hour(start)
    end = complete_before if end is None else end
    if floor_hour(end) != end:
        end = floor_hour(end) + HOUR  # a partial hour is read whole
    max_hours = max_hours or int(getattr(settings, "BILLING_UTILIZATION_MAX_HOURS_PER_PULL", 24 * 7))
    hours = []
    hour = start
    while hour < end and len(hours) < max_hours:
        hours.append(hour)
        hour += HOUR
    result = PullResult(watermark=watermark.last_complete_hour if watermark else None)
    if not hours:
        return result
    client = client or prometheus_client_for(cluster)
    team_by_namespace = dict(Team.objects.values_list("namespace", "id"))
    request_team = dict(GpuRequest.objects.values_list("id", "team_id"))
    chunk_hours = pull_chunk_hours(cluster)
    for index in range(0, len(hours), chunk_hours):
        chunk = hours[index : index + chunk_hours]
        started = time.perf_counter()
        try:
            series, from_rules = _read_hours(client, chunk[0], chunk[-1], recorded=cluster.prometheus_recording_rules)
        except PrometheusError as exc:
            failed = [h for h in hours[index:] if h + HOUR <= complete_before]
            _mark_failed(cluster=cluster, hours=failed, error=str(exc), now=now)
            result.failed_hours.extend(failed)
            logger.warning("Utilization pull of %s stopped at %s: %s", cluster.name, chunk[0].isoformat(), exc)
            raise
        result.read_seconds += time.perf_counter() - started
        started = time.perf_counter()
        collected = _collect(series, cluster=cluster, team_by_namespace=team_by_namespace, request_team=request_team)
        result.rollup_seconds += time.perf_counter() - started
        started = time.perf_counter()
        result.rows += _write_chunk(
            cluster=cluster, hours=chunk, collected=collected, complete_before=complete_before, now=now
        )
        result.write_seconds += time.perf_counter() - started
        result.hours += len(chunk)
        result.recorded_hours += len(chunk) if from_rules else 0
        result.reads += 1
        if progress is not None:
            progress(len(chunk))
    watermark = UtilizationWatermark.objects.filter(cluster=cluster).first()
    result.watermark = watermark.last_complete_hour if watermark else None
    return result
