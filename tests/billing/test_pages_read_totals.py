"""Cost pages read the stored daily and monthly totals, not the hourly rows: the 12-month dashboards, the team and
budget pages, the reports list and the usage API, with a year of history and today's hours pulled. (The hourly
tables hold far more rows than everything else at fleet size, and their old months are dropped by retention.)

What still reads hourly rows is bounded to a recent window: the pools' 7-day utilization forecast, the team's 7-day
utilization panel (its alerts are rules over device-hours) and its 30-day hourly chart."""

from __future__ import annotations

import re
from datetime import UTC, date, datetime, timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone

from billing.costs.dashboard_query import add_months
from tests.billing.cost_helpers import held_request, load_book, rollup

pytestmark = pytest.mark.django_db
HOURLY = ("billing_utilizationrollup", "billing_gpuhealthhour")


@pytest.fixture
def year_of_use(demo_org):
    """A request held since a year ago, with a few hours measured each month and hours already pulled today."""
    now = timezone.now()
    top = now.replace(minute=0, second=0, microsecond=0)
    first = add_months(now.date().replace(day=1), -11)
    load_book({"H100-80GB": "2.00"}, effective_from=f"{first:%Y-%m-%d}")
    start = top.replace(year=first.year, month=first.month, day=1, hour=0)
    held = held_request(team=demo_org.team, start=start, end=None, node_pool=demo_org.pool)
    for months in range(12):
        month = add_months(first, months)
        rollup(cluster=demo_org.cluster, hour=start.replace(year=month.year, month=month.month, day=2), request=held,
               util=20.0 + months)  # fmt: skip
    for back in (1, 2):  # the open day (or the end of yesterday, just after midnight)
        rollup(cluster=demo_org.cluster, hour=top - timedelta(hours=back), request=held, util=70.0, gpu="GPU-2")
    return demo_org, first


def _hourly_reads(client, url: str, params: dict | None = None, *, window_days: int = 8) -> list[str]:
    """The statements of one page view that read an hourly table further back than ``window_days``."""
    with CaptureQueriesContext(connection) as captured:
        response = client.get(url, params or {})
    assert response.status_code == 200, (url, response.status_code)
    week_ago = timezone.now() - timedelta(days=window_days)
    return [
        query["sql"]
        for query in captured.captured_queries
        if any(table in query["sql"] for table in HOURLY) and not _bounded_after(query["sql"], week_ago)
    ]


def _bounded_after(sql: str, since) -> bool:
    """Whether the statement reads only hours from ``since`` on (a ``"hour" >= '...'`` bound at or after it)."""
    bounds = re.findall(r'"hour" >= \'([0-9-]+ [0-9:]+)', sql)
    return bool(bounds) and all(datetime.fromisoformat(b).replace(tzinfo=UTC) >= since for b in bounds)


def test_the_twelve_month_dashboards_never_read_hourly_rows(year_of_use, client) -> None:
    org, first = year_of_use
    client.force_login(org.platform_admin)
    this_month = add_months(first, 11)
    twelve = {"period": "custom", "from": f"{first:%Y-%m}", "to": f"{this_month:%Y-%m}"}
    assert _hourly_reads(client, reverse("billing:dashboard"), twelve) == []
    for chart in ("allocation-vs-utilization", "pool-heatmap", "cost-per-request", "cost-over-time"):
        assert _hourly_reads(client, reverse("billing:dashboard-csv", args=[chart]), twelve) == [], chart
    assert _hourly_reads(client, reverse("billing:dashboard"), {"month": f"{this_month:%Y-%m}"}) == []


def test_team_budget_report_pages_and_the_usage_api_never_read_hourly_rows(year_of_use, client) -> None:
    org, first = year_of_use
    client.force_login(org.platform_admin)
    slug = org.team.slug
    # The team page's hourly chart covers its last 30 days (TEAM_SERIES_DAYS), through the (team, hour) index.
    assert _hourly_reads(client, reverse("allocations:team-detail", args=[slug]), window_days=31) == []
    assert _hourly_reads(client, reverse("billing:team-budget", args=[slug])) == []
    assert _hourly_reads(client, reverse("billing:budget-list")) == []
    assert _hourly_reads(client, reverse("billing:report-list")) == []
    # The approver's home counts this month's reclaimable notebook hours: an hour is idle only when complete and
    # under the thresholds, which totals cannot say; the month's rows only, kept until a rollup is written.
    assert _hourly_reads(client, reverse("home"), window_days=32) == []
    this_month = add_months(first, 11)
    usage = f"/api/v1/teams/{slug}/usage/"
    assert _hourly_reads(client, usage, {"month": f"{add_months(this_month, -1):%Y-%m}"}) == []
    # Whole days from the totals; today up to now from today's stored total (its rollups all began before now).
    today = timezone.now().date()
    assert (
        _hourly_reads(
            client, usage, {"start": f"{today - timedelta(days=20):%Y-%m-%d}", "end": timezone.now().isoformat()}
        )
        == []
    )
    assert date.today() >= first
