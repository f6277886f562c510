"""Waste on the bill: a report's and the team page's held vs busy GPU-hours and idle cost per request, and the
approver's home's reclaimable GPU-hours of the month, all from stored lines and rollups."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
import time_machine
from django.urls import reverse

from billing.costs.services import monthly_reports_close
from billing.costs.waste import month_reclaimable_gpu_hours, team_month_waste
from tests.billing.cost_helpers import OCT, held_request, load_book, rollup
from tests.billing.test_cost_reports import OCTOBER

pytestmark = pytest.mark.django_db
NOV = datetime(2026, 11, 1, tzinfo=UTC)


@pytest.fixture
def closed(demo_org):
    load_book({"H100-80GB": "2.00"})
    req = held_request(team=demo_org.team, start=OCT, end=OCT + timedelta(hours=10), quantity=2)
    rollup(cluster=demo_org.cluster, hour=OCT, request=req, util=40.0)
    monthly_reports_close(month=OCTOBER, send_email=False)
    demo_org.held = req
    return demo_org


def test_the_report_page_shows_held_vs_busy_and_the_idle_cost_per_request(closed, client) -> None:
    client.force_login(closed.member)

    page = client.get(reverse("billing:report-detail", args=["vision", 2026, 10])).content.decode()

    # 2 GPUs x 10 h = 20 GPU-h at 2.00 = 40.00; 40 % busy: 8 GPU-h busy, 60 % of 40.00 idle = 24.00.
    assert 'id="report-waste"' in page
    assert f'data-request="{closed.held.pk}"' in page
    assert "20.0" in page and "8.0" in page
    assert 'id="report-waste-idle-cost"><strong>24.00 USD</strong>' in page


def test_the_team_page_shows_the_month_so_far(demo_org, client) -> None:
    load_book({"H100-80GB": "2.00"})
    req = held_request(team=demo_org.team, start=NOV, end=None, quantity=1)
    for hour in range(4):
        rollup(cluster=demo_org.cluster, hour=NOV + timedelta(hours=hour), request=req, util=25.0)
    client.force_login(demo_org.member)

    with time_machine.travel(NOV + timedelta(hours=4), tick=False):
        waste = team_month_waste(team=demo_org.team)
        page = client.get(reverse("allocations:team-detail", args=["vision"])).content.decode()

    (row,) = waste["rows"]
    assert (row.request, row.held_gpu_hours, row.busy_gpu_hours) == (req.pk, 4, 1)
    assert str(row.idle_cost.quantize(row.amount)) == "6.00"  # 4 GPU-h at 2.00, 75 % idle
    assert 'id="team-waste"' in page and "6.00 USD" in page


def test_the_approvers_home_shows_the_months_reclaimable_gpu_hours(demo_org, client) -> None:
    notebook = held_request(team=demo_org.team, start=NOV, end=None)
    notebook.workload_type = "development"
    notebook.save()
    training = held_request(team=demo_org.team, start=NOV, end=None)
    for hour in range(3):  # idle, complete: reclaimable
        rollup(cluster=demo_org.cluster, hour=NOV + timedelta(hours=hour), request=notebook, util=1.0, is_complete=True)
        rollup(cluster=demo_org.cluster, hour=NOV + timedelta(hours=hour), request=training, util=1.0, gpu="GPU-2")
    # Busy, or idle but incomplete: not reclaimable.
    rollup(cluster=demo_org.cluster, hour=NOV + timedelta(hours=3), request=notebook, util=60.0)
    rollup(cluster=demo_org.cluster, hour=NOV + timedelta(hours=4), request=notebook, util=1.0, is_complete=False)
    client.force_login(demo_org.approver)

    with time_machine.travel(NOV + timedelta(hours=6), tick=False):
        reclaimable = month_reclaimable_gpu_hours()
        home = client.get("/").content.decode()
        member_home = _home_of(client, demo_org.member)

    assert reclaimable["gpu_hours"] == 3 and reclaimable["development_gpu_hours"] == 4
    assert 'id="home-reclaimable-hours">3.0 GPU-h<' in home
    assert "home-reclaimable" not in member_home


def _home_of(client, user) -> str:
    client.force_login(user)
    return client.get("/").content.decode()
