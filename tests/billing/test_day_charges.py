"""A month not closed yet is read from its days' stored charges plus the live chargeback of the days not stored, and
gives the live chargeback's figures: every team's and request's amount, baseline and GPU-hours, and the idle cost."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta
from decimal import Decimal as D

import pytest

from billing.costs.chargeback import month_chargeback
from billing.costs.day_charges import day_charges_catch_up, day_charges_store, month_charges
from billing.costs.tasks import price_past_days
from billing.models import DayCharge, ImportedUsage, PricedDay
from gpucore.pricing import to_cents
from portal.celery import app
from tests.billing.cost_helpers import OCT, held_request, load_book
from tests.billing.test_dashboard_controls import _csv, october  # noqa: F401 - the fixture

pytestmark = pytest.mark.django_db

NOW = datetime(2026, 10, 25, 15, 30, tzinfo=UTC)
OCTOBER = date(2026, 10, 1)


@pytest.fixture
def month(demo_org):
    """Two price books (the second from Oct 15 with a tier multiplier), requests held across days and books, one
    still held, one time-sliced, imported usage; a pool of 16 H100s (idle capacity)."""
    load_book({"H100-80GB": "2.00", "T4": "0.52"}, effective_from="2026-09-01")
    load_book({"H100-80GB": "2.50", "T4": "0.60"}, effective_from="2026-10-15", tier2_batch="1.2")
    demo_org.pool.node_count, demo_org.pool.gpus_per_node = 2, 8
    demo_org.pool.save()
    held_request(team=demo_org.team, start=OCT + timedelta(days=2, hours=10, minutes=30),
                 end=OCT + timedelta(days=19, hours=5, minutes=15), quantity=2)  # fmt: skip
    held_request(team=demo_org.other_team, start=OCT + timedelta(days=9, hours=13, minutes=7), end=None)
    held_request(team=demo_org.team, start=OCT + timedelta(days=12, hours=1), end=None, gpu_model="T4",
                 strategy="time-slicing", time_slice_replicas=4, tier="tier3_development")  # fmt: skip
    ImportedUsage.objects.create(
        team=demo_org.other_team, request_label="legacy-job", gpu_model="H100-80GB", strategy="dedicated",
        resource_name="nvidia.com/gpu", quantity=3, start=OCT + timedelta(days=4, hours=6),
        end=OCT + timedelta(days=6, hours=20, minutes=20), imported_at=OCT,
    )  # fmt: skip
    return demo_org


def _live(now: datetime) -> tuple[dict[tuple[str, str], tuple[D, D, D]], D]:
    chargeback = month_chargeback(month=OCTOBER, now=now, share_idle=False)
    lines: dict[tuple[str, str], tuple[D, D, D]] = {}
    for slug, charge in chargeback.teams.items():
        for line in charge.lines:
            amount, dedicated, hours = lines.get((slug, line.allocation.key), (D(0), D(0), D(0)))
            lines[(slug, line.allocation.key)] = (
                amount + line.amount,
                dedicated + line.dedicated_amount,
                hours + line.allocated_gpu_hours,
            )
    return lines, chargeback.total_idle_cost


def _assert_same_as_live(now: datetime, allocations: int = 4) -> None:
    live, live_idle = _live(now)
    charges = month_charges(month=OCTOBER, now=now)
    read = {key: (row["amount"], row["dedicated"], row["gpu_hours"]) for key, row in charges.rows.items()}
    assert set(read) == set(live) and len(live) == allocations
    for key, figures in live.items():
        assert [to_cents(v) for v in read[key]] == [to_cents(v) for v in figures], key
        assert all(abs(a - b) < D("1e-9") for a, b in zip(read[key], figures, strict=True)), key
    assert to_cents(charges.idle_cost) == to_cents(live_idle) and live_idle > 0


def test_stored_days_and_the_live_rest_give_the_live_chargeback(month) -> None:
    _assert_same_as_live(NOW)  # nothing stored: every day live
    result = day_charges_catch_up(now=NOW)
    # August 1 to October 24: the month in progress and the two before it, each day once it is over.
    assert result == {"stored": 31 + 30 + 24, "raced": 0}
    assert month_charges(month=OCTOBER, now=NOW).stored_days == 24
    assert DayCharge.objects.filter(day=date(2026, 10, 5), imported__isnull=False).count() == 1
    _assert_same_as_live(NOW)
    _assert_same_as_live(datetime(2026, 10, 31, 23, tzinfo=UTC))  # days stored, then the rest of the month live
    assert day_charges_catch_up(now=NOW) == {"stored": 0, "raced": 0}  # idempotent
    # A month later August is no longer kept: its rows go, and the days since are stored.
    assert day_charges_catch_up(now=NOW + timedelta(days=31))["stored"] == 31
    assert not DayCharge.objects.filter(day__lt=date(2026, 9, 1)).exists()
    assert not PricedDay.objects.filter(day__lt=date(2026, 9, 1)).exists()


def test_a_change_forgets_the_days_it_touches_and_they_are_priced_again(month) -> None:
    day_charges_catch_up(now=NOW)
    ImportedUsage.objects.create(
        team=month.team, request_label="late-import", gpu_model="H100-80GB", strategy="dedicated",
        resource_name="nvidia.com/gpu", quantity=1, start=OCT + timedelta(days=20), end=OCT + timedelta(days=21),
        imported_at=NOW,
    )  # fmt: skip
    assert not PricedDay.objects.filter(day__gte=date(2026, 10, 21)).exists()
    assert PricedDay.objects.filter(day=date(2026, 10, 20), complete=True).exists()
    live, _ = _live(NOW)
    assert len(live) == 5 and len(month_charges(month=OCTOBER, now=NOW).rows) == 5
    assert day_charges_catch_up(now=NOW) == {"stored": 4, "raced": 0}

    request = month.team.gpu_requests.order_by("pk").first()
    request.status_detail = "observed"
    request.save(update_fields=["status_detail", "updated_at"])  # not what it is charged for
    assert PricedDay.objects.filter(day__gte=OCTOBER).count() == 24
    request.name = "renamed"
    request.save()
    assert not PricedDay.objects.filter(day__gte=request.activated_at.date()).exists()
    day_charges_catch_up(now=NOW)
    assert {row["name"] for row in month_charges(month=OCTOBER, now=NOW).rows.values()} >= {"renamed"}

    load_book({"H100-80GB": "9.00", "T4": "0.60"}, effective_from="2026-10-20")  # a price change reprices all
    assert not PricedDay.objects.exists()
    day_charges_catch_up(now=NOW)
    _assert_same_as_live(NOW, allocations=5)


def test_a_day_stored_again_replaces_its_rows(month) -> None:
    day = date(2026, 10, 13)
    first = day_charges_store(day=day)
    assert first == 3 and day_charges_store(day=day) == first
    assert DayCharge.objects.filter(day=day).count() == first


def test_the_task_is_scheduled_and_idempotent(month) -> None:
    assert app.conf.beat_schedule["price-past-days"]["task"] == price_past_days.name
    stored = price_past_days()
    assert stored["stored"] > 0 and price_past_days() == {"stored": 0, "raced": 0}


def test_the_dashboards_show_the_same_month_from_stored_days(october, client, django_assert_max_num_queries) -> None:  # noqa: F811
    client.force_login(october.platform_admin)
    charts = ("cost-over-time", "strategy-mix", "cost-per-request", "allocation-vs-utilization")
    params = {"month": "2026-10", "group": "team", "idle": "1"}
    live = {chart: _csv(client, chart, **params) for chart in charts}
    day_charges_catch_up()
    assert PricedDay.objects.filter(day__gte=OCTOBER, day__lt=date(2026, 11, 1), complete=True).count() == 31
    assert {chart: _csv(client, chart, **params) for chart in charts} == live
    assert {"month": "2026-10", "team": "vision", "cost": "40.00"} in live["cost-over-time"]
    with django_assert_max_num_queries(8):  # whole days: sums over the stored rows, none of the requests read
        charges = month_charges(month=OCTOBER, now=datetime(2026, 11, 1, tzinfo=UTC))
    assert charges.stored_days == 31 and len(charges.rows) == 2
