"""A month's run of stored days is also kept summed per request (``MonthRequestCharge``) for the charts that rank or
group requests; the sums name the run they cover and go with the days they sum."""

from __future__ import annotations

from collections import defaultdict
from datetime import date, timedelta
from decimal import Decimal as D

import pytest
from django.test.utils import CaptureQueriesContext

from billing.costs.charge_sums import month_sums_exist, month_sums_store
from billing.costs.day_charges import day_charges_catch_up, day_charges_forget, day_charges_store
from billing.models import DayCharge, MonthRequestCharge, PricedDay
from tests.billing.test_dashboard_controls import _csv
from tests.billing.test_day_charges import NOW, month  # noqa: F401 - the fixture

pytestmark = pytest.mark.django_db

OCTOBER, NOVEMBER = date(2026, 10, 1), date(2026, 11, 1)
CHARTS = ("cost-per-request", "allocation-vs-utilization", "strategy-mix")


def _per_request(rows) -> dict[tuple, tuple[D, D, D]]:
    sums: dict[tuple, list[D]] = defaultdict(lambda: [D(0)] * 3)
    for row in rows:
        acc = sums[(row.team_id, row.request_id, row.imported_id, row.name)]
        for n, name in enumerate(("amount", "dedicated_amount", "allocated_gpu_hours")):
            acc[n] += getattr(row, name)
    return {key: tuple(values) for key, values in sums.items()}


def test_each_months_run_of_stored_days_is_summed_per_request(month) -> None:  # noqa: F811
    day_charges_catch_up(now=NOW)  # October 1-24 stored, with August and September
    through = NOW.date()
    assert month_sums_exist(month=OCTOBER, through=through)
    assert not MonthRequestCharge.objects.exclude(month=OCTOBER).exists()  # nobody held GPUs before: no rows
    summed = MonthRequestCharge.objects.filter(month=OCTOBER, through=through)
    assert _per_request(summed) == _per_request(DayCharge.objects.filter(day__gte=OCTOBER, day__lt=through))
    assert summed.count() == 4 and summed.filter(imported__isnull=False, request__isnull=True).count() == 1

    day_charges_catch_up(now=NOW + timedelta(days=2))  # two more days: summed again, the sums before kept a run
    assert set(MonthRequestCharge.objects.filter(month=OCTOBER).values_list("through", flat=True)) == {
        through,
        through + timedelta(days=2),
    }
    day_charges_catch_up(now=NOW + timedelta(days=3))
    assert set(MonthRequestCharge.objects.filter(month=OCTOBER).values_list("through", flat=True)) == {
        through + timedelta(days=2),
        through + timedelta(days=3),
    }
    assert day_charges_catch_up(now=NOW + timedelta(days=3)) == {"stored": 0, "raced": 0}  # idempotent


def test_forgotten_or_restored_days_take_their_sums_with_them(month) -> None:  # noqa: F811
    day_charges_catch_up(now=NOW)
    day_charges_catch_up(now=NOW + timedelta(days=1))  # sums of the 1st-24th and of the 1st-25th
    day_charges_forget(since=date(2026, 10, 25))  # the 25th on: the sums of the 1st-24th stay
    assert set(MonthRequestCharge.objects.values_list("through", flat=True)) == {date(2026, 10, 25)}
    day_charges_forget(since=date(2026, 10, 20))
    assert not MonthRequestCharge.objects.exists()
    day_charges_catch_up(now=NOW)
    assert month_sums_exist(month=OCTOBER, through=NOW.date())

    day_charges_store(day=date(2026, 10, 3))  # a day stored again: the sums over its former rows go
    assert not MonthRequestCharge.objects.exists()


def test_a_run_with_a_day_not_stored_is_not_summed(month) -> None:  # noqa: F811
    day_charges_catch_up(now=NOW)
    MonthRequestCharge.objects.all().delete()
    PricedDay.objects.filter(day=date(2026, 10, 7)).update(complete=False)  # being priced again
    assert not month_sums_store(month=OCTOBER, through=NOW.date())
    assert month_sums_store(month=OCTOBER, through=date(2026, 10, 7))
    assert not month_sums_store(month=OCTOBER, through=OCTOBER)  # nothing to sum
    assert set(MonthRequestCharge.objects.values_list("through", flat=True)) == {date(2026, 10, 7)}


@pytest.mark.parametrize("group", ["team", "pool", "tier"])
def test_the_charts_read_the_sums_and_the_days_alike(month, client, group) -> None:  # noqa: F811
    client.force_login(month.platform_admin)
    params = {"month": "2026-10", "group": group, "idle": "1"}
    live = {chart: _csv(client, chart, **params) for chart in CHARTS}
    day_charges_catch_up()  # all of October stored and summed
    assert month_sums_exist(month=OCTOBER, through=NOVEMBER)
    with CaptureQueriesContext_for("billing_monthrequestcharge") as read:
        assert {chart: _csv(client, chart, **params) for chart in CHARTS} == live
    assert read.hits and not read.other  # requests ranked and grouped from the sums, not the days
    MonthRequestCharge.objects.all().delete()  # not summed yet: the days are read, the same figures
    with CaptureQueriesContext_for("billing_monthrequestcharge") as read:
        assert {chart: _csv(client, chart, **params) for chart in CHARTS} == live
    assert not read.hits


class CaptureQueriesContext_for:
    """The queries run inside: those reading ``table`` (``hits``; not the check that it has rows) and those reading
    ``billing_daycharge`` per day (``other``)."""

    def __init__(self, table: str) -> None:
        from django.db import connection

        self.table = table
        self.context = CaptureQueriesContext(connection)

    def __enter__(self) -> CaptureQueriesContext_for:
        self.context.__enter__()
        return self

    def __exit__(self, *exc) -> None:
        self.context.__exit__(*exc)
        sql = [query["sql"] for query in self.context.captured_queries]
        self.hits = [q for q in sql if self.table in q and not q.startswith('SELECT 1 AS "a"')]
        self.other = [q for q in sql if 'FROM "billing_daycharge"' in q]


@pytest.mark.parametrize(
    "params",
    [{"group": "team"}, {"group": "pool"}, {"group": "tier"}, {"group": "team", "strategy": "time-slicing"},
     {"group": "gpu_model", "team": "nlp"}],
)  # fmt: skip
def test_measured_use_is_grouped_alike_from_live_stored_summed_and_closed_charges(month, client, params) -> None:  # noqa: F811
    from billing.costs.services import monthly_reports_close
    from tests.billing.cost_helpers import rollup

    for request in month.team.gpu_requests.all():  # measured use for each of vision's requests
        rollup(cluster=month.cluster, hour=request.activated_at.replace(minute=0) + timedelta(hours=2), request=request,
               util=55.0)  # fmt: skip
    client.force_login(month.platform_admin)

    def chart() -> list[dict[str, str]]:
        return _csv(client, "allocation-vs-utilization", month="2026-10", **params)

    live = chart()
    assert any(row["measured_gpu_hours"] != "0.0" for row in live) or params.get("team") == "nlp"
    day_charges_catch_up()
    assert chart() == live  # summed
    MonthRequestCharge.objects.all().delete()
    assert chart() == live  # the stored days
    monthly_reports_close(month=OCTOBER, send_email=False)
    assert chart() == live  # the closed reports' lines
