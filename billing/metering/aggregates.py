"""Keeping the daily and monthly usage totals (``DailyUsage``, ``MonthlyUsage``) equal to the hourly rollups.

Whatever writes or replaces rollups calls ``refresh_usage_aggregates(cluster_id=, start=, end=)`` for the hours it
touched, in the same transaction, after its write. It recomputes the totals of every UTC day those hours fall in
from the rollups (one DELETE and one INSERT .. SELECT .. GROUP BY), then every month those days fall in from the
daily totals: the cost follows the size of the write (a day or two of rollups, a month of daily rows), never the
whole history, and running it twice gives the same rows (idempotent, safe to retry). Days before the hourly
retention's horizon (``HourlyRetention``) are left as they are: their totals are all that is left of them.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from django.db import connection, transaction

from gpucore.periods import midnight, next_month_start
from infra import reference_cache

DAILY = "billing_dailyusage"
MONTHLY = "billing_monthlyusage"
ROLLUPS = "billing_utilizationrollup"
RETENTION = "billing_hourlyretention"
_COLUMNS = (
    "cluster_id, {grain}, team_id, request_id, gpu_model_name, is_mig, "
    "sample_count, util_weighted, util_samples, energy_kwh, peak_memory_mib, last_hour"
)
_LOCK_CLASS = 0x5553  # pg_advisory_xact_lock(class, cluster_id): refreshes of one cluster take turns


# Days before the hourly retention's horizon keep their totals as they are: their hourly rows are gone (or going).
_KEPT_DAY = f"NOT EXISTS (SELECT 1 FROM {RETENTION} r WHERE day < r.kept_from)"  # noqa: S608


def _kept_hour(vendor: str) -> str:
    day = _day_of_hour(vendor)
    return f"NOT EXISTS (SELECT 1 FROM {RETENTION} r WHERE {day} < r.kept_from)"  # noqa: S608


def _day_of_hour(vendor: str) -> str:
    return "CAST((hour AT TIME ZONE 'UTC') AS date)" if vendor == "postgresql" else "date(hour)"


def _month_of_day(vendor: str) -> str:
    return "CAST(date_trunc('month', day) AS date)" if vendor == "postgresql" else "date(day, 'start of month')"


def refresh_statements(vendor: str) -> list[str]:
    """The four statements of a refresh; parameters: cluster id, first and end (exclusive) day, then month."""
    day, month = _day_of_hour(vendor), _month_of_day(vendor)
    is_mig = "mig_instance <> ''"
    # Only this module's constants are interpolated; every value is a parameter.
    return [
        f"DELETE FROM {DAILY} WHERE cluster_id = %s AND day >= %s AND day < %s AND {_KEPT_DAY}",  # noqa: S608
        f"INSERT INTO {DAILY} ({_COLUMNS.format(grain='day')}) "  # noqa: S608
        f"SELECT cluster_id, {day}, team_id, request_id, gpu_model_name, {is_mig}, SUM(sample_count), "
        "SUM(avg_utilization_pct * sample_count), "
        "SUM(CASE WHEN avg_utilization_pct IS NULL THEN 0 ELSE sample_count END), SUM(energy_kwh), "
        "MAX(peak_memory_used_mib), MAX(hour) "
        f"FROM {ROLLUPS} WHERE cluster_id = %s AND hour >= %s AND hour < %s AND {_kept_hour(vendor)} "
        f"GROUP BY cluster_id, {day}, team_id, request_id, gpu_model_name, {is_mig}",
        f"DELETE FROM {MONTHLY} WHERE cluster_id = %s AND month >= %s AND month < %s",  # noqa: S608
        f"INSERT INTO {MONTHLY} ({_COLUMNS.format(grain='month')}) "  # noqa: S608
        f"SELECT cluster_id, {month}, team_id, request_id, gpu_model_name, is_mig, SUM(sample_count), "
        "SUM(util_weighted), SUM(util_samples), SUM(energy_kwh), MAX(peak_memory_mib), MAX(last_hour) "
        f"FROM {DAILY} WHERE cluster_id = %s AND day >= %s AND day < %s "
        f"GROUP BY cluster_id, {month}, team_id, request_id, gpu_model_name, is_mig",
    ]


def refresh_usage_aggregates(*, cluster_id: int, start: datetime, end: datetime) -> None:
    """Recompute the daily and monthly usage totals of one cluster for the days and months that [start, end) touch.

    Call it after writing, replacing or deleting the cluster's rollups of the hours in [start, end), inside the
    same transaction (it opens one of its own otherwise).
    """
    if end <= start:
        return
    reference_cache.invalidate(
        reference_cache.ROLLUPS
    )  # what is derived from the rollups (the fleet's alerts) is read again
    first_day = start.astimezone(UTC).date()
    last = (end - timedelta(microseconds=1)).astimezone(UTC).date()
    end_day = last + timedelta(days=1)
    first_month, end_month = first_day.replace(day=1), next_month_start(last.replace(day=1))
    delete_daily, insert_daily, delete_monthly, insert_monthly = refresh_statements(connection.vendor)
    # Values as the backend stores them (SQLite compares text: "2026-10-01 00:00:00", no offset).
    day, moment = connection.ops.adapt_datefield_value, connection.ops.adapt_datetimefield_value
    with transaction.atomic(), connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute("SELECT pg_advisory_xact_lock(%s, %s)", [_LOCK_CLASS, cluster_id])
        cursor.execute(delete_daily, [cluster_id, day(first_day), day(end_day)])
        cursor.execute(insert_daily, [cluster_id, moment(midnight(first_day)), moment(midnight(end_day))])
        cursor.execute(delete_monthly, [cluster_id, day(first_month), day(end_month)])
        cursor.execute(insert_monthly, [cluster_id, day(first_month), day(end_month)])
