"""The month so far is read from curves each process keeps (billing.costs.month_to_date), and stays right: after each
kind of change (a request activated or released, a price book, an SLA multiplier, imported usage) and as time passes,
it equals a chargeback computed afresh from the database."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from decimal import Decimal

import pytest

from allocations.lifecycle import gpu_request_transition
from allocations.models import RequestStatus, SlaTier
from billing.costs.chargeback import month_chargeback
from billing.costs.month_spend import home_costs, team_month_to_date
from billing.costs.services import usage_import
from gpucore.pricing import to_cents
from tests.billing.cost_helpers import load_book
from tests.billing.test_team_month_to_date import active_since
from tests.factories import GpuRequestFactory

pytestmark = pytest.mark.django_db

NOW = datetime(2026, 11, 11, 0, 0, tzinfo=UTC)
MONTH = NOW.date().replace(day=1)
IMPORT_HEADER = (
    "team,request,gpu_model,strategy,resource_name,quantity,time_slice_replicas,start,end,avg_utilization_pct\n"
)


def fresh(team, now=NOW):
    """The team's chargeback so far, computed from the database now (no curves)."""
    return month_chargeback(month=MONTH, now=now, for_teams=[team]).teams.get(team.slug)


def read_matches_fresh(team, now=NOW) -> dict:
    month = team_month_to_date(team=team, now=now)
    charge = fresh(team, now)
    assert month["gpu_hours"] == (charge.allocated_gpu_hours if charge else 0)
    assert month["amount"] == to_cents(charge.total if charge else Decimal(0))
    return month


@pytest.fixture
def priced(demo_org):
    load_book({"H100-80GB": "2.00"}, effective_from="2026-01-01")
    return demo_org


def test_a_second_read_is_a_lookup_and_time_passing_needs_no_rebuild(priced, django_assert_max_num_queries) -> None:
    active_since(priced, NOW - timedelta(days=5), units=2)
    first = read_matches_fresh(priced.team)

    # The team's budget and notices only: no request, event, price or pool is read again.
    with django_assert_max_num_queries(2):
        later = team_month_to_date(team=priced.team, now=NOW + timedelta(days=1, seconds=7))

    assert first["gpu_hours"] == Decimal("240")
    assert later["gpu_hours"] > first["gpu_hours"]
    read_matches_fresh(priced.team, NOW + timedelta(days=1, seconds=7))


def test_a_request_activated_after_a_read_counts_in_the_next(priced) -> None:
    active_since(priced, NOW - timedelta(days=5), units=1)
    before = read_matches_fresh(priced.team)
    request = GpuRequestFactory(
        team=priced.team,
        requester=priced.member,
        status=RequestStatus.PROVISIONING,
        cluster=priced.cluster,
        node_pool=priced.pool,
    )
    gpu_request_transition(
        request=request,
        to_status=RequestStatus.ACTIVE,
        acting_user=None,
        actor_label="test",
        updates={"activated_at": NOW - timedelta(hours=24)},
    )

    after = read_matches_fresh(priced.team)

    assert after["gpu_hours"] == before["gpu_hours"] + 24
    assert after["money"].spent > before["money"].spent


def test_a_request_released_after_a_read_stops_counting_from_its_end(priced) -> None:
    request = active_since(priced, NOW - timedelta(days=5), units=1)
    assert read_matches_fresh(priced.team)["gpu_hours"] == 120

    gpu_request_transition(
        request=request,
        to_status=RequestStatus.RELEASED,
        acting_user=None,
        actor_label="test",
        updates={"ended_at": NOW - timedelta(days=2)},
    )

    assert read_matches_fresh(priced.team)["gpu_hours"] == 72
    assert read_matches_fresh(priced.team, NOW + timedelta(days=3))["gpu_hours"] == 72


def test_a_new_price_book_and_a_new_sla_multiplier_reprice_the_month(priced) -> None:
    request = active_since(priced, NOW - timedelta(days=5), units=1)
    before = read_matches_fresh(priced.team)

    load_book({"H100-80GB": "3.00"}, effective_from="2026-11-08")
    repriced = read_matches_fresh(priced.team)
    assert repriced["amount"] > before["amount"]

    tier = SlaTier.objects.get(pk=request.sla_tier_id)
    tier.price_multiplier = tier.price_multiplier * 2
    tier.save()
    assert read_matches_fresh(priced.team)["amount"] > repriced["amount"]


def test_imported_usage_counts_once_imported(priced) -> None:
    before = read_matches_fresh(priced.team)
    usage_import(
        csv_text=IMPORT_HEADER
        + "vision,old-1,H100-80GB,dedicated,nvidia.com/gpu,2,,2026-11-02T00:00:00Z,2026-11-02T10:00:00Z,\n"
    )
    assert read_matches_fresh(priced.team)["gpu_hours"] == before["gpu_hours"] + 20


def test_another_teams_change_leaves_this_teams_curves_alone(priced, django_assert_max_num_queries) -> None:
    active_since(priced, NOW - timedelta(days=5), units=1)
    read_matches_fresh(priced.team)
    GpuRequestFactory(
        team=priced.other_team, status=RequestStatus.ACTIVE, activated_at=NOW - timedelta(days=1), node_pool=priced.pool
    )
    with django_assert_max_num_queries(2):
        team_month_to_date(team=priced.team, now=NOW)
    assert read_matches_fresh(priced.other_team)["gpu_hours"] == 24


@pytest.mark.parametrize("share_idle", [False, True])
def test_the_approvers_home_reads_the_organisations_month(priced, settings, share_idle) -> None:
    settings.BILLING_SHARE_IDLE_COST = share_idle
    active_since(priced, NOW - timedelta(days=5), units=2)
    home_costs(user=priced.approver, teams=[], now=NOW)  # built before the other team's request
    GpuRequestFactory(
        team=priced.other_team, status=RequestStatus.ACTIVE, activated_at=NOW - timedelta(days=1), node_pool=priced.pool
    )

    fleet = home_costs(user=priced.approver, teams=[priced.team, priced.other_team], now=NOW)
    whole = month_chargeback(month=MONTH, now=NOW)

    allocated = sum((charge.total for charge in whole.teams.values()), Decimal(0))
    assert fleet["month_costs"]["spent"] == to_cents(allocated)
    assert fleet["month_costs"]["idle"] == to_cents(whole.total_idle_cost)
    for team in (priced.team, priced.other_team):
        assert fleet["budgets"][team.pk].spent == to_cents(whole.teams[team.slug].total) > 0


def test_a_pages_teams_read_their_tokens_in_one_round_trip_and_each_team_rebuilds_alone(priced) -> None:
    """``teams_month_curves``: every team's tokens in one read of the shared cache (the approval queue made one per
    team), each team's curves as ``month_curves`` keeps them, and a change to one team rebuilds that team's alone."""
    from unittest import mock

    from django.core.cache import cache

    from billing.costs.chargeback import build_month_curves
    from billing.costs.month_to_date import month_curves, month_to_date_changed, teams_month_curves
    from tests.factories import TeamFactory

    teams = {team.pk: team for team in (priced.team, priced.other_team, TeamFactory())}
    built = []

    def build(team_id):
        built.append(team_id)
        return build_month_curves(month=MONTH, teams=[teams[team_id]], share_idle=False)

    first = teams_month_curves(team_ids=list(teams), month=MONTH, build=build)
    with mock.patch.object(cache, "get_many", wraps=cache.get_many) as get_many:
        assert teams_month_curves(team_ids=list(teams), month=MONTH, build=build) == first
    token_reads = [call.args[0] for call in get_many.call_args_list]
    assert len(token_reads) == 1 and len(token_reads[0]) == 1 + len(teams)  # the prices' token and each team's
    assert list(first) == list(teams) and sorted(built) == sorted(teams)
    for team_id, curves in first.items():  # the very curves month_curves keeps for the team
        assert month_curves(team_id=team_id, month=MONTH, share_idle=False, build=lambda: None) is curves

    built.clear()
    month_to_date_changed(team_ids=[priced.team.pk])
    again = teams_month_curves(team_ids=list(teams), month=MONTH, build=build)
    assert built == [priced.team.pk]
    assert all(again[team_id] is first[team_id] for team_id in teams if team_id != priced.team.pk)

    # The queue's and the home's month so far read them so: one round trip for all the page's teams.
    from billing.costs.month_spend import month_so_far

    with mock.patch.object(cache, "get_many", wraps=cache.get_many) as get_many:
        so_far = month_so_far(now=NOW, for_teams=list(teams.values()), share_idle=False)
    assert sum(any("month-held:" in key for key in call.args[0]) for call in get_many.call_args_list) == 1
    assert set(so_far.teams) == {team.slug for team in teams.values()}
