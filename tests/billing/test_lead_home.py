"""A lead's home: the team's spend this month by member and by request, what waits for an approver from the team,
and the running allocations that idle most; a member's home shows none of it."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.test import Client
from django.utils import timezone

from allocations.models import QuotaIncreaseRequest, RequestStatus
from billing.models import UtilizationRollup
from tests.billing.cost_helpers import load_book
from tests.factories import DemoOrg, GpuRequestFactory, QuotaFactory

pytestmark = pytest.mark.django_db


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


def test_the_teams_month_charge_is_kept_for_the_hour_until_what_it_priced_changes(
    demo_org: DemoOrg, django_assert_num_queries
) -> None:
    from billing.costs.chargeback import team_month_charge

    load_book({"H100-80GB": "2.00"}, effective_from="2026-01-01")
    running(demo_org, requester=demo_org.member, name="held")
    now = timezone.now()
    first = team_month_charge(team=demo_org.team, now=now)
    assert first.lines
    with django_assert_num_queries(0):
        assert team_month_charge(team=demo_org.team, now=now + timedelta(seconds=30)) == first
    running(demo_org, requester=demo_org.team_lead, name="another")  # what the team holds changed: priced again
    assert len(team_month_charge(team=demo_org.team, now=now).lines) == len(first.lines) + 1
