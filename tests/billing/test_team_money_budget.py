"""A team's budget in money: spend this month against it, the run-rate projection, and where pages show it."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from decimal import Decimal

import pytest
from django.core.exceptions import ValidationError

from billing.costs.month_spend import team_budget_states, team_month_to_date
from gpucore.budget import BudgetLevel
from tests.billing.test_team_month_to_date import active_since
from tests.factories import TeamBudgetFactory

pytestmark = pytest.mark.django_db

NOW = datetime(2026, 11, 11, 0, 0, tzinfo=UTC)  # 240 of November's 720 hours have passed


def test_the_month_so_far_is_measured_against_the_money_budget_and_projected_at_its_pace(demo_org) -> None:
    TeamBudgetFactory(team=demo_org.team, monthly_amount=Decimal("1000.00"))
    active_since(demo_org, NOW - timedelta(days=5), units=2)

    m = team_month_to_date(team=demo_org.team, now=NOW)
    money = m["money"]

    assert m["amount"] > 0
    assert money.spent == m["amount"]  # the same chargeback as the GPU-hours beside it
    assert money.budget == Decimal("1000.00")
    # Held for the last 120 hours at an even rate: the last day cost a fifth of it, and 480 hours are left, so
    # the month ends at what was spent plus 20 more days of that: five times the spend so far.
    assert abs(money.projected - m["amount"] * 5) < Decimal("0.05")
    assert money.used_pct == m["amount"] / 10


def test_a_team_without_a_budget_has_no_level_and_a_tiny_budget_is_over(demo_org) -> None:
    TeamBudgetFactory(team=demo_org.team, monthly_amount=Decimal("0.01"), thresholds_pct=[50, 100])
    active_since(demo_org, NOW - timedelta(days=1), units=1)

    states = team_budget_states(teams=[demo_org.team, demo_org.other_team], now=NOW)

    assert states[demo_org.team.pk].level == BudgetLevel.OVER
    assert states[demo_org.team.pk].crossed_pct == (50, 100)
    assert states[demo_org.other_team.pk].budget is None
    assert states[demo_org.other_team.pk].level == BudgetLevel.NONE


@pytest.mark.parametrize("thresholds", [[], [0], [50, 50], ["80"], [True], 80])
def test_thresholds_must_be_distinct_whole_percentages(demo_org, thresholds) -> None:
    budget = TeamBudgetFactory.build(team=demo_org.team, thresholds_pct=thresholds)
    with pytest.raises(ValidationError) as error:
        budget.full_clean()
    assert "thresholds_pct" in error.value.message_dict
