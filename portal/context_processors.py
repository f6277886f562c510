"""Values every page template needs."""

from django.conf import settings
from django.http import HttpRequest

from allocations.selectors import teams_of, user_is_approver, user_reads_only
from billing.costs.visibility import user_can_view_all_costs


def portal(request: HttpRequest) -> dict[str, object]:
    """Whether tasks run in-process (no broker), the user's approver flag and what the navigation offers them, for
    base.html."""
    user = getattr(request, "user", None)
    signed_in = bool(user and user.is_authenticated)
    reads_only = signed_in and user_reads_only(user)
    return {
        "tasks_run_eagerly": bool(settings.CELERY_TASK_ALWAYS_EAGER),
        "user_is_approver": signed_in and user_is_approver(user),
        # Finance reads every team and request but asks for GPUs only where it is also a team's member (one query,
        # for read-only roles alone: everyone else's pages read nothing more).
        "user_reads_only": reads_only,
        "nav_new_request": signed_in and (not reads_only or teams_of(user).exists()),
        # Approvers reach the budgets from Teams: their navigation is full already.
        "nav_budgets": reads_only and user_can_view_all_costs(user),
        "portal_currency": settings.PORTAL_CURRENCY,
    }
