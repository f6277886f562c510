"""On PostgreSQL the hourly tables are partitioned by month: partitions are created ahead (rows the default partition
held for such a month move in), a month past retention goes by dropping its partition, and the usage API, the cost
dashboards and the month's report answer the same from the daily and monthly totals afterwards."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta

import pytest
from django.core.cache import cache
from django.db import connection
from django.urls import reverse
from django.utils import timezone

from billing.costs.services import monthly_reports_close
from billing.metering.aggregates import refresh_usage_aggregates
from billing.metering.partitions import drop_expired_hourly, ensure_month_partitions, hourly_kept_from
from billing.models import DailyUsage, GpuHealthHour, MonthlyReportLine, MonthlyUsage, UtilizationRollup
from tests.billing.cost_helpers import OCT, held_request, load_book, rollup

pytestmark = [pytest.mark.integration, pytest.mark.postgres, pytest.mark.django_db]
ROLLUPS, HEALTH = "billing_utilizationrollup", "billing_gpuhealthhour"
# Thirteen months of hourly data from December 2027 keep December 2026 on: October 2026 is past retention.
LATER = datetime(2027, 12, 10, 4, tzinfo=UTC)


def _partition_of(table: str, **where) -> set[str]:
    column, value = next(iter(where.items()))
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT DISTINCT tableoid::regclass::text FROM {table} WHERE {column} = %s", [value])  # noqa: S608
        return {name for (name,) in cursor.fetchall()}


def _exists(name: str) -> bool:
    with connection.cursor() as cursor:
        cursor.execute("SELECT to_regclass(%s) IS NOT NULL", [name])
        return cursor.fetchone()[0]


def _health(cluster, hour: datetime) -> None:
    GpuHealthHour.objects.create(cluster=cluster, hour=hour, gpu_uuid="GPU-1", reported_minutes=60, pulled_at=hour)


def test_partitions_are_created_ahead_once_and_take_the_default_partitions_rows(demo_org) -> None:
    august = datetime(2026, 8, 3, 5, tzinfo=UTC)
    ensure_month_partitions(now=timezone.now())
    assert not _exists(f"{ROLLUPS}_p2026_08")
    rollup(cluster=demo_org.cluster, hour=august, request=None, util=10.0)  # no August partition yet: the default
    _health(demo_org.cluster, august)
    assert _partition_of(ROLLUPS, hour=august) == {f"{ROLLUPS}_default"}

    created = ensure_month_partitions(now=august, months_ahead=1)
    assert set(created) >= {f"{ROLLUPS}_p2026_08", f"{HEALTH}_p2026_08"}
    assert _partition_of(ROLLUPS, hour=august) == {f"{ROLLUPS}_p2026_08"}
    assert _partition_of(HEALTH, hour=august) == {f"{HEALTH}_p2026_08"}
    assert ensure_month_partitions(now=august, months_ahead=1) == []  # idempotent
    # The moved row is still the model's row, updated through the parent table.
    assert UtilizationRollup.objects.filter(hour=august).update(avg_utilization_pct=20.0) == 1


def test_a_month_past_retention_goes_by_its_partition_and_still_answers_from_the_totals(demo_org, client) -> None:
    load_book({"H100-80GB": "2.00"})
    ensure_month_partitions(now=OCT, months_ahead=0)
    held = held_request(team=demo_org.team, start=OCT, end=OCT + timedelta(hours=10), quantity=2)
    for hour in range(10):
        rollup(cluster=demo_org.cluster, hour=OCT + timedelta(hours=hour), request=held, util=30.0 + hour,
               peak_memory_used_mib=1000.0 * hour)  # fmt: skip
        _health(demo_org.cluster, OCT + timedelta(hours=hour))
    assert _partition_of(ROLLUPS, hour=OCT) == {f"{ROLLUPS}_p2026_10"}
    client.force_login(demo_org.platform_admin)
    usage_url = f"/api/v1/teams/{demo_org.team.slug}/usage/?month=2026-10"

    def answers() -> tuple:
        cache.clear()
        usage = client.get(usage_url).json()
        charts = [
            client.get(reverse("billing:dashboard-csv", args=[chart]), {"month": "2026-10"}).content
            for chart in ("allocation-vs-utilization", "cost-per-request", "pool-heatmap")
        ]
        return usage, charts

    usage_before, charts_before = answers()
    assert usage_before["gpu_hours"] == 10 and usage_before["peak_memory_used_gb"] == round(9000 / 1024, 2)
    daily = list(DailyUsage.objects.order_by("day").values())

    dropped = drop_expired_hourly(now=LATER, retention_months=13)

    assert hourly_kept_from(now=LATER, retention_months=13) == date(2026, 12, 1)
    assert {f"{ROLLUPS}_p2026_10", f"{HEALTH}_p2026_10"} <= set(dropped)
    assert not _exists(f"{ROLLUPS}_p2026_10") and not _exists(f"{HEALTH}_p2026_10")
    assert _exists(f"{ROLLUPS}_p2026_12")  # kept
    assert not UtilizationRollup.objects.exists() and not GpuHealthHour.objects.exists()
    # A refresh over the dropped days (a late pull, a re-run) leaves their totals as they are.
    refresh_usage_aggregates(cluster_id=demo_org.cluster.pk, start=OCT, end=OCT + timedelta(days=2))
    assert list(DailyUsage.objects.order_by("day").values()) == daily
    assert MonthlyUsage.objects.filter(month=date(2026, 10, 1)).exists()

    usage_after, charts_after = answers()
    assert usage_after == usage_before
    assert charts_after == charts_before
    monthly_reports_close(month=date(2026, 10, 1), send_email=False)
    line = MonthlyReportLine.objects.get(request_ref=held.pk)
    assert line.avg_utilization_pct == pytest.approx(34.5) and line.energy_kwh == pytest.approx(3.5)
    assert drop_expired_hourly(now=LATER, retention_months=13) == []  # idempotent
