"""Every team's money budget kept per process as reference data (``month_spend.budgets_by_team``): read
once per version, and a budget saved, changed or deleted reads again at once, through the service as in the admin."""

from __future__ import annotations

from decimal import Decimal

import pytest

from billing.costs.budget_services import team_budget_update
from billing.costs.month_spend import KeptBudget, budgets_by_team, team_budget_states
from tests.factories import DemoOrg, TeamBudgetFactory, TeamFactory

pytestmark = pytest.mark.django_db


def test_budgets_are_read_once_and_again_after_any_change(django_assert_num_queries):
    vision, nlp = TeamFactory(), TeamFactory()
    TeamBudgetFactory(team=vision, monthly_amount=Decimal("1000.00"), thresholds_pct=[50, 100])

    assert budgets_by_team() == {vision.pk: KeptBudget(Decimal("1000.00"), (50, 100))}
    with django_assert_num_queries(0):
        assert budgets_by_team()[vision.pk].monthly_amount == Decimal("1000.00")

    budget = TeamBudgetFactory(team=nlp, monthly_amount=Decimal("250.00"))  # a new one
    assert set(budgets_by_team()) == {vision.pk, nlp.pk}
    budget.monthly_amount = Decimal("300.00")  # a change
    budget.save()
    assert budgets_by_team()[nlp.pk].monthly_amount == Decimal("300.00")
    budget.delete()
    assert set(budgets_by_team()) == {vision.pk}
    vision.delete()  # the team, and its budget with it
    assert budgets_by_team() == {}


def test_a_budget_set_through_the_service_shows_in_the_teams_state_at_once(demo_org: DemoOrg):
    team = demo_org.team
    assert team_budget_states(teams=[team])[team.pk].budget is None

    team_budget_update(
        acting_user=demo_org.platform_admin,
        team=team,
        thresholds_pct=[80, 100],
        chat_webhook_url="",
        monthly_amount=Decimal("5000.00"),
    )
    state = team_budget_states(teams=[team])[team.pk]
    assert state.budget == Decimal("5000.00") and state.thresholds_pct == (80, 100)
