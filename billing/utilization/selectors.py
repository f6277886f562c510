"""Reads for utilization alerts, usage summaries and capacity forecasts, computed from the hourly rollups on read.

The rules are pure (gpucore.alerts, gpucore.forecast); this module only gathers their inputs (the rollups through
``billing.metering``) and the context of the team and platform pages and partials that show them
(templates/billing/*utilization*); the request page's partial, with its right-sizing advice, is
``billing.utilization.request_utilization``. Figures are drawn by the views (``billing.charts``).
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, TypeVar

from django.db.models import Count, F, Max, Q, QuerySet, Sum
from django.utils import timezone

from allocations.models import Cluster, GpuRequest, NodePool, Team
from allocations.requests.held_intervals import held_span_rows
from allocations.selectors import User, teams_visible_to, user_is_approver
from billing.metering.selectors import (
    MIB_PER_GB,
    incomplete_hours,
    ingested_through,
    rollup_usage_aggregates,
    utilization_samples,
    utilization_weighted_sum,
    weighted_utilization_pct,
)
from billing.models import UtilizationRollup, UtilizationWatermark
from billing.utilization.alert_groups import alert_group_rows
from gpucore import alerts as alert_rules
from gpucore import forecast as forecast_rules
from infra.reference_cache import ROLLUPS, cached

_T = TypeVar("_T")

HOUR = timedelta(hours=1)
TEAM_WINDOW_DAYS = 7
PLATFORM_WINDOW_DAYS = 7
MAX_ALERTS_SHOWN = 50
_ROLLUP_FIELDS = (
    "hour",
    "cluster__name",
    "gpu_uuid",
    "mig_instance",
    "sample_count",
    "avg_utilization_pct",
    "max_temperature_c",
    "memory_pressure_minutes",
    "peak_memory_used_mib",
    "is_complete",
    "team__slug",
    "request_id",
    "hostname",
    "gpu_model_name",
)


def window(*, days: int, now: datetime | None = None) -> tuple[datetime, datetime]:
    """The ``days`` whole hours before the current hour's end: [start, end) on UTC hour boundaries."""
    now = now or timezone.now()
    end = now.replace(minute=0, second=0, microsecond=0) + HOUR
    return end - timedelta(days=days), end


def device_hours(qs: QuerySet[UtilizationRollup]) -> list[alert_rules.DeviceHour]:
    """The rollups as the pure alert rules read them."""
    rows = []
    # Tuples, not a dict per row: a month of a request's hours is hundreds of rows.
    for (
        hour,
        cluster,
        gpu_uuid,
        mig_instance,
        sample_count,
        avg_utilization_pct,
        max_temperature_c,
        memory_pressure_minutes,
        peak_memory_used_mib,
        is_complete,
        team,
        request_id,
        hostname,
        gpu_model,
    ) in qs.values_list(*_ROLLUP_FIELDS):
        rows.append(
            alert_rules.DeviceHour(
                hour=hour,
                cluster=cluster,
                device=f"{gpu_uuid}/{mig_instance}" if mig_instance else gpu_uuid,
                sample_count=sample_count,
                avg_utilization_pct=avg_utilization_pct,
                max_temperature_c=max_temperature_c,
                memory_pressure_minutes=memory_pressure_minutes,
                peak_memory_used_mib=peak_memory_used_mib,
                is_complete=is_complete,
                team=team,
                request_id=request_id,
                hostname=hostname,
                gpu_model=gpu_model,
            )
        )
    return rows


def alerts_for(qs: QuerySet[UtilizationRollup]) -> list[alert_rules.Alert]:
    """Alerts raised by the rollups of a queryset (most severe, then most recent, first)."""
    # Only an hour that breaches a rule can be part of an alert (the rules skip the others, and a gap breaks a run
    # as a quiet hour does), so only those are read rather than every device-hour of a large fleet's week on
    # every platform page view. The rules themselves still decide, on what is read.
    return alert_rules.evaluate(device_hours(qs.filter(_MAY_BREACH_A_RULE)))


# Every hour the alert rules (gpucore.alerts) could find a breach in, and fewer others: hotter than the limit, any
# minute of memory pressure, or a held, complete hour of every minute under the idle threshold.
_MAY_BREACH_A_RULE = (
    Q(max_temperature_c__gt=alert_rules.TEMPERATURE_LIMIT_C)
    | Q(memory_pressure_minutes__gt=0)
    | Q(
        team__isnull=False,
        is_complete=True,
        sample_count__gte=alert_rules.IDLE_FOR_MINUTES,
        avg_utilization_pct__lt=alert_rules.IDLE_UTILIZATION_PCT,
    )
)


def summary_aggregates() -> dict[str, Any]:
    """The aggregates ``summary_from`` reads, by name (for ``aggregate()`` or a grouped ``annotate()``)."""
    return {
        **rollup_usage_aggregates(),
        "complete_samples": Sum("sample_count", filter=Q(is_complete=True)),
        "pressure_hours": Count("id", filter=Q(memory_pressure_minutes__gte=1)),
        "max_temp": Max("max_temperature_c"),
    }


def usage_summary(qs: QuerySet[UtilizationRollup]) -> dict[str, Any]:
    """Device-hours, time-weighted utilization, peak memory (GB), energy and complete device-hours of rollups."""
    return summary_from(qs.aggregate(**summary_aggregates()))


def usage_rows_by_cluster(qs: QuerySet[UtilizationRollup]) -> list[dict[str, Any]]:
    """The rows of ``summary_aggregates`` per cluster (``cluster_id`` and each aggregate), in one grouped query."""
    return list(qs.values("cluster_id").annotate(**summary_aggregates()).order_by())


def combined_aggregates(rows: Iterable[dict[str, Any]]) -> dict[str, Any]:
    """One row of ``summary_aggregates`` from rows of it over rollups that do not overlap (one per cluster): what the
    aggregates over all of those rollups give, sums added up and maxima taken. The platform page sums its clusters'
    rows instead of reading the week's rollups once more."""
    rows = list(rows)
    combined: dict[str, Any] = {}
    for name, aggregate in summary_aggregates().items():
        values = [row[name] for row in rows if row[name] is not None]
        if isinstance(aggregate, Max):
            combined[name] = max(values) if values else None
        elif isinstance(aggregate, Count):  # COUNT of no rows is 0
            combined[name] = sum(values)
        elif isinstance(aggregate, Sum):  # SUM of no rows is NULL
            combined[name] = sum(values) if values else None
        else:
            raise TypeError(f"{name}: {type(aggregate).__name__} does not combine from per-cluster rows")
    return combined


def summary_from(row: dict[str, Any]) -> dict[str, Any]:
    """The usage summary (``usage_summary``'s keys) of one row of ``summary_aggregates``."""
    return {
        "gpu_hours": round((row["samples"] or 0) / 60.0, 2),
        "complete_gpu_hours": (row["complete_samples"] or 0) / 60.0,
        "avg_utilization_pct": weighted_utilization_pct(row),
        "peak_memory_used_gb": round(row["peak_mib"] / MIB_PER_GB, 2) if row["peak_mib"] is not None else None,
        "energy_kwh": round(row["energy"], 2) if row["energy"] is not None else None,
        "memory_pressure_hours": row["pressure_hours"] or 0,
        "max_temperature_c": row["max_temp"],
    }


def ingest_coverage(*, start: datetime, end: datetime, clusters: QuerySet[Cluster] | None = None) -> dict[str, Any]:
    """How far the clusters' utilization was read: incomplete hours in [start, end), the hour ingested through, and
    whether the window is complete (every read cluster when ``clusters`` is None)."""
    if clusters is None:
        # Clusters that are read: with a Prometheus, or with an ingest watermark (imported or demo history).
        clusters = Cluster.objects.filter(is_active=True).filter(
            ~Q(prometheus_url="") | Q(utilization_watermark__isnull=False)
        )
    missing = incomplete_hours(start=start, end=end, clusters=clusters)
    through = ingested_through(clusters=clusters)
    return {
        "incomplete_hours": len(missing),
        "ingested_through": through,
        # The current hour (the last of the window) is still being written: it is shown, not required.
        "complete": not missing and through is not None and through >= end - HOUR,
    }


def team_utilization_context(
    *, user: User, team: Team, now: datetime | None = None, days: int = TEAM_WINDOW_DAYS
) -> dict[str, Any]:
    """Context of ``billing/_team_utilization.html``: ``{"team_utilization": {...}}`` (None when not visible)."""
    if not teams_visible_to(user).filter(pk=team.pk).exists():
        return {"team_utilization": None}
    start, end = window(days=days, now=now)
    qs = UtilizationRollup.objects.filter(team=team, hour__gte=start, hour__lt=end)
    summary = usage_summary(qs)
    alerts = alerts_for(qs)
    alerts_by_request = Counter(a.request_id for a in alerts)
    grouped = list(
        qs.exclude(request__isnull=True)
        .values("request_id")
        .annotate(**rollup_usage_aggregates())
        .order_by("request_id")
    )
    # The names of the requests measured in the window only: the team's every request grows without bound.
    names = dict(
        GpuRequest.objects.filter(team=team, pk__in=[row["request_id"] for row in grouped]).values_list("pk", "name")
    )
    per_request = [
        {
            "request_id": row["request_id"],
            "name": names.get(row["request_id"], f"#{row['request_id']}"),
            "gpu_hours": round((row["samples"] or 0) / 60.0, 1),
            "avg_utilization_pct": weighted_utilization_pct(row),
            "peak_memory_used_gb": round(row["peak_mib"] / MIB_PER_GB, 1) if row["peak_mib"] else None,
            "alerts": alerts_by_request[row["request_id"]],
        }
        for row in grouped
    ]
    return {
        "team_utilization": {
            "team": team,
            "start": start,
            "end": end,
            "days": days,
            "has_data": summary["gpu_hours"] > 0,
            "summary": summary,
            "alert_counts": alert_rules.count_devices_by_kind(alerts),
            "alert_runs": alert_rules.count_by_kind(alerts),
            "alert_groups": alert_group_rows(alerts=alerts, team=team, now=now)[:MAX_ALERTS_SHOWN],
            "requests": per_request,
            **ingest_coverage(start=start, end=end),
        }
    }


# --- Capacity forecast per node pool -------------------------------------------------------------------------


@dataclass(frozen=True)
class PoolForecast:
    """One pool resource's allocation and utilization forecasts against its capacity."""

    pool: NodePool
    resource_name: str
    capacity: int
    allocated_now: int
    allocation: forecast_rules.Forecast
    utilization: forecast_rules.Forecast  # % of the pool's GPUs busy

    @property
    def label(self) -> str:
        return f"{self.pool.cluster.name}/{self.pool.name} {self.resource_name.removeprefix('nvidia.com/')}"


def holding_intervals(
    *, start: datetime, until: datetime
) -> dict[tuple[int, str], list[tuple[datetime, datetime | None, float]]]:
    """Per (pool, resource), the spans in [start, until) each request held its units (``allocation_intervals``).

    Read as plain rows (``held_span_rows``): three columns of every request of the week, not model instances with
    their team, tier and pool, which would weigh on every dashboards view with hundreds of running requests."""
    out: dict[tuple[int, str], list[tuple[datetime, datetime | None, float]]] = defaultdict(list)
    fields = ("node_pool_id", "resource_name", "resource_units")
    for (pool_id, resource_name, units), began, finished in held_span_rows(start=start, end=until, fields=fields):
        if pool_id is None:
            continue
        out[(pool_id, resource_name or "nvidia.com/gpu")].append((began, finished, float(units or 0)))
    return out


def _pool_by_rollup_key() -> tuple[dict[tuple[int, str], NodePool], dict[int, NodePool]]:
    pools = list(NodePool.objects.filter(cluster__is_active=True).select_related("cluster", "gpu_model"))
    by_model: dict[tuple[int, str], NodePool] = {}
    for pool in pools:
        for name in pool.gpu_model.dcgm_model_names or []:
            by_model.setdefault((pool.cluster_id, str(name).casefold()), pool)
    return by_model, {pool.pk: pool for pool in pools}


def busy_gpus_by_pool(*, start: datetime, end: datetime) -> dict[int, list[tuple[datetime, float]]]:
    """Per pool, the hourly busy-GPU equivalent (sum of utilization x time) over complete hours in [start, end).

    A rollup counts for its request's pool, or (no request, or one with no pool) for the pool of its cluster that
    runs its GPU model. Summed in SQL per (cluster, model, request's pool, hour): a row per pool and hour, not one per
    device and hour (a large fleet's week would be read into Python on every dashboards view).
    """
    by_model, pools = _pool_by_rollup_key()
    busy: dict[int, dict[datetime, float]] = defaultdict(lambda: defaultdict(float))
    rows = (
        UtilizationRollup.objects.filter(hour__gte=start, hour__lt=end, is_complete=True)
        .values_list("cluster_id", "gpu_model_name", "request__node_pool_id", "hour")
        .annotate(weighted=utilization_weighted_sum())
        .order_by()
    )
    for cluster_id, gpu_model_name, request_pool_id, hour, weighted in rows:
        pool_id = request_pool_id
        if pool_id is None:
            pool = by_model.get((cluster_id, (gpu_model_name or "").casefold()))
            pool_id = pool.pk if pool else None
        if pool_id is None or pool_id not in pools:
            continue
        busy[pool_id][hour] += (weighted or 0.0) / 100.0 / 60.0
    return {pool_id: sorted(hours.items()) for pool_id, hours in busy.items()}


def pool_forecasts(*, now: datetime | None = None) -> list[PoolForecast]:
    """Every active pool resource's 7-day allocation and utilization trends projected 30 days, with run-out dates."""
    now = now or timezone.now()
    end = now.replace(minute=0, second=0, microsecond=0) + HOUR
    start = end - timedelta(days=forecast_rules.HISTORY_DAYS)
    intervals = holding_intervals(start=start, until=end)
    # Kept per process until a rollup is written: the dashboards and the platform page both read the week's.
    busy = _derived_from_rollups("busy", start, end, lambda: busy_gpus_by_pool(start=start, end=end))
    out = []
    for pool in NodePool.objects.filter(cluster__is_active=True).select_related("cluster", "gpu_model"):
        util_hourly = [(hour, 100.0 * value / pool.gpu_total) for hour, value in busy.get(pool.pk, [])]
        utilization = forecast_rules.forecast(util_hourly, now=end, capacity=100.0)
        for resource, capacity in sorted(pool.capacity().items()):
            spans = intervals.get((pool.pk, resource), [])
            hourly = forecast_rules.step_series(spans, start=start, end=end)
            allocation = forecast_rules.forecast(hourly, now=end, capacity=float(capacity))
            held = sum(units for since, until, units in spans if since <= now and (until is None or until > now))
            out.append(PoolForecast(pool, resource, capacity, int(held), allocation, utilization))
    return out


# --- The platform page -----------------------------------------------------------------------------------------


def unallocated_usage(qs: QuerySet[UtilizationRollup]) -> list[dict[str, Any]]:
    """Device-hours of no team: idle devices (no pod) and namespaces no team owns, per cluster and namespace."""
    rows = (
        qs.filter(team__isnull=True)
        .values("cluster__name", "namespace")
        .annotate(
            samples=Sum("sample_count"),
            util_weighted=utilization_weighted_sum(),
            util_samples=utilization_samples(),
            devices=Count("gpu_uuid", distinct=True),
        )
        .order_by("cluster__name", "namespace")
    )
    return [
        {
            "cluster": row["cluster__name"],
            "namespace": row["namespace"],
            "kind": "idle (no pod)" if not row["namespace"] else "other namespace",
            "gpu_hours": round((row["samples"] or 0) / 60.0, 1),
            "devices": row["devices"],
            "avg_utilization_pct": weighted_utilization_pct(row),
        }
        for row in rows
    ]


def cluster_rows(rows_by_cluster: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per active cluster: GPUs in its pools, device-hours, utilization (from ``usage_rows_by_cluster``) and how far it
    has been ingested."""
    gpus_by_cluster = dict(
        NodePool.objects.values("cluster_id")
        .annotate(n=Sum(F("node_count") * F("gpus_per_node")))
        .order_by()
        .values_list("cluster_id", "n")
    )
    # Grouped reads, so the page's queries do not grow with the clusters; a cluster without rollups
    # has no row.
    summaries = {row["cluster_id"]: summary_from(row) for row in rows_by_cluster}
    marks = dict(UtilizationWatermark.objects.values_list("cluster_id", "last_complete_hour"))
    nothing = summary_from(dict.fromkeys(summary_aggregates()))
    out = []
    for cluster in Cluster.objects.filter(is_active=True).order_by("name"):
        gpus = gpus_by_cluster.get(cluster.pk)
        # As ingested_through for one cluster: the hour after its watermark, None without Prometheus or a watermark.
        mark = marks.get(cluster.pk) if cluster.prometheus_url else None
        through = mark + timedelta(hours=1) if mark is not None else None
        summary = summaries.get(cluster.pk, nothing)
        out.append({"cluster": cluster, "gpus": gpus or 0, "summary": summary, "ingested_through": through})
    return out


def platform_utilization(*, user: User, now: datetime | None = None, days: int = PLATFORM_WINDOW_DAYS) -> dict:
    """Context of the platform utilization page; PermissionError for anyone but approvers."""
    if not user_is_approver(user):
        raise PermissionError("Only platform approvers see platform utilization.")
    start, end = window(days=days, now=now)
    qs = UtilizationRollup.objects.filter(hour__gte=start, hour__lt=end)
    alerts = fleet_alerts_between(start=start, end=end)
    forecasts = pool_forecasts(now=now)
    by_cluster = usage_rows_by_cluster(qs)
    return {
        "start": start,
        "end": end,
        "days": days,
        "summary": summary_from(combined_aggregates(by_cluster)),
        "clusters": cluster_rows(by_cluster),
        "unallocated": unallocated_usage(qs),
        "alert_groups": (groups := alert_group_rows(alerts=alerts, team=None, now=now))[:MAX_ALERTS_SHOWN],
        "alert_groups_total": len(groups),
        "alert_counts": alert_rules.count_devices_by_kind(alerts),
        "alert_runs": alert_rules.count_by_kind(alerts),
        "alerts_total": len(alerts),
        "forecasts": forecasts,
        **ingest_coverage(start=start, end=end),
    }


FORECAST_COLUMNS = [
    "pool",
    "resource",
    "capacity",
    "allocated now",
    "allocation trend per day",
    "runs out",
    "utilization trend per day (% busy)",
]


def capacity_forecast(
    *, now: datetime, forecasts: list[PoolForecast] | None = None
) -> tuple[list[str], list[list[Any]]]:
    """Per pool resource: capacity, what is allocated now, the 7-day trends and the date the pool runs out.

    ``forecasts`` (from ``pool_forecasts``) saves computing them again when the caller already has them.
    """
    rows = []
    for item in pool_forecasts(now=now) if forecasts is None else forecasts:
        allocation, utilization = item.allocation.trend, item.utilization.trend
        rows.append(
            [
                f"{item.pool.cluster.name}/{item.pool.name}",
                item.resource_name,
                item.capacity,
                item.allocated_now,
                round(allocation.slope_per_day, 2) if allocation else None,
                item.allocation.run_out_at.date().isoformat() if item.allocation.run_out_at else "not within 30 days",
                round(utilization.slope_per_day, 2) if utilization else None,
            ]
        )
    return FORECAST_COLUMNS, rows


HOME_ALERT_WINDOW_DAYS = 1


def fleet_alerts_needing_action(*, user: User, now: datetime | None = None) -> dict[str, Any] | None:
    """For an approver's home: the fleet's alert groups of the last day not acknowledged or muted (count, the first
    three, most severe first); None for everyone else."""
    if not user_is_approver(user):
        return None
    start, end = window(days=HOME_ALERT_WINDOW_DAYS, now=now)
    # The acknowledgements and mutes are read on every view; the alerts come from the kept copy.
    rows = alert_group_rows(alerts=fleet_alerts_between(start=start, end=end), team=None, now=now)
    pending = [row for row in rows if row["needs_action"]]
    return {"count": len(pending), "top": pending[:3], "days": HOME_ALERT_WINDOW_DAYS}


def fleet_alerts_between(*, start: datetime, end: datetime) -> list[alert_rules.Alert]:
    """``alerts_for`` every rollup of the fleet in [start, end), kept per process until a rollup is written
    (``infra.reference_cache``) or the window moves: the approver's home and the platform page read every
    breaching rollup of their window on each view. Callers must never change the list."""
    return _derived_from_rollups(
        "alerts", start, end, lambda: alerts_for(UtilizationRollup.objects.filter(hour__gte=start, hour__lt=end))
    )


def _derived_from_rollups(kind: str, start: datetime, end: datetime, derive: Callable[[], _T]) -> _T:
    # What the fleet's pages derive from the rollups alone (alerts, busy GPUs per pool), per kind and window.
    return cached(ROLLUPS, f"fleet-{kind}:{start.isoformat()}:{end.isoformat()}", derive)
