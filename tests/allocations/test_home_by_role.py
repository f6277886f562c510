"""The home page per role: approvers and admins see pending approvals and fleet capacity, members their headroom."""

from __future__ import annotations

from datetime import timedelta
from decimal import Decimal

import pytest
from django.urls import reverse
from django.utils import timezone

from allocations.models import RequestStatus
from tests.factories import DemoOrg, GpuRequestFactory, TeamBudgetFactory

pytestmark = pytest.mark.django_db


def test_an_approver_without_a_team_sees_pending_approvals_and_fleet_capacity(client, demo_org: DemoOrg) -> None:
    now = timezone.now()
    GpuRequestFactory(team=demo_org.team, name="newer-ask", submitted_at=now - timedelta(hours=1))
    GpuRequestFactory(team=demo_org.other_team, name="oldest-ask", submitted_at=now - timedelta(days=2))
    GpuRequestFactory(team=demo_org.team, name="running", status=RequestStatus.ACTIVE, node_pool=demo_org.pool)
    client.force_login(demo_org.approver)

    body = client.get(reverse("home")).content.decode()

    assert "You are not in a team yet" not in body
    approvals = body.partition('id="home-approvals"')[2].partition("</article>")[0]
    assert '<p class="kpi">2</p>' in approvals
    assert "oldest-ask" in approvals and "newer-ask" not in approvals
    fleet = body.partition('id="home-fleet"')[2].partition("</article>")[0]
    assert f"{demo_org.cluster.name}/{demo_org.pool.name}" in fleet
    assert "1 / " in fleet  # the active request's unit is allocated on the pool


def test_the_fleet_card_lists_every_pool_by_cluster_then_pool_name(client, demo_org: DemoOrg) -> None:
    from tests.factories import ClusterFactory, NodePoolFactory

    alpha = ClusterFactory(name="alpha")
    NodePoolFactory(cluster=alpha, name="zeta")
    NodePoolFactory(cluster=alpha, name="beta")
    NodePoolFactory(cluster=demo_org.cluster, name="a100")
    client.force_login(demo_org.approver)

    fleet = client.get(reverse("home")).content.decode().partition('id="home-fleet"')[2].partition("</article>")[0]

    names = ["alpha/beta", "alpha/zeta", "demo/a100", f"demo/{demo_org.pool.name}"]
    positions = [fleet.find(f">{name}</a>") for name in names]
    assert -1 not in positions and positions == sorted(positions)
    approvals = client.get(reverse("home")).content.decode().partition('id="home-approvals"')[2]
    assert '<p class="kpi">0</p>' in approvals.partition("</article>")[0]  # none pending: no row, a count of 0


def test_a_member_sees_no_platform_panel_but_their_teams_free_quota(client, demo_org: DemoOrg) -> None:
    GpuRequestFactory(team=demo_org.team, status=RequestStatus.ACTIVE, resource_units=2, node_pool=demo_org.pool)
    client.force_login(demo_org.member)

    body = client.get(reverse("home")).content.decode()

    assert 'id="home-approvals"' not in body
    assert 'id="home-fleet"' not in body
    assert '<td class="num headroom-free">6</td>' in body  # vision's quota of 8, 2 held


def test_a_lead_sees_the_teams_spend_against_its_money_budget_with_the_month_end_projection(
    client, demo_org: DemoOrg
) -> None:
    TeamBudgetFactory(team=demo_org.team, monthly_amount=Decimal("0.01"), thresholds_pct=[50, 100])
    GpuRequestFactory(
        team=demo_org.team,
        status=RequestStatus.ACTIVE,
        node_pool=demo_org.pool,
        cluster=demo_org.cluster,
        approved_at=timezone.now() - timedelta(hours=3),
        activated_at=timezone.now() - timedelta(hours=3),
    )
    client.force_login(demo_org.team_lead)

    body = client.get(reverse("home")).content.decode()

    budget = body.partition(f'id="home-budget-{demo_org.team.slug}"')[2].partition("</div>\n    </div>")[0]
    assert 'data-level="over"' in budget
    assert "of a 0.01 USD budget" in budget
    assert "by month end" in budget and "Budget spent." in budget
    assert 'id="home-month-costs"' not in body  # the organisation's spend is for approvers, admins and Finance


def test_an_approver_sees_this_months_spend_and_idle_cost(client, demo_org: DemoOrg) -> None:
    client.force_login(demo_org.approver)

    body = client.get(reverse("home")).content.decode()

    costs = body.partition('id="home-month-costs"')[2].partition("</article>")[0]
    assert "Idle capacity" in costs
    # Nothing is allocated: the whole pool (8 dedicated H100s) is idle, priced at the catalog's rate, so not zero.
    idle = costs.partition('id="home-idle-cost">')[2].partition("</a>")[0].rpartition(">")[2].partition(" USD")[0]
    assert 'href="/billing/idle/?month=' in costs  # the amount opens the pools that left it unused
    assert idle != "0.00" and float(idle.replace(",", "")) > 0


def test_an_approver_sees_fleet_alerts_that_need_action_and_not_the_acknowledged(client, demo_org: DemoOrg) -> None:
    from billing.models import AlertAcknowledgement
    from tests.billing.rollups import hours_back, rollup

    hour = hours_back(timezone.now(), 2)[0]
    rollup(cluster=demo_org.cluster, hour=hour, gpu_uuid="GPU-HOT", max_temperature_c=90.0, team=demo_org.team)
    rollup(cluster=demo_org.cluster, hour=hour, gpu_uuid="GPU-SEEN", max_temperature_c=90.0, team=demo_org.team)
    AlertAcknowledgement.objects.create(
        team=None, cluster=demo_org.cluster, device="GPU-SEEN", kind="temperature", acknowledged_through=timezone.now()
    )
    client.force_login(demo_org.approver)

    alerts = client.get(reverse("home")).content.decode().partition('id="home-alerts"')[2].partition("</article>")[0]

    assert '<p class="kpi">1</p>' in alerts
    assert "GPU-HOT" in alerts and "GPU-SEEN" not in alerts


@pytest.mark.parametrize("write", ["save", "bulk_then_refresh"])
def test_a_fleet_alert_written_after_the_home_was_shown_is_on_the_next_view(client, demo_org: DemoOrg, write) -> None:
    # The fleet's alerts are kept per process (billing.utilization.selectors.fleet_alerts_between): a rollup saved
    # one by one, and rollups written in bulk by a writer that refreshes the usage totals (the ingest, the demo),
    # must both be read on the next view.
    from billing.metering.aggregates import refresh_usage_aggregates
    from billing.models import UtilizationRollup
    from tests.billing.rollups import hours_back, rollup

    hour = hours_back(timezone.now(), 2)[0]
    rollup(cluster=demo_org.cluster, hour=hour, gpu_uuid="GPU-COOL", team=demo_org.team)
    client.force_login(demo_org.approver)

    def alerts() -> str:
        return client.get(reverse("home")).content.decode().partition('id="home-alerts"')[2].partition("</article>")[0]

    assert "GPU-HOT" not in alerts()
    hot = {
        "cluster": demo_org.cluster,
        "hour": hour,
        "gpu_uuid": "GPU-HOT",
        "max_temperature_c": 90.0,
        "pulled_at": hour,
    }
    if write == "save":
        UtilizationRollup.objects.create(**hot, sample_count=60, avg_utilization_pct=50.0, is_complete=True)
    else:
        UtilizationRollup.objects.bulk_create(
            [UtilizationRollup(**hot, sample_count=60, avg_utilization_pct=50.0, is_complete=True)]
        )
        refresh_usage_aggregates(cluster_id=demo_org.cluster.pk, start=hour, end=hour + timedelta(hours=1))
    assert "GPU-HOT" in alerts()


def test_a_member_has_no_fleet_alerts_panel(client, demo_org: DemoOrg) -> None:
    client.force_login(demo_org.member)
    assert 'id="home-alerts"' not in client.get(reverse("home")).content.decode()


def test_a_member_sees_their_own_requests_apart_from_their_teams_others(client, demo_org: DemoOrg) -> None:
    GpuRequestFactory(team=demo_org.team, requester=demo_org.member, name="my-notebook")
    GpuRequestFactory(team=demo_org.team, requester=demo_org.team_lead, name="leads-training")
    GpuRequestFactory(team=demo_org.other_team, requester=demo_org.outsider, name="not-my-team")
    client.force_login(demo_org.member)

    body = client.get(reverse("home")).content.decode()

    mine = body.partition('id="home-my-requests"')[2].partition("</section>")[0]
    others = body.partition('id="home-team-requests"')[2].partition("</section>")[0]
    assert "my-notebook" in mine and "leads-training" not in mine
    assert "leads-training" in others and "my-notebook" not in others
    assert "not-my-team" not in body


def test_finance_without_a_team_lands_on_the_months_spend(client, demo_org: DemoOrg) -> None:
    from tests.billing.cost_helpers import finance_user

    client.force_login(finance_user())

    body = client.get(reverse("home")).content.decode()

    assert 'id="home-month-costs"' in body
    assert "You are not in a team yet" not in body
    assert 'id="home-approvals"' not in body and 'id="home-fleet"' not in body  # approvals and pools are not theirs
