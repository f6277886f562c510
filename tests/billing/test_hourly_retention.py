"""Hourly retention on any database (SQLite keeps plain tables and deletes the old rows): months before the horizon
lose their hourly rows, keep their totals, and later refreshes leave those totals alone."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta

import pytest

from billing.metering.aggregates import refresh_usage_aggregates
from billing.metering.partitions import add_months, drop_expired_hourly, hourly_kept_from
from billing.models import DailyUsage, HourlyRetention, MonthlyUsage, UtilizationRollup
from billing.tasks import maintain_hourly_partitions
from portal.celery import app
from tests.billing.rollups import rollup

pytestmark = pytest.mark.django_db
LATER = datetime(2027, 12, 10, 4, tzinfo=UTC)


def test_the_horizon_counts_the_current_month_in() -> None:
    assert hourly_kept_from(now=LATER, retention_months=13) == date(2026, 12, 1)
    assert hourly_kept_from(now=LATER, retention_months=1) == date(2027, 12, 1)
    assert hourly_kept_from(now=LATER, retention_months=0) is None
    assert add_months(date(2026, 1, 1), -1) == date(2025, 12, 1) and add_months(date(2026, 12, 1), 1).year == 2027


def test_old_hours_go_their_totals_stay_and_are_not_recomputed(demo_org) -> None:
    old, kept = datetime(2026, 10, 5, 3, tzinfo=UTC), datetime(2026, 12, 2, 3, tzinfo=UTC)
    rollup(cluster=demo_org.cluster, hour=old, team=demo_org.team)
    rollup(cluster=demo_org.cluster, hour=kept, team=demo_org.team)
    october = list(DailyUsage.objects.filter(day=old.date()).values("sample_count", "team_id"))

    drop_expired_hourly(now=LATER, retention_months=13)

    assert list(UtilizationRollup.objects.values_list("hour", flat=True)) == [kept]
    assert HourlyRetention.objects.get().kept_from == date(2026, 12, 1)
    refresh_usage_aggregates(cluster_id=demo_org.cluster.pk, start=old, end=kept + timedelta(hours=1))
    assert list(DailyUsage.objects.filter(day=old.date()).values("sample_count", "team_id")) == october
    assert MonthlyUsage.objects.get(month=date(2026, 10, 1)).sample_count == 60
    # A shorter horizon never moves it back.
    drop_expired_hourly(now=LATER, retention_months=30)
    assert HourlyRetention.objects.get().kept_from == date(2026, 12, 1)


def test_keeping_everything_drops_nothing(demo_org) -> None:
    rollup(cluster=demo_org.cluster, hour=datetime(2020, 1, 1, tzinfo=UTC), team=demo_org.team)
    assert drop_expired_hourly(now=LATER, retention_months=0) == []
    assert UtilizationRollup.objects.count() == 1 and not HourlyRetention.objects.exists()


def test_the_maintenance_runs_daily_from_beat(settings, demo_org) -> None:
    assert app.conf.beat_schedule["maintain-hourly-partitions"]["task"] == maintain_hourly_partitions.name
    settings.HOURLY_RETENTION_MONTHS = 13
    rollup(cluster=demo_org.cluster, hour=datetime(2020, 1, 1, tzinfo=UTC), team=demo_org.team)
    maintain_hourly_partitions()
    assert not UtilizationRollup.objects.exists()
