"""A lead's home: the team's spend this month by member and by request, what waits for an approver from the team,
and the running allocations that idle most; a member's home shows none of it."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from decimal import Decimal

import pytest
import time_machine
from django.test import Client
from django.utils import timezone

from allocations.models import QuotaIncreaseRequest, RequestStatus
from billing.models import ImportedUsage, TeamBudget, UtilizationRollup
from tests.billing.cost_helpers import held_request, load_book
from tests.factories import DemoOrg, GpuRequestFactory, QuotaFactory

pytestmark = pytest.mark.django_db
NOV = datetime(2026, 11, 2, tzinfo=UTC)


def client_for(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def since() -> timezone.datetime:
    now = timezone.now()
    month_start = now.replace(day=1, hour=0, minute=0, second=0, microsecond=0)
    return max(month_start, now - timedelta(hours=4)).replace(minute=0, second=0, microsecond=0)


def running(demo_org: DemoOrg, *, requester, name: str, units: int = 1):
    return GpuRequestFactory(
        team=demo_org.team,
        requester=requester,
        name=name,
        status=RequestStatus.ACTIVE,
        approved_at=since(),
        activated_at=since(),
        node_pool=demo_org.pool,
        cluster=demo_org.cluster,
        resource_units=units,
    )


def rollup(demo_org: DemoOrg, request, utilization: float) -> None:
    UtilizationRollup.objects.create(
        cluster=demo_org.cluster,
        hour=since(),
        gpu_uuid=f"GPU-{request.pk}",
        namespace=demo_org.team.namespace,
        pod=f"gpr-{request.pk}",
        team=demo_org.team,
        request=request,
        gpu_model_name="NVIDIA H100 80GB HBM3",
        sample_count=60,
        avg_utilization_pct=utilization,
        pulled_at=timezone.now(),
    )


@pytest.fixture
def lead_team(demo_org: DemoOrg):
    load_book({"H100-80GB": "2.00"})
    busy = running(demo_org, requester=demo_org.member, name="train-busy")
    notebook = running(demo_org, requester=demo_org.team_lead, name="notebook-idle")
    rollup(demo_org, busy, 85.0)
    rollup(demo_org, notebook, 3.0)
    pending = GpuRequestFactory(
        team=demo_org.team, requester=demo_org.member, name="waits", submitted_at=timezone.now()
    )
    quota = QuotaFactory(team=demo_org.team, node_pool=demo_org.pool, resource_name="nvidia.com/gpu", limit=2)
    QuotaIncreaseRequest.objects.create(
        team=demo_org.team, quota=quota, limit_when_asked=2, requested_limit=4, reason="r", requested_by=demo_org.member
    )
    return {"busy": busy, "notebook": notebook, "pending": pending}


def test_a_lead_sees_the_teams_spend_waiting_items_and_idle_holdings(demo_org: DemoOrg, lead_team) -> None:
    response = client_for(demo_org.team_lead).get("/")

    assert response.status_code == 200
    (lead,) = response.context["lead_rows"]
    assert lead["team"] == demo_org.team
    assert {m["username"] for m in lead["by_member"]} == {"member", "lead"}
    assert {r["name"] for r in lead["by_request"]} == {"train-busy", "notebook-idle"}
    assert lead["total"] == sum(m["amount"] for m in lead["by_member"]) > 0
    assert [r.name for r in lead["waiting"]["requests"]] == ["waits"]
    assert [q.requested_limit for q in lead["waiting"]["quotas"]] == [4]
    assert [i["name"] for i in lead["idle"]] == ["notebook-idle"]  # the busy one is not idle
    assert lead["idle"][0]["idle_amount"] > 0
    html = response.content.decode()
    assert 'id="lead-home-vision"' in html and "Idling most" in html
    assert f'href="/requests/{lead_team["pending"].pk}/"' in html


def test_a_members_home_has_no_lead_panel(demo_org: DemoOrg, lead_team) -> None:
    response = client_for(demo_org.member).get("/")

    assert response.context["lead_rows"] == []
    assert 'id="lead-home-vision"' not in response.content.decode()


def test_the_teams_month_charge_is_priced_to_the_hour_and_kept_for_it_until_what_it_priced_changes(
    demo_org: DemoOrg, django_assert_num_queries
) -> None:
    from billing.costs.chargeback import month_chargeback, team_month_charge

    load_book({"H100-80GB": "2.00"}, effective_from="2026-10-01")
    held_request(team=demo_org.team, start=NOV, end=None)
    first = team_month_charge(team=demo_org.team, now=NOV + timedelta(hours=5, minutes=10))
    assert first.amount == Decimal("10.00")  # 5 h at 2.00: to 05:00, not to 05:10
    with django_assert_num_queries(0):  # later in the hour: the kept answer, still exact
        later = team_month_charge(team=demo_org.team, now=NOV + timedelta(hours=5, minutes=50))
    fresh = month_chargeback(month=NOV.date(), now=NOV + timedelta(hours=5), for_teams=[demo_org.team])
    assert later == first and later.amount == fresh.teams["vision"].amount
    assert team_month_charge(team=demo_org.team, now=NOV + timedelta(hours=6)).amount == Decimal("12.00")
    held_request(team=demo_org.team, start=NOV, end=None)  # what the team holds changed: priced again
    again = team_month_charge(team=demo_org.team, now=NOV + timedelta(hours=5, minutes=50))
    assert len(again.lines) == len(first.lines) + 1


def test_the_spend_by_member_adds_up_to_the_budget_panel_while_requests_run(demo_org: DemoOrg) -> None:
    load_book({"H100-80GB": "2.3457"}, effective_from="2026-10-01", tier1_realtime="1.5")
    for requester, tier in ((demo_org.member, "tier2_batch"), (demo_org.team_lead, "tier1_realtime")):
        request = held_request(team=demo_org.team, start=NOV + timedelta(minutes=7), end=None, tier=tier)
        request.requester = requester
        request.save()
    TeamBudget.objects.create(team=demo_org.team, monthly_amount=Decimal("5000"))
    client = client_for(demo_org.team_lead)

    with time_machine.travel(NOV + timedelta(hours=5, minutes=10), tick=False):
        client.get("/")  # the hour's first view keeps the spend by member
    with time_machine.travel(NOV + timedelta(hours=5, minutes=50), tick=False):  # both requests ran 40 min more
        response = client.get("/")

    (lead,) = response.context["lead_rows"]
    (row,) = [row for row in response.context["team_rows"] if row["team"] == demo_org.team]
    by_member = sum(member["amount"] for member in lead["by_member"])
    assert by_member == lead["total"] == row["budget"].spent > 0
    html = response.content.decode()
    assert html.count(f"{row['budget'].spent:,} USD") >= 2  # the panel and the members table's total
    assert "to 05:00 UTC" in html


def test_imported_usage_has_a_row_of_its_own_so_the_members_add_up(demo_org: DemoOrg) -> None:
    load_book({"H100-80GB": "2.00"}, effective_from="2026-10-01")
    held_request(team=demo_org.team, start=NOV, end=None)
    ImportedUsage.objects.create(
        team=demo_org.team,
        request_label="before the portal",
        gpu_model="H100-80GB",
        strategy="dedicated",
        resource_name="nvidia.com/gpu",
        quantity=1,
        start=NOV,
        end=NOV + timedelta(hours=3),
        imported_at=NOV,
    )

    with time_machine.travel(NOV + timedelta(hours=5, minutes=30), tick=False):
        response = client_for(demo_org.team_lead).get("/")

    (lead,) = response.context["lead_rows"]
    (row,) = [row for row in response.context["team_rows"] if row["team"] == demo_org.team]
    assert lead["not_requested"] == [{"label": "Imported usage", "amount": Decimal("6.00")}]
    assert lead["total"] == Decimal("16.00") == row["budget"].spent
    assert "Imported usage" in response.content.decode()


def test_the_reports_estimate_and_the_budgets_list_read_the_same_hour(demo_org: DemoOrg) -> None:
    load_book({"H100-80GB": "2.3457"}, effective_from="2026-10-01")
    held_request(team=demo_org.team, start=NOV + timedelta(minutes=7), end=None)
    TeamBudget.objects.create(team=demo_org.team, monthly_amount=Decimal("5000"))
    client = client_for(demo_org.team_lead)

    with time_machine.travel(NOV + timedelta(hours=5, minutes=50), tick=False):
        budgets = client.get("/billing/budgets/")
        reports = client.get("/billing/reports/")
        report = client.get("/billing/reports/vision/2026-11/")

    (row,) = budgets.context["rows"]
    (estimate,) = reports.context["estimates"]
    assert (
        Decimal(estimate["total"]["amount"]) == row.state.spent == Decimal(report.context["report"]["total"]["amount"])
    )
    assert row.state.spent == Decimal("11.45")  # 4 h 53 min at 2.3457, to 05:00
    assert "to 05:00 UTC" in reports.content.decode() and "to 05:00 UTC" in report.content.decode()
