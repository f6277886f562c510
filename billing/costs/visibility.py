"""Reads of who may see which costs: the Finance group and its permission, the teams whose costs a user sees and
their monthly reports; every cost page and endpoint takes its teams and reports from here.
"""

from __future__ import annotations

from django.db.models import QuerySet

from allocations.models import Team
from allocations.selectors import User, teams_of, user_is_approver
from billing.models import MonthlyReport

FINANCE_GROUP = "Finance"
VIEW_ALL_COSTS_PERMISSION = "billing.view_all_costs"
# What the Finance group holds (its migrations grant them): every team's costs, and read-only every team and request,
# so each report line and chart opens the page it names.
FINANCE_PERMISSIONS = (VIEW_ALL_COSTS_PERMISSION, "allocations.view_team", "allocations.view_gpurequest")


def user_can_view_all_costs(user: User) -> bool:
    """Approvers, platform admins and the Finance group (``billing.view_all_costs``) see every team's costs."""
    if user_is_approver(user):
        return True
    return bool(user.is_authenticated and user.is_active and user.has_perm(VIEW_ALL_COSTS_PERMISSION))


def cost_teams_visible_to(user: User) -> QuerySet[Team]:
    """Teams whose costs the user may see: their own, or every team for approvers and Finance."""
    if user_can_view_all_costs(user):
        return Team.objects.all()
    return teams_of(user)


def monthly_reports_visible_to(*, user: User) -> QuerySet[MonthlyReport]:
    """Monthly reports of the teams the user may see; every report page and endpoint starts here."""
    return MonthlyReport.objects.filter(team__in=cost_teams_visible_to(user)).select_related("team")
