"""The team page's month so far: allocated GPU-hours (whole-GPU equivalents) and cost against the monthly budget."""

from datetime import UTC, datetime, timedelta
from decimal import Decimal

import pytest
from django.urls import reverse

from allocations.models import GpuRequest, RequestStatus
from billing.costs.month_spend import team_month_to_date
from tests.factories import GpuRequestFactory

pytestmark = pytest.mark.django_db

NOW = datetime(2026, 11, 11, 0, 0, tzinfo=UTC)


def active_since(org, start: datetime, units: int) -> GpuRequest:
    request = GpuRequestFactory(
        team=org.team,
        requester=org.member,
        status=RequestStatus.ACTIVE,
        cluster=org.cluster,
        node_pool=org.pool,
        resource_units=units,
        replicas=units,
    )
    request.spec = {**request.spec, "replicas": units}
    request.save()
    GpuRequest.objects.filter(pk=request.pk).update(activated_at=start, approved_at=start)
    return request


def test_hours_this_month_count_against_the_budget(demo_org) -> None:
    demo_org.team.monthly_gpu_hour_budget = Decimal("400")
    demo_org.team.save()
    # Two dedicated H100s since 5 days before NOW, but the month started 10 days before NOW: 2 x 120 h.
    active_since(demo_org, NOW - timedelta(days=5), units=2)

    m = team_month_to_date(team=demo_org.team, now=NOW)

    assert m["month"].isoformat() == "2026-11-01"
    assert m["gpu_hours"] == Decimal("240")
    assert m["budget_used_pct"] == Decimal("60.0")
    assert not m["over_budget"]
    assert m["amount"] > 0


def test_over_budget_is_flagged(demo_org) -> None:
    demo_org.team.monthly_gpu_hour_budget = Decimal("100")
    demo_org.team.save()
    active_since(demo_org, NOW - timedelta(days=20), units=1)  # clipped to the month: 240 h
    m = team_month_to_date(team=demo_org.team, now=NOW)
    assert m["gpu_hours"] == Decimal("240") and m["over_budget"]


def test_team_page_shows_the_month_so_far(client, demo_org) -> None:
    client.force_login(demo_org.member)
    response = client.get(reverse("allocations:team-detail", args=[demo_org.team.slug]))
    assert response.status_code == 200
    assert b'id="month-to-date"' in response.content
    assert b"GPU-hours allocated in" in response.content


@pytest.mark.parametrize("share_idle", [False, True])
def test_one_teams_chargeback_is_its_part_of_the_whole_organisations(demo_org, share_idle) -> None:
    # Pages asking for one team's month read only its requests unless idle cost is shared, when its share
    # depends on every team's allocations: either way the team's figures are those of the whole chargeback.
    from billing.costs.chargeback import month_chargeback
    from tests.billing.cost_helpers import load_book

    load_book({"H100-80GB": "2.00"}, effective_from="2026-01-01")
    active_since(demo_org, NOW - timedelta(days=5), units=2)
    other = active_since(demo_org, NOW - timedelta(days=3), units=1)
    GpuRequest.objects.filter(pk=other.pk).update(team=demo_org.other_team)
    month = NOW.date().replace(day=1)

    whole = month_chargeback(month=month, now=NOW, share_idle=share_idle)
    one = month_chargeback(month=month, now=NOW, share_idle=share_idle, for_teams=[demo_org.team])

    assert whole.teams["nlp"].total > 0  # the other team did hold GPUs
    assert one.teams["vision"].total == whole.teams["vision"].total > 0
    assert one.teams["vision"].idle_share == whole.teams["vision"].idle_share
    if not share_idle:  # the portal's default, which the team page's month so far follows
        amount = team_month_to_date(team=demo_org.team, now=NOW)["amount"]
        assert amount == whole.teams["vision"].total.quantize(Decimal("0.01"))


def test_several_teams_read_at_once_answer_as_one_each(demo_org) -> None:
    from billing.costs.month_spend import teams_month_to_date
    from billing.models import BudgetNotice
    from tests.factories import TeamBudgetFactory

    demo_org.team.monthly_gpu_hour_budget = Decimal("100")
    demo_org.team.save()
    active_since(demo_org, NOW - timedelta(days=5), units=2)
    TeamBudgetFactory(team=demo_org.other_team, monthly_amount=Decimal("50.00"))
    month = NOW.date().replace(day=1)
    for threshold in (80, 50):
        BudgetNotice.objects.create(
            team=demo_org.team,
            month=month,
            threshold_pct=threshold,
            spent=1,
            budget=2,
            projected=3,
            currency="USD",
            crossed_at=NOW,
        )
    teams = [demo_org.team, demo_org.other_team]

    together = teams_month_to_date(teams=teams, now=NOW)

    assert together == {team.pk: team_month_to_date(team=team, now=NOW) for team in teams}
    assert [n.threshold_pct for n in together[demo_org.team.pk]["notices"]] == [50, 80]
    assert together[demo_org.team.pk]["gpu_hours"] == Decimal("240")
    assert together[demo_org.other_team.pk]["money"].budget == Decimal("50.00")
    without = teams_month_to_date(teams=teams, now=NOW, notices=False)
    assert without[demo_org.team.pk]["notices"] == [] and without[demo_org.team.pk]["amount"] > 0
