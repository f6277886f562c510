"""A stored day's charges are also kept summed per team and dashboard group (``DayChargeGroup``), and the charts that
draw sums read those: the same figures as the live chargeback, grouped any way, in a few rows per team and day."""

from __future__ import annotations

from collections import defaultdict
from datetime import date, timedelta
from decimal import Decimal as D

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from billing.costs.day_charges import day_charges_catch_up, day_charges_store
from billing.models import DayCharge, DayChargeGroup, PricedDay
from tests.billing.cost_helpers import OCT, held_request
from tests.billing.test_dashboard_controls import _csv
from tests.billing.test_day_charges import NOW, month  # noqa: F401 - the fixture

pytestmark = pytest.mark.django_db

CHARTS = ("cost-over-time", "strategy-mix", "cost-per-request", "allocation-vs-utilization")


def _sums(rows, key) -> dict[tuple, tuple[D, D, D, D]]:
    sums: dict[tuple, list[D]] = defaultdict(lambda: [D(0)] * 4)
    for row in rows:
        acc = sums[key(row)]
        for n, name in enumerate(("amount", "dedicated_amount", "base_amount", "allocated_gpu_hours")):
            acc[n] += getattr(row, name)
    return {k: tuple(v) for k, v in sums.items()}


def _charge_key(charge: DayCharge) -> tuple:
    pool = charge.request.node_pool_id if charge.request_id else None
    return (charge.day, charge.team_id, pool, charge.imported_id is not None, charge.strategy, charge.gpu_model,
            charge.sla_tier)  # fmt: skip


def _group_key(group: DayChargeGroup) -> tuple:
    return (group.day, group.team_id, group.node_pool_id, group.imported, group.strategy, group.gpu_model,
            group.sla_tier)  # fmt: skip


def test_each_stored_day_keeps_its_charges_summed_per_team_and_group(month) -> None:  # noqa: F811
    for _ in range(2):  # two requests of one group on the pool: one row a day for both
        held_request(
            team=month.team, start=OCT + timedelta(days=19), end=OCT + timedelta(days=22), node_pool=month.pool
        )
    day_charges_catch_up(now=NOW)
    charges = DayCharge.objects.select_related("request")
    groups = _sums(DayChargeGroup.objects.all(), _group_key)
    assert groups == _sums(charges, _charge_key)
    assert len(groups) < charges.count()  # one row per group and day, not per allocation
    assert DayChargeGroup.objects.filter(imported=True, node_pool__isnull=True, day=date(2026, 10, 5)).count() == 1
    assert DayChargeGroup.objects.get(day=date(2026, 10, 21), node_pool=month.pool).allocated_gpu_hours == 48

    day = date(2026, 10, 13)
    before = DayChargeGroup.objects.filter(day=day).count()
    day_charges_store(day=day)  # stored again: replaced, not doubled
    assert DayChargeGroup.objects.filter(day=day).count() == before
    assert _sums(DayChargeGroup.objects.filter(day=day), _group_key) == _sums(charges.filter(day=day), _charge_key)

    day_charges_catch_up(now=NOW.replace(month=11, day=28))  # August is no longer kept: its sums go too
    assert not DayChargeGroup.objects.filter(day__lt=date(2026, 9, 1)).exists()
    assert DayChargeGroup.objects.filter(day__gte=date(2026, 9, 1)).exists()


@pytest.mark.parametrize("group", ["team", "pool", "gpu_model", "strategy", "tier"])
def test_the_charts_read_the_same_figures_from_the_group_sums_as_live(month, client, group) -> None:  # noqa: F811
    client.force_login(month.platform_admin)
    params = {"month": "2026-10", "group": group, "idle": "1"}
    live = {chart: _csv(client, chart, **params) for chart in CHARTS}
    assert len(live["cost-over-time"]) >= 2 and len(live["cost-per-request"]) == 4
    day_charges_catch_up()  # every October day stored
    assert PricedDay.objects.filter(day__gte=date(2026, 10, 1), day__lt=date(2026, 11, 1), complete=True).count() == 31
    assert {chart: _csv(client, chart, **params) for chart in CHARTS} == live


def test_a_deleted_request_is_no_longer_in_the_sums(month, client) -> None:  # noqa: F811
    client.force_login(month.platform_admin)
    day_charges_catch_up()
    (request,) = [r for r in month.team.gpu_requests.all() if r.spec["strategy"] == "time-slicing"]
    first_day = request.activated_at.date()
    request.delete()
    assert not PricedDay.objects.filter(day__gte=first_day).exists()  # forgotten: priced live until stored again
    live = _csv(client, "strategy-mix", month="2026-10", group="team")
    assert "time-slicing" not in {row["strategy"] for row in live}
    day_charges_catch_up()
    assert not DayChargeGroup.objects.filter(strategy="time-slicing").exists()
    assert _csv(client, "strategy-mix", month="2026-10", group="team") == live


@pytest.mark.django_db(transaction=True)
def test_the_migration_sums_the_days_stored_before_it(demo_org) -> None:
    before = [("billing", "0015_stored_capacity_forecast")]
    latest = MigrationExecutor(connection).loader.graph.leaf_nodes("billing")
    MigrationExecutor(connection).migrate(before)
    try:
        requests = [held_request(team=demo_org.team, start=OCT, end=OCT + timedelta(days=1), node_pool=demo_org.pool)
                    for _ in range(3)]  # fmt: skip
        for n, request in enumerate(requests):
            DayCharge.objects.create(
                day=OCT.date(), team=demo_org.team, request=request, name=request.name, strategy="dedicated",
                gpu_model="H100-80GB", sla_tier="tier2_batch", amount=D(n + 1), dedicated_amount=D(2),
                base_amount=D(1), allocated_gpu_hours=D(24),
            )  # fmt: skip
    finally:
        MigrationExecutor(connection).migrate(latest)
    (group,) = DayChargeGroup.objects.all()
    assert (group.day, group.team, group.node_pool, group.imported) == (OCT.date(), demo_org.team, demo_org.pool, False)
    assert (group.amount, group.dedicated_amount, group.base_amount, group.allocated_gpu_hours) == (6, 6, 3, 72)
