"""Reads for utilization alerts, right-sizing advice and capacity forecasts, computed from the hourly rollups on read.

The rules are pure (gpucore.alerts, gpucore.advice, gpucore.forecast); this module only gathers their inputs (the
rollups through ``billing.metering``, prices through ``billing.costs``) and the context of the pages and partials
that show them (templates/billing/*utilization*). Figures are drawn by the views (``billing.charts``).
"""

from __future__ import annotations

import functools
from collections import Counter, defaultdict
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

from django.conf import settings
from django.db import NotSupportedError, connections, router
from django.db.models import Count, F, Max, Q, QuerySet, Sum
from django.utils import timezone

from allocations.compiled_reads import converted_rows
from allocations.models import Cluster, GpuModel, GpuRequest, NodePool, Team
from allocations.placement import gpu_hourly_rates
from allocations.selectors import (
    User,
    allocation_intervals,
    gpu_requests_visible_to,
    teams_visible_to,
    user_is_approver,
)
from billing.costs.selectors import catalog_fallback_rates
from billing.metering.rollups_version import rollups_version
from billing.metering.selectors import (
    MIB_PER_GB,
    incomplete_hours,
    ingested_through,
    rollup_usage_aggregates,
    utilization_samples,
    utilization_weighted_sum,
    weighted_utilization_pct,
)
from billing.models import (
    GpuHealthHour,
    IngestStatus,
    UtilizationIngestHour,
    UtilizationRollup,
    UtilizationWatermark,
)
from billing.utilization.alert_groups import alert_group_rows
from gpucore import advice as advice_rules
from gpucore import alerts as alert_rules
from gpucore import forecast as forecast_rules
from gpucore.pricing import to_cents

HOUR = timedelta(hours=1)
REQUEST_WINDOW_DAYS = 30
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
    # Tuples, not a dict per row: a month of a request's hours is ~720 rows (issue #15).
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
    return alert_rules.evaluate(device_hours(qs))


def _summary_aggregates() -> dict[str, Any]:
    return {
        **rollup_usage_aggregates(),
        "complete_samples": Sum("sample_count", filter=Q(is_complete=True)),
        "pressure_hours": Count("id", filter=Q(memory_pressure_minutes__gte=1)),
        "max_temp": Max("max_temperature_c"),
    }


def usage_summary(qs: QuerySet[UtilizationRollup]) -> dict[str, Any]:
    """Device-hours, time-weighted utilization, peak memory (GB), energy and complete device-hours of rollups."""
    return _summary(qs.aggregate(**_summary_aggregates()))


def usage_summaries_by_cluster(qs: QuerySet[UtilizationRollup]) -> dict[int, dict[str, Any]]:
    """``usage_summary`` per cluster id, in one query (a cluster without rollups has no entry)."""
    rows = qs.values("cluster_id").annotate(**_summary_aggregates()).order_by()
    return {row["cluster_id"]: _summary(row) for row in rows}


def _summary(row: dict[str, Any]) -> dict[str, Any]:
    return {
        "gpu_hours": round((row["samples"] or 0) / 60.0, 2),
        "complete_gpu_hours": (row["complete_samples"] or 0) / 60.0,
        "avg_utilization_pct": weighted_utilization_pct(row),
        "peak_memory_used_gb": round(row["peak_mib"] / MIB_PER_GB, 2) if row["peak_mib"] is not None else None,
        "energy_kwh": round(row["energy"], 2) if row["energy"] is not None else None,
        "memory_pressure_hours": row["pressure_hours"] or 0,
        "max_temperature_c": row["max_temp"],
    }


def gpu_rates() -> dict[str, Decimal]:
    """Whole-GPU hourly price by folded model name: the price book in effect, else catalog reference prices."""
    rates = dict(catalog_fallback_rates())
    rates.update({str(name).casefold(): Decimal(rate) for name, rate in gpu_hourly_rates().items()})
    return rates


def profile_options(gpu_model: str) -> tuple[list[advice_rules.ProfileOption], int, int]:
    """The model's recommendable partial-GPU MIG profiles, its compute slices and memory slices (none: no MIG)."""
    model = GpuModel.objects.filter(name__iexact=gpu_model).first()
    if model is None or not model.mig_capable or not model.mig_compute_slices:
        return [], 0, 0
    total = model.mig_compute_slices
    options = [
        advice_rules.ProfileOption(
            name=p.name, memory_gb=float(p.memory_gb), compute_slices=p.compute_slices, memory_slices=p.memory_slices
        )
        for p in model.mig_profiles.filter(recommendable=True, compute_slices__lt=total).order_by("memory_gb")
    ]
    return options, total, model.mig_memory_slices or 0


def request_advice(*, request: GpuRequest, summary: dict[str, Any]) -> list[dict[str, Any]]:
    """Right-sizing suggestions for a request from its measured use, with the monthly saving priced."""
    spec = request.allocation_spec
    model = spec.gpu_model
    if not model:
        return []
    profiles, slices, memory_slices = profile_options(model)
    rate = gpu_rates().get(model.casefold())
    if rate is not None and request.sla_tier_id:
        rate *= request.sla_tier.price_multiplier
    units = request.resource_units or spec.quantity * spec.replicas
    use = advice_rules.MeasuredUse(
        strategy=spec.strategy.value,
        gpu_model=model,
        units=max(1, units),
        quantity_per_replica=spec.quantity,
        mig_profile=spec.mig_profile,
        time_slice_replicas=spec.time_slice_replicas,
        observed_hours=summary["complete_gpu_hours"] / max(1, units),
        avg_utilization_pct=summary["avg_utilization_pct"],
        peak_memory_used_gb=summary["peak_memory_used_gb"],
        memory_pressure_hours=summary["memory_pressure_hours"],
    )
    found = advice_rules.right_size(
        use, profiles=profiles, gpu_compute_slices=slices, gpu_memory_slices=memory_slices, gpu_hourly_rate=rate
    )
    return [
        {
            "advice": item,
            "current_monthly": to_cents(item.current_monthly) if item.current_monthly is not None else None,
            "suggested_monthly": to_cents(item.suggested_monthly) if item.suggested_monthly is not None else None,
            "monthly_saving": to_cents(item.monthly_saving) if item.monthly_saving is not None else None,
            "monthly_extra_cost": (
                to_cents(-item.monthly_saving) if item.monthly_saving is not None and item.monthly_saving < 0 else None
            ),
            "currency": settings.PORTAL_CURRENCY,
        }
        for item in found
    ]


def _coverage(*, start: datetime, end: datetime, clusters: QuerySet[Cluster] | None = None) -> dict[str, Any]:
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


def _request_coverage(*, start: datetime, end: datetime, cluster_id: int | None) -> dict[str, Any]:
    """``_coverage`` of the request's one cluster: its watermark read by id (the cluster exists: a foreign key)."""
    if cluster_id is None:
        return _coverage(start=start, end=end)
    # How many hours incomplete_hours() would list (only their count is shown): counted, not listed and ordered.
    counted = compiled_rows("incomplete", cluster=cluster_id, start=start, end=end)
    marks = compiled_rows("watermark", cluster=cluster_id)
    if counted is None or marks is None:  # the ORM's own path (see _statement)
        missing = (
            UtilizationIngestHour.objects.filter(cluster_id=cluster_id, hour__gte=start, hour__lt=end)
            .exclude(status=IngestStatus.COMPLETE)
            .count()
        )
        mark = UtilizationWatermark.objects.filter(cluster_id=cluster_id).values_list("last_complete_hour", flat=True)
        through = mark[0] + HOUR if mark else None
    else:
        missing = counted[0]["hours"] if counted else 0
        through = marks[0]["last_complete_hour"] + HOUR if marks else None  # as ingested_through() for one cluster
    return {
        "incomplete_hours": missing,
        "ingested_through": through,
        "complete": not missing and through is not None and through >= end - HOUR,
    }


# The request page's reads of one request's rollups and its cluster's ingest, as the ORM compiles them, with
# stand-ins for the ids and the window: compiled once per process and run with the real values. Building and
# compiling them was most of their cost (the summary's nine aggregates: ~0.8 ms a view, running it 0.05 ms; the
# coverage's two reads 0.5 ms; issue #15).
_STAND_INS: dict[str, Any] = {
    "request": -1_987_654_323,
    "cluster": -1_987_654_324,
    "start": datetime(1901, 1, 1, tzinfo=UTC),
    "end": datetime(1901, 1, 2, tzinfo=UTC),
}
_STATEMENTS: dict[str, Any] = {
    # usage_summary's aggregates and the row count, grouped by the request: no row when it has none.
    "summary": lambda s: (
        UtilizationRollup.objects.filter(request_id=s["request"], hour__gte=s["start"], hour__lt=s["end"])
        .order_by()
        .values("request_id")
        .annotate(**_summary_aggregates(), rows=Count("id"))
    ),
    # The cluster's hours not read completely in the window, counted (no row when none).
    "incomplete": lambda s: (
        UtilizationIngestHour.objects.filter(cluster_id=s["cluster"], hour__gte=s["start"], hour__lt=s["end"])
        .exclude(status=IngestStatus.COMPLETE)
        .order_by()
        .values("cluster_id")
        .annotate(hours=Count("id"))
    ),
    "watermark": lambda s: (
        UtilizationWatermark.objects.filter(cluster_id=s["cluster"]).order_by().values("last_complete_hour")
    ),
    # troubleshooting.cluster_drivers of one cluster (DISTINCT ON: PostgreSQL only, as that function).
    "drivers": lambda s: (
        GpuHealthHour.objects.filter(cluster_id=s["cluster"], hour__gte=s["start"], hour__lt=s["end"])
        .exclude(driver_version="")
        .order_by("hostname", "-hour")
        .distinct("hostname")
        .values("hostname", "driver_version")
    ),
}


@dataclass(frozen=True)
class _Compiled:
    sql: str
    params: tuple[Any, ...]
    slots: tuple[tuple[int, str], ...]  # (position in params, name of the stand-in)
    names: tuple[str, ...]
    converters: tuple[tuple[int, tuple[Any, ...]], ...]


def _adapted(ops: Any, value: Any) -> Any:
    # As the backend adapts a DateTimeField's value: kept on PostgreSQL, text in the connection's zone on SQLite.
    return ops.adapt_datetimefield_value(value) if isinstance(value, datetime) else value


@functools.cache
def _statement(kind: str, using: str) -> _Compiled | None:
    """One of ``_STATEMENTS`` compiled for a database; None when its parameters do not hold each stand-in it was
    built with exactly once (its callers then take the ORM's own path)."""
    query = _STATEMENTS[kind](_STAND_INS).using(using).query
    compiler = query.get_compiler(using)
    try:
        sql, params = compiler.as_sql()
    except NotSupportedError:  # DISTINCT ON elsewhere than on PostgreSQL: the queryset raises it itself
        return None
    ops = connections[using].ops
    adapted = {name: _adapted(ops, value) for name, value in _STAND_INS.items()}
    slots = tuple(
        (position, name)
        for position, value in enumerate(params)
        for name, stand_in in adapted.items()
        if type(value) is type(stand_in) and value == stand_in
    )
    names_used = [name for _, name in slots]
    if len(names_used) != len(set(names_used)):
        return None
    names = (*query.extra_select, *query.values_select, *query.annotation_select)
    selected = [column[0] for column in compiler.select[0 : compiler.col_count]]
    converters = tuple(
        (position, (tuple(functions), expression))
        for position, (functions, expression) in compiler.get_converters(selected).items()
    )
    return _Compiled(sql, tuple(params), slots, names, converters)


def compiled_rows(kind: str, **values: Any) -> list[dict[str, Any]] | None:
    """The rows of one of ``_STATEMENTS`` (the request page's reads) for these ids and window, as its queryset's
    ``values()`` gives them (the ORM's converters applied); None when it could not be compiled with stand-ins."""
    using = router.db_for_read(UtilizationRollup)
    statement = _statement(kind, using)
    if statement is None or {name for _, name in statement.slots} != set(values):
        return None
    connection = connections[using]
    params = list(statement.params)
    for position, name in statement.slots:
        params[position] = _adapted(connection.ops, values[name])
    with connection.cursor() as cursor:
        cursor.execute(statement.sql, params)
        fetched = cursor.fetchall()
    return [
        dict(zip(statement.names, row, strict=True))
        for row in converted_rows(fetched, statement.converters, connection)
    ]


def _request_rollup_summary(*, request_id: int, start: datetime, end: datetime) -> dict[str, Any]:
    """What ``qs.aggregate(**_summary_aggregates(), rows=Count("id"))`` answers for the request's rollups in
    [start, end), through the statement compiled once."""
    rows = compiled_rows("summary", request=request_id, start=start, end=end)
    if rows is None:
        qs = UtilizationRollup.objects.filter(request_id=request_id, hour__gte=start, hour__lt=end)
        return qs.aggregate(**_summary_aggregates(), rows=Count("id"))
    if rows:
        return rows[0]
    # No rollups: what aggregate() answers over none (the sums and extremes NULL, the counts 0).
    return {**dict.fromkeys(_summary_aggregates()), "pressure_hours": 0, "rows": 0}


def request_utilization_context(
    *,
    user: User,
    request: GpuRequest,
    now: datetime | None = None,
    days: int = REQUEST_WINDOW_DAYS,
    visibility_checked: bool = False,
) -> dict[str, Any]:
    """Context of ``billing/_request_utilization.html``: ``{"utilization": {...}}`` (None when not visible).

    ``visibility_checked``: the caller read ``request`` through ``gpu_requests_visible_to(user=user)`` (the request
    page), so it is not read again."""
    if not visibility_checked and not gpu_requests_visible_to(user=user).filter(pk=request.pk).exists():
        return {"utilization": None}
    start, end = window(days=days, now=now)
    qs = UtilizationRollup.objects.filter(request=request, hour__gte=start, hour__lt=end)
    row = _request_rollup_summary(request_id=request.pk, start=start, end=end)
    summary = _summary(row)
    has_data = summary["gpu_hours"] > 0
    # Without rollups there is nothing to raise an alert on, and advice is shown only beside measured use: neither
    # is read then (a request that ran before the window, or never ran, is most of them; issue #15).
    alerts = alerts_for(qs) if row["rows"] else []
    return {
        "utilization": {
            "request": request,
            "start": start,
            "end": end,
            "days": days,
            "has_data": has_data,
            "rollups_in_window": row["rows"],
            "summary": summary,
            "alert_groups": alert_group_rows(alerts=alerts, team=request.team, now=now)[:MAX_ALERTS_SHOWN],
            "advice": request_advice(request=request, summary=summary) if has_data else [],
            **_request_coverage(start=start, end=end, cluster_id=request.cluster_id),
        }
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
            "alert_counts": alert_rules.count_by_kind(alerts),
            "alert_groups": alert_group_rows(alerts=alerts, team=team, now=now)[:MAX_ALERTS_SHOWN],
            "requests": per_request,
            **_coverage(start=start, end=end),
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
    """Per (pool, resource), the spans in [start, until) each request held its units (``allocation_intervals``)."""
    out: dict[tuple[int, str], list[tuple[datetime, datetime | None, float]]] = defaultdict(list)
    for interval in allocation_intervals(start=start, end=until):
        req = interval.request
        if req.node_pool_id is None:
            continue
        key = (req.node_pool_id, req.resource_name or "nvidia.com/gpu")
        out[key].append((interval.start, interval.end, float(req.resource_units or 0)))
    return out


def _pool_by_rollup_key() -> tuple[dict[tuple[int, str], NodePool], dict[int, NodePool]]:
    pools = list(NodePool.objects.filter(cluster__is_active=True).select_related("cluster", "gpu_model"))
    by_model: dict[tuple[int, str], NodePool] = {}
    for pool in pools:
        for name in pool.gpu_model.dcgm_model_names or []:
            by_model.setdefault((pool.cluster_id, str(name).casefold()), pool)
    return by_model, {pool.pk: pool for pool in pools}


def busy_gpus_by_pool(*, start: datetime, end: datetime) -> dict[int, list[tuple[datetime, float]]]:
    """Per pool, the hourly busy-GPU equivalent (sum of utilization x time) over complete hours in [start, end)."""
    by_model, pools = _pool_by_rollup_key()
    request_pool = dict(GpuRequest.objects.filter(node_pool__isnull=False).values_list("pk", "node_pool_id"))
    busy: dict[int, dict[datetime, float]] = defaultdict(lambda: defaultdict(float))
    rows = (
        UtilizationRollup.objects.filter(hour__gte=start, hour__lt=end, is_complete=True)
        .values("cluster_id", "gpu_model_name", "request_id", "hour")
        .annotate(weighted=utilization_weighted_sum())
        .order_by()
    )
    for row in rows:
        pool_id = request_pool.get(row["request_id"])
        if pool_id is None:
            pool = by_model.get((row["cluster_id"], (row["gpu_model_name"] or "").casefold()))
            pool_id = pool.pk if pool else None
        if pool_id is None or pool_id not in pools:
            continue
        busy[pool_id][row["hour"]] += (row["weighted"] or 0.0) / 100.0 / 60.0
    return {pool_id: sorted(hours.items()) for pool_id, hours in busy.items()}


def pool_forecasts(*, now: datetime | None = None) -> list[PoolForecast]:
    """Every active pool resource's 7-day allocation and utilization trends projected 30 days, with run-out dates."""
    now = now or timezone.now()
    end = now.replace(minute=0, second=0, microsecond=0) + HOUR
    start = end - timedelta(days=forecast_rules.HISTORY_DAYS)
    intervals = holding_intervals(start=start, until=end)
    busy = busy_gpus_by_pool(start=start, end=end)
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


def cluster_rows(qs: QuerySet[UtilizationRollup]) -> list[dict[str, Any]]:
    """Per active cluster: GPUs in its pools, device-hours, utilization and how far it has been ingested."""
    gpus_by_cluster = dict(
        NodePool.objects.values("cluster_id")
        .annotate(n=Sum(F("node_count") * F("gpus_per_node")))
        .order_by()
        .values_list("cluster_id", "n")
    )
    # One grouped query each, not one per cluster (issue #15: the page grew a query per cluster).
    summaries = usage_summaries_by_cluster(qs)
    marks = dict(UtilizationWatermark.objects.values_list("cluster_id", "last_complete_hour"))
    nothing = _summary(dict.fromkeys(_summary_aggregates()))
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
    alerts = alerts_for(qs)
    forecasts = pool_forecasts(now=now)
    return {
        "start": start,
        "end": end,
        "days": days,
        "summary": usage_summary(qs),
        "clusters": cluster_rows(qs),
        "unallocated": unallocated_usage(qs),
        "alert_groups": (groups := alert_group_rows(alerts=alerts, team=None, now=now))[:MAX_ALERTS_SHOWN],
        "alert_groups_total": len(groups),
        "alert_counts": alert_rules.count_by_kind(alerts),
        "alerts_total": len(alerts),
        "forecasts": forecasts,
        **_coverage(start=start, end=end),
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


# The fleet's alerts of the latest window asked for, with the rollups' version token they were derived under.
_fleet_alerts_kept: dict[str, tuple[tuple[str, datetime, datetime], list[alert_rules.Alert]]] = {}


def fleet_alerts_between(*, start: datetime, end: datetime) -> list[alert_rules.Alert]:
    """``alerts_for`` every rollup of the fleet in [start, end), kept per process until a rollup is written
    (``billing.metering.rollups_version``) or the window moves: the approver's home read every rollup of the last
    day on each view (issue #15). Callers must never change the list."""
    key = (rollups_version(), start, end)
    kept = _fleet_alerts_kept.get("fleet")
    if kept is not None and kept[0] == key:
        return kept[1]
    alerts = alerts_for(UtilizationRollup.objects.filter(hour__gte=start, hour__lt=end))
    _fleet_alerts_kept["fleet"] = (key, alerts)
    return alerts
