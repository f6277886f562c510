"""Reads of every visible team's money this month, as the budgets list and Finance's home show them: spend, budget,
month-end projection and level per team, what the user may do with each budget, and the totals."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal

from django.utils import timezone

from allocations.models import Membership, Role, Team
from allocations.selectors import User
from billing.costs.budget_services import user_may_set_budget_amount
from billing.costs.month_spend import month_so_far, team_budget_states
from billing.costs.visibility import cost_teams_visible_to, user_can_view_all_costs
from gpucore.budget import BudgetLevel, MoneyBudgetState
from gpucore.month_curves import MonthSoFar

# Worst first: the order the list sorts teams by before their share of the budget spent.
_LEVEL_ORDER = {
    BudgetLevel.OVER: 0,
    BudgetLevel.WARNING: 1,
    BudgetLevel.PROJECTED_OVER: 2,
    BudgetLevel.OK: 3,
    BudgetLevel.NONE: 4,
}


@dataclass(frozen=True)
class TeamBudgetRow:
    """One team's line: its money this month and what the viewing user may do with its budget."""

    team: Team
    state: MoneyBudgetState
    may_edit: bool  # thresholds and chat at least (leads, platform admins, Finance)
    may_set_amount: bool  # the amount itself (platform admins, Finance)


@dataclass(frozen=True)
class BudgetTotals:
    """The listed teams' sums: what was budgeted, spent and projected, and how many stand at each level."""

    budgeted: Decimal
    spent: Decimal
    projected: Decimal
    over: int
    warning: int
    projected_over: int
    without_budget: int


def team_budget_rows(
    *,
    user: User,
    teams: Iterable[Team] | None = None,
    now: datetime | None = None,
    so_far: MonthSoFar | None = None,
    actions: bool = True,
) -> list[TeamBudgetRow]:
    """Each of ``teams`` (default: every team whose costs the user sees) with this month's budget state, worst first
    (over, a threshold crossed, on course to exceed, within, no budget), then by share spent and name.

    ``actions=False``: the rows' ``may_edit`` is not read (a page that offers no action)."""
    now = now or timezone.now()
    teams = list(cost_teams_visible_to(user).order_by("name") if teams is None else teams)
    if not teams:
        return []
    sees_all = user_can_view_all_costs(user)
    so_far = so_far or month_so_far(now=now, for_teams=None if sees_all else teams)
    states = team_budget_states(teams=teams, now=now, so_far=so_far)
    sets_amount = user_may_set_budget_amount(user)
    # Those who set amounts edit every budget; anyone else edits the budgets of the teams they lead.
    leads = (
        set()
        if sets_amount or not actions
        else set(Membership.objects.filter(user_id=user.pk, role=Role.LEAD).values_list("team_id", flat=True))
    )
    rows = [
        TeamBudgetRow(
            team=team,
            state=states[team.pk],
            may_edit=sets_amount or team.pk in leads,
            may_set_amount=sets_amount,
        )
        for team in teams
    ]
    rows.sort(key=lambda row: (_LEVEL_ORDER[row.state.level], -(row.state.used_pct or 0), row.team.name))
    return rows


def budget_totals(rows: Iterable[TeamBudgetRow]) -> BudgetTotals:
    """The sums over ``rows`` (a team without a budget adds its spend, not a budget)."""
    rows = list(rows)
    levels = [row.state.level for row in rows]
    return BudgetTotals(
        budgeted=sum((row.state.budget for row in rows if row.state.budget is not None), Decimal("0.00")),
        spent=sum((row.state.spent for row in rows), Decimal("0.00")),
        projected=sum((row.state.projected for row in rows), Decimal("0.00")),
        over=levels.count(BudgetLevel.OVER),
        warning=levels.count(BudgetLevel.WARNING),
        projected_over=levels.count(BudgetLevel.PROJECTED_OVER),
        without_budget=levels.count(BudgetLevel.NONE),
    )
