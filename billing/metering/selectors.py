"""Reads of metered use: the hourly DCGM rollups, aggregated in SQL, and how far each cluster has been read.

What a team or a request used between two times (``team_usage``, ``usage_by_request``), the aggregates every
utilization figure shares (time-weighted by minutes measured), and the coverage that says when a figure is still
incomplete. The writes that fill the rollups are in ``billing.metering.services``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, date, datetime, timedelta
from typing import Any

from django.db.models import BooleanField, ExpressionWrapper, F, FloatField, Max, Q, QuerySet, Sum
from django.db.models.functions import Cast, TruncDate

from allocations.models import Cluster, Team
from billing.models import (
    DailyUsage,
    IngestStatus,
    MonthlyUsage,
    UsageTotals,
    UtilizationIngestHour,
    UtilizationRollup,
    UtilizationWatermark,
)
from gpucore.periods import cover, midnight, next_month_start

MIB_PER_GB = 1024.0  # NVIDIA's "GB" (1g.10gb = 9.75 GiB = 9984 MiB) is a GiB; DCGM reports MiB.


def rollups_between(*, start: datetime, end: datetime) -> QuerySet[UtilizationRollup]:
    """Rollups of the hours that start in [start, end)."""
    return UtilizationRollup.objects.filter(hour__gte=start, hour__lt=end)


def utilization_weighted_sum() -> Sum:
    """Sum of utilization x minutes of rollups; divided by ``utilization_samples()`` it is the time-weighted mean."""
    # Cast: sample_count is an integer column; the weighted sum must stay in double precision.
    return Sum(F("avg_utilization_pct") * Cast("sample_count", FloatField()))


def utilization_samples() -> Sum:
    """Minutes of rollups that measured utilization (the divisor of ``utilization_weighted_sum()``)."""
    return Sum("sample_count", filter=Q(avg_utilization_pct__isnull=False))


def weighted_utilization_pct(row: dict[str, Any], *, digits: int = 1) -> float | None:
    """The time-weighted mean utilization of a row aggregated with ``util_weighted`` and ``util_samples``."""
    return round(row["util_weighted"] / row["util_samples"], digits) if row.get("util_samples") else None


def rollup_usage_aggregates() -> dict[str, Any]:
    """Aggregates of rollups read by ``_shape``: minutes, utilization x minutes, peak memory (MiB), energy."""
    return {
        "samples": Sum("sample_count"),
        "util_weighted": utilization_weighted_sum(),
        "util_samples": utilization_samples(),
        "peak_mib": Max("peak_memory_used_mib"),
        "energy": Sum("energy_kwh"),
    }


def _shape(row: dict[str, Any]) -> dict[str, Any]:
    samples = row.get("samples") or 0
    peak_mib = row.get("peak_mib")
    energy = row.get("energy")
    return {
        "gpu_hours": round(samples / 60.0, 3),
        "avg_utilization_pct": weighted_utilization_pct(row),
        "peak_memory_used_gb": round(peak_mib / MIB_PER_GB, 2) if peak_mib is not None else None,
        "energy_kwh": round(energy, 3) if energy is not None else None,
    }


def incomplete_hours(*, start: datetime, end: datetime, clusters: QuerySet[Cluster] | None = None) -> list[dict]:
    """Hours in [start, end) that a cluster could not read, or read as empty: unknown use, never zero use."""
    qs = UtilizationIngestHour.objects.filter(hour__gte=start, hour__lt=end).exclude(status=IngestStatus.COMPLETE)
    if clusters is not None:
        qs = qs.filter(cluster__in=clusters)
    return [
        {"cluster": name, "hour": hour, "status": status}
        for name, hour, status in qs.order_by("hour", "cluster__name").values_list("cluster__name", "hour", "status")
    ]


def ingested_through(*, clusters: QuerySet[Cluster] | None = None) -> datetime | None:
    """The end of the last hour every cluster with Prometheus has read without a gap (None: one never has)."""
    clusters = clusters if clusters is not None else Cluster.objects.filter(is_active=True).exclude(prometheus_url="")
    ids = set(clusters.values_list("id", flat=True))
    marks = dict(
        UtilizationWatermark.objects.filter(cluster_id__in=ids).values_list("cluster_id", "last_complete_hour")
    )
    if not ids or set(marks) != ids:
        return None
    return min(marks.values()) + timedelta(hours=1)


def team_usage(*, team: Team, start: datetime, end: datetime) -> dict[str, Any]:
    """A team's GPU use in [start, end) in the API's ``/teams/{slug}/usage/`` shape, plus what is incomplete.

    ``gpu_hours`` counts device-hours (a MIG instance or a time-sliced share held for an hour is one);
    ``avg_utilization_pct`` is weighted by time; ``peak_memory_used_gb`` is the largest hourly peak (GiB);
    ``energy_kwh`` covers whole GPUs only (DCGM has no per-instance power). ``incomplete_hours`` lists hours that
    could not be read and ``complete`` is False when any hour of the range is missing or not yet ingested.
    """
    # From the stored totals for whole days (hourly rows only for a ragged start or end): days whose hourly rows
    # the retention dropped answer the same.
    totals = usage_totals(start=start, end=end, by=("request_id",), teams=Team.objects.filter(pk=team.pk))
    by_request = [
        {"request": request_id, **_shape(row)}
        for (request_id,), row in sorted(totals.items(), key=lambda item: item[0][0] or 0)
        if request_id is not None
    ]
    overall = _empty_totals()
    for row in totals.values():
        _merge(overall, row)
    missing = incomplete_hours(start=start, end=end)
    through = ingested_through()
    return {
        "team": team.slug,
        "start": start,
        "end": end,
        **_shape(overall),
        "by_request": by_request,
        "complete": not missing and through is not None and through >= end,
        "incomplete_hours": missing,
    }


def usage_by_request(*, start: datetime, end: datetime) -> dict[int, tuple[float | None, float | None]]:
    """Per request, the time-weighted mean utilization and the energy (kWh) of its use in [start, end)."""
    totals = usage_totals(start=start, end=end, by=("request_id",))
    return {
        request_id: (row["util_weighted"] / row["util_samples"] if row["util_samples"] else None, row["energy"])
        for (request_id,), row in totals.items()
        if request_id is not None
    }


UsageKey = tuple[Any, ...]
USAGE_GROUPS = frozenset({"team_id", "request_id", "cluster_id", "gpu_model_name", "is_mig", "day"})


def _day_runs(days: Sequence[date]) -> Q:
    """Sorted days as a few ``day`` ranges (one per run of consecutive days), not an IN list of every day."""
    runs: list[list[date]] = []
    for day in days:
        if runs and runs[-1][1] == day:
            runs[-1][1] = day + timedelta(days=1)
        else:
            runs.append([day, day + timedelta(days=1)])
    query = Q(pk__in=[])
    for first, end in runs:
        query |= Q(day__gte=first, day__lt=end)
    return query


_STORED = {  # the stored totals' columns, summed as usage_totals answers them
    "samples": Sum("sample_count"),
    "util_weighted": Sum("util_weighted"),
    "util_samples": Sum("util_samples"),
    "energy": Sum("energy_kwh"),
    "peak_mib": Max("peak_memory_mib"),
}


def _empty_totals() -> dict[str, Any]:
    return {"samples": 0, "util_weighted": 0.0, "util_samples": 0, "energy": None, "peak_mib": None}


def _merge(into: dict[str, Any], row: dict[str, Any]) -> None:
    """Add one row of totals (stored or hourly) into ``into``: sums, and the larger peak."""
    into["samples"] += row["samples"] or 0
    into["util_weighted"] += row["util_weighted"] or 0.0
    into["util_samples"] += row["util_samples"] or 0
    if row["energy"] is not None:
        into["energy"] = (into["energy"] or 0.0) + row["energy"]
    if row["peak_mib"] is not None:
        into["peak_mib"] = max(into["peak_mib"] or 0.0, row["peak_mib"])


def _period_so_far(
    days: Sequence[date], hour_spans: Sequence[tuple[datetime, datetime]], *, by: Sequence[str]
) -> tuple[type[UsageTotals], dict[str, date], set[date]] | None:
    """The stored period a range's partly covered last day could be read from, and the whole days it replaces.

    The range ends inside a day D whose hours from midnight are its last span: D's daily totals, or, when the range
    also holds every day of D's month before D and is not grouped by day, the month's totals. None otherwise.
    """
    if not hour_spans:
        return None
    first, last = hour_spans[-1]
    day = first.astimezone(UTC).date()
    if first != midnight(day) or last > first + timedelta(days=1):
        return None
    month = day.replace(day=1)
    earlier = {month + timedelta(days=offset) for offset in range((day - month).days)}
    if "day" not in by and earlier <= set(days):
        return MonthlyUsage, {"month": month}, earlier
    return DailyUsage, {"day": day}, set()


def usage_totals(
    *,
    start: datetime,
    end: datetime,
    by: Sequence[str],
    teams: QuerySet[Team] | None = None,
    keys: Mapping[str, Any] | None = None,
) -> dict[UsageKey, dict[str, Any]]:
    """Measured use in [start, end) grouped ``by`` (fields of ``USAGE_GROUPS``), from the coarsest totals that fit.

    Whole months come from ``MonthlyUsage``, whole days from ``DailyUsage`` and the ragged ends from the hourly
    rollups (``gpucore.periods.cover``), so a month reads a few rows per request; a last day read up to a time after
    its latest rollup (this month so far) comes from its day's, or month's, stored totals. Each value has ``samples``
    (minutes), ``util_weighted``, ``util_samples`` (see ``utilization_weighted_sum``) and ``energy`` (kWh or None).

    ``keys`` names expressions over a totals row's own fields (``request_id``, ``team_id``, ...) to group ``by``
    as well: what a caller maps a row to, worked out by the database instead of per row here.
    """
    keys = dict(keys or {})
    unknown = set(by) - USAGE_GROUPS - set(keys)
    if unknown:
        raise ValueError(f"usage_totals cannot group by {sorted(unknown)}")
    pieces = cover(start, end)
    months, days, hour_spans = list(pieces.months), list(pieces.days), list(pieces.hour_spans)
    if "day" in by:  # a month's total has no days in it: read its days instead
        for month in months:
            day = month
            while day < next_month_start(month):
                days.append(day)
                day += timedelta(days=1)
        months = []
    totals: dict[UsageKey, dict[str, Any]] = {}

    def add(rows: Iterable[dict[str, Any]]) -> None:
        for row in rows:
            key = tuple(row[field] for field in by)
            _merge(totals.setdefault(key, _empty_totals()), row)

    def scoped(qs: QuerySet) -> QuerySet:
        return (qs if teams is None else qs.filter(team__in=teams)).order_by()

    def grouped(qs: QuerySet) -> QuerySet:
        return qs.annotate(**keys).values(*by) if keys else qs.values(*by)

    tail = _period_so_far(days, hour_spans, by=by)
    if tail is not None:
        model, period, replaced_days = tail
        # The totals are kept equal to the rollups, so a day or month read up to ``end`` is its total while none of
        # its rollups is at or after ``end`` (the usual "up to now"): a few rows instead of every device-hour.
        rows = list(scoped(grouped(model.objects.filter(**period)).annotate(**_STORED, latest=Max("last_hour"))))
        if all(row["latest"] < end for row in rows):
            add(rows)
            hour_spans = hour_spans[:-1]
            days = [day for day in days if day not in replaced_days]
    querysets: list[QuerySet] = []
    if months:
        querysets.append(grouped(MonthlyUsage.objects.filter(month__in=months)).annotate(**_STORED))
    if days:
        querysets.append(grouped(DailyUsage.objects.filter(_day_runs(sorted(days)))).annotate(**_STORED))
    for first, last in hour_spans:
        hourly = rollups_between(start=first, end=last).annotate(
            is_mig=ExpressionWrapper(~Q(mig_instance=""), output_field=BooleanField()),
            day=TruncDate("hour", tzinfo=UTC),
        )
        querysets.append(
            grouped(hourly).annotate(
                samples=Sum("sample_count"),
                util_weighted=utilization_weighted_sum(),
                util_samples=utilization_samples(),
                energy=Sum("energy_kwh"),
                peak_mib=Max("peak_memory_used_mib"),
            )
        )
    for qs in querysets:
        add(scoped(qs))
    return totals
