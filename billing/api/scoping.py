"""The visibility rules of the billing API's objects, registered in the one registry (``infra.scoping``) when the
app is ready: monthly reports, and the teams whose costs a user may read (``"view_costs"``: Finance reads every
team's, where the teams API shows a member only theirs)."""

from __future__ import annotations

from allocations.models import Team
from billing.costs.visibility import cost_teams_visible_to, monthly_reports_visible_to
from billing.models import MonthlyReport
from infra.scoping import register_visibility

VIEW_COSTS = "view_costs"


def register_billing_visibility() -> None:
    register_visibility(MonthlyReport, monthly_reports_visible_to)
    register_visibility(Team, cost_teams_visible_to, action=VIEW_COSTS)
