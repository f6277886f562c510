"""Reads of this month's spend so far: each team's GPU-hours and cost against its GPU-hour and money budgets (with
the run-rate projection to month end), and the fleet's spend and idle cost, as the home page, the approval queue and
the team pages show them.

Every figure comes from the month's chargeback curves (``billing.costs.chargeback.build_month_curves``), kept per
process until an input changes (``billing.costs.month_to_date``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from types import MappingProxyType
from typing import Any

from django.conf import settings
from django.utils import timezone

from allocations.models import Team
from allocations.selectors import User
from billing.costs.chargeback import build_month_curves, month_bounds, share_idle_cost
from billing.costs.month_to_date import month_curves, teams_month_curves
from billing.costs.visibility import user_can_view_all_costs
from billing.models import BudgetNotice, TeamBudget
from gpucore.budget import RUN_RATE_WINDOW_HOURS, MoneyBudgetState, money_budget_state
from gpucore.month_curves import MonthSoFar, TeamSoFar
from gpucore.pricing import to_cents
from infra.reference_cache import REFERENCE_DATA, cached


def month_so_far(
    *, now: datetime | None = None, for_teams: Iterable[Team] | None = None, share_idle: bool | None = None
) -> MonthSoFar:
    """This month's chargeback up to ``now``, as ``month_chargeback`` gives it, read from curves kept per process
    until an input changes (``billing.costs.month_to_date``); each team's ``recent_amount`` is its spend in the
    run-rate window (the last ``RUN_RATE_WINDOW_HOURS``, within the month).

    ``for_teams``: only those teams' figures are wanted, each read from its own curves (unless idle cost is shared:
    each team's share then depends on every allocation); the idle figures are then not the organisation's.
    """
    now = now or timezone.now()
    month = now.astimezone(UTC).date().replace(day=1)
    start, _ = month_bounds(month)
    share_idle = share_idle_cost() if share_idle is None else share_idle
    recent_since = max(start, now - timedelta(hours=int(RUN_RATE_WINDOW_HOURS)))
    if share_idle or for_teams is None:
        curves = month_curves(
            team_id=None,
            month=month,
            share_idle=share_idle,
            build=lambda: build_month_curves(month=month, teams=None, share_idle=share_idle),
        )
        slugs = [] if for_teams is None else [team.slug for team in for_teams]
        return curves.so_far(now, teams=slugs, recent_since=recent_since)
    teams: dict[str, TeamSoFar] = {}
    so_far = None
    by_id = {team.pk: team for team in for_teams}
    curves_by_team = teams_month_curves(
        team_ids=by_id,
        month=month,
        build=lambda team_id: build_month_curves(month=month, teams=[by_id[team_id]], share_idle=False),
    )
    for team_id, curves in curves_by_team.items():
        team = by_id[team_id]
        so_far = curves.so_far(now, teams=[team.slug], recent_since=recent_since)
        teams[team.slug] = so_far.teams[team.slug]
    return MonthSoFar(start=start, end=so_far.end if so_far else now, teams=teams, idle_cost={}, idle_shared=False)


def team_budget_states(
    *, teams: Iterable[Team], now: datetime | None = None, so_far: MonthSoFar | None = None
) -> dict[int, MoneyBudgetState]:
    """Team id -> this month's spend against its money budget (``None`` budget when it has none), with the run-rate
    projection to month end at the last day's pace; from ``month_so_far`` (pass ``so_far`` when already read)."""
    teams = list(teams)
    now = now or timezone.now()
    month = now.astimezone(UTC).date().replace(day=1)
    start, end = month_bounds(month)
    so_far = so_far or month_so_far(now=now, for_teams=teams)
    budgets = budgets_by_team()
    states = {}
    for team in teams:
        team_charge = so_far.teams.get(team.slug)
        budget = budgets.get(team.pk)
        states[team.pk] = money_budget_state(
            spent=to_cents(team_charge.total) if team_charge else Decimal("0.00"),
            budget=budget.monthly_amount if budget else None,
            month_start=start,
            month_end=end,
            now=now,
            # The last day's allocations, from the same chargeback: the pace the projection extrapolates.
            recent_spend=team_charge.recent_amount if team_charge else Decimal(0),
            **({"thresholds_pct": budget.thresholds_pct} if budget else {}),
        )
    return states


@dataclass(frozen=True)
class KeptBudget:
    """A team's money budget as this process keeps it: the amount and the thresholds that notify."""

    monthly_amount: Decimal
    thresholds_pct: tuple[int, ...]


def budgets_by_team() -> Mapping[int, KeptBudget]:
    """Every team's money budget by team id, kept per process as reference data (``infra.reference_cache``; a
    budget saved or deleted rereads them): admins and leads change them a few times a year, and the approval queue
    and the home read them on every view."""
    return cached(REFERENCE_DATA, "team-budgets", _read_budgets)


def _read_budgets() -> Mapping[int, KeptBudget]:
    budgets = TeamBudget.objects.order_by().values_list("team_id", "monthly_amount", "thresholds_pct")
    return MappingProxyType({team_id: KeptBudget(amount, tuple(thresholds)) for team_id, amount, thresholds in budgets})


def team_month_to_date(*, team: Team, now: datetime | None = None) -> dict[str, Any]:
    """The team's allocated GPU-hours and estimated cost this month so far, against its monthly GPU-hour budget and
    its money budget (``money``: a ``MoneyBudgetState`` with the run-rate projection to month end)."""
    return teams_month_to_date(teams=[team], now=now)[team.pk]


def teams_month_to_date(
    *, teams: Iterable[Team], now: datetime | None = None, notices: bool = True
) -> dict[int, dict[str, Any]]:
    """``team_month_to_date`` of each of ``teams`` (team id -> its answer), in one query for their money budgets and
    one for their notices (``notices=False``: none read, an empty list each), whatever the number of teams."""
    teams = list(teams)
    now = now or timezone.now()
    month = now.astimezone(UTC).date().replace(day=1)
    so_far = month_so_far(now=now, for_teams=teams)
    money = team_budget_states(teams=teams, now=now, so_far=so_far)
    by_team: dict[int, list[BudgetNotice]] = {team.pk: [] for team in teams}
    if notices and teams:
        for notice in BudgetNotice.objects.filter(team__in=teams, month=month).order_by("threshold_pct"):
            by_team[notice.team_id].append(notice)
    answers = {}
    for team in teams:
        charge = so_far.teams.get(team.slug)
        gpu_hours = charge.gpu_hours if charge else Decimal(0)
        budget = team.monthly_gpu_hour_budget
        answers[team.pk] = {
            "month": month,
            "gpu_hours": gpu_hours,
            "amount": to_cents(charge.total) if charge else Decimal("0.00"),
            "currency": settings.PORTAL_CURRENCY,
            "budget": budget,
            "budget_used_pct": round(gpu_hours / budget * 100, 1) if budget else None,
            "over_budget": bool(budget is not None and gpu_hours > budget),
            "money": money[team.pk],
            "notices": by_team[team.pk],
        }
    return answers


def home_costs(*, user: User, teams: Iterable[Team], now: datetime | None = None) -> dict[str, Any]:
    """The home page's money, from one reading of the month so far: each of ``teams``' budget state (team id ->
    ``MoneyBudgetState``), and for those who see every team's costs the month's spend and idle cost; ``so_far`` the
    reading itself."""
    now = now or timezone.now()
    month = now.astimezone(UTC).date().replace(day=1)
    teams = list(teams)
    sees_all = user_can_view_all_costs(user)
    if not teams and not sees_all:  # nothing of money to show
        return {"budgets": {}, "month_costs": None, "currency": settings.PORTAL_CURRENCY, "so_far": None}
    so_far = month_so_far(now=now, for_teams=None if sees_all else teams)
    fleet = None
    if sees_all:
        allocated = sum((charge.total for charge in so_far.teams.values()), Decimal(0))
        # With idle cost shared, teams' totals already carry it: the month's spend is the allocated part plus idle.
        idle = Decimal(0) if so_far.idle_shared else so_far.total_idle_cost
        fleet = {
            "month": month,
            "spent": to_cents(allocated),
            "idle": to_cents(so_far.total_idle_cost),
            "total": to_cents(allocated + idle),
        }
    return {
        "budgets": team_budget_states(teams=teams, now=now, so_far=so_far),
        "month_costs": fleet,
        "currency": settings.PORTAL_CURRENCY,
        "so_far": so_far,  # every team's, for those who see all: their home's budgets card reads it again
    }
