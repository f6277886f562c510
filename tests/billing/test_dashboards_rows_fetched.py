"""The cost dashboards' charts ask the database for what they draw (sums per group, the most expensive requests), so
the rows a chart fetches do not grow with the requests behind it: 200 requests fetch no more than 5 do, give or take
the top 25's depth. The figures stay those of the per-request chargeback (``tests/billing/test_day_charges.py``,
``test_dashboard_controls.py``); the ranking of the top 25 is checked against it here, across a closed month, stored
days and live days.

PostgreSQL only: each statement's rows are counted by the database (``count(*)`` over the statement itself)."""

from __future__ import annotations

import csv
import io
from collections import defaultdict
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal

import pytest
from django.core.cache import cache
from django.db import connection, transaction
from django.urls import reverse

from billing.costs.dashboard_query import parse_dashboard_query
from billing.costs.dashboard_rows import top_requests
from billing.costs.dashboards import ChargebackMemo, range_rows
from billing.costs.day_charges import day_charges_catch_up, day_charges_forget, month_charges
from billing.costs.services import monthly_reports_close
from billing.metering.aggregates import refresh_usage_aggregates
from billing.models import MonthlyReportLine, UtilizationRollup
from gpucore.pricing import to_cents
from tests.billing.cost_helpers import held_request, load_book

pytestmark = [
    pytest.mark.django_db,
    pytest.mark.skipif(connection.vendor != "postgresql", reason="rows counted by PostgreSQL"),
]
SEPTEMBER, OCTOBER = date(2026, 9, 1), date(2026, 10, 1)
SEP_20 = datetime(2026, 9, 20, tzinfo=UTC)
CHARTS = ("cost-over-time", "strategy-mix", "cost-per-request", "pool-heatmap", "allocation-vs-utilization")


def _requests(org, first: int, count: int) -> None:
    """Requests held from late September into October, each a different length and size (so a different cost), each
    measured for an hour in each month."""
    rollups = []
    for n in range(first, first + count):
        start = SEP_20 + timedelta(minutes=37 * n)
        end = start + timedelta(days=12, hours=n % 17)
        team = org.team if n % 2 else org.other_team
        request = held_request(team=team, start=start, end=end, quantity=1 + n % 3, node_pool=org.pool)
        for hour in (datetime(2026, 9, 30, 10, tzinfo=UTC), datetime(2026, 10, 1, 10, tzinfo=UTC)):
            rollups.append(
                UtilizationRollup(
                    cluster=org.cluster,
                    hour=hour,
                    gpu_uuid=f"GPU-{n}",
                    namespace=request.team.namespace,
                    pod=f"gpr-{request.pk}",
                    team=request.team,
                    request=request,
                    gpu_model_name="NVIDIA H100 80GB HBM3",
                    sample_count=60,
                    avg_utilization_pct=40.0,
                    pulled_at=hour,
                )
            )
    UtilizationRollup.objects.bulk_create(rollups)
    refresh_usage_aggregates(cluster_id=org.cluster.pk, start=datetime(2026, 9, 30, tzinfo=UTC),
                             end=datetime(2026, 10, 2, tzinfo=UTC))  # fmt: skip


def _close_and_price() -> None:
    """September closed, every day since stored (as the month close and the hourly pricing task do)."""
    monthly_reports_close(month=SEPTEMBER, send_email=False)
    day_charges_catch_up()


class RowCounter:
    """Rows each SELECT of a page view returns, counted by the database."""

    def __init__(self) -> None:
        self.rows = 0

    def __call__(self, execute, sql, params, many, context):
        result = execute(sql, params, many, context)
        if not many and sql.lstrip().upper().startswith("SELECT"):
            raw = context["connection"].connection
            counted = f"SELECT count(*) FROM ({sql}) AS counted"  # noqa: S608 - the statement the page just ran
            self.rows += raw.execute(counted, params).fetchone()[0]
        return result


def _rows_fetched(client) -> int:
    cache.clear()
    counter = RowCounter()
    with connection.execute_wrapper(counter):
        for chart in CHARTS:
            for params in ({"month": "2026-10"}, {"period": "custom", "from": "2026-09", "to": "2026-10"}):
                assert client.get(reverse("billing:dashboard-csv", args=[chart]), params).status_code == 200
    return counter.rows


def test_rows_fetched_do_not_grow_with_the_requests(demo_org, client) -> None:
    load_book({"H100-80GB": "2.00"}, effective_from="2026-08-01")
    client.force_login(demo_org.platform_admin)
    with transaction.atomic():  # the same months, built once with 5 requests and once with 200
        _requests(demo_org, 0, 5)
        _close_and_price()
        few = _rows_fetched(client)
        transaction.set_rollback(True)
    _requests(demo_org, 0, 200)
    _close_and_price()
    many = _rows_fetched(client)
    # What 200 requests add is the cost-per-request chart's lists: for each of its two views and each place read
    # (closed lines, stored days), its 25 most expensive (5 requests give 5), once 50 deep, the candidates the lists
    # miss and the shown ones' details: at most four lists of 25 each. Every request's rows added thousands; measured
    # use read per request, two rows per request and view.
    assert many - few <= 2 * 2 * 4 * 25, (few, many)


def _reference_top(now: datetime) -> list[tuple[str, int, str]]:
    """The 25 most expensive requests of September and October from every line of them, summed in Python."""
    totals: dict[tuple[str, int], Decimal] = defaultdict(Decimal)
    for line in MonthlyReportLine.objects.select_related("report__team"):
        totals[(line.report.team.slug, line.request_ref)] += line.amount
    for (slug, _), row in month_charges(month=OCTOBER, now=now).rows.items():
        totals[(slug, row["request"])] += row["amount"]
    ranked = sorted(totals.items(), key=lambda item: (-item[1], item[0]))[:25]
    return [(slug, request, to_cents(amount)) for (slug, request), amount in ranked]


def test_the_top_requests_are_those_of_every_line(demo_org, client) -> None:
    load_book({"H100-80GB": "2.00"}, effective_from="2026-08-01")
    _requests(demo_org, 0, 80)
    _close_and_price()
    day_charges_forget(since=date(2026, 10, 3))  # October: two days stored, the rest priced live
    now = datetime(2026, 11, 29, tzinfo=UTC)
    query = parse_dashboard_query(
        {"period": "custom", "from": "2026-09", "to": "2026-10"}, this_month=date(2026, 11, 1), may_see_idle=True
    )
    teams = demo_org.team.__class__.objects.all()
    data = range_rows(query=query, months=query.months, teams=teams, now=now, memo=ChargebackMemo(now))
    assert data[0].report_ids and data[1].stored is not None and data[1].live  # all three places
    top = [(r["team"], r["request"], to_cents(r["amount"])) for r in top_requests(query=query, data=data)]
    assert top == _reference_top(now)
    client.force_login(demo_org.platform_admin)
    response = client.get(reverse("billing:dashboard-csv", args=["cost-per-request"]), query.params())
    page = [(r["team"], int(r["request"]), r["cost"]) for r in csv.DictReader(io.StringIO(response.content.decode()))]
    assert page == [(team, request, f"{cost:.2f}") for team, request, cost in top]
