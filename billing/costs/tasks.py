"""Celery tasks of costs: the monthly email (queued by ``monthly_reports_close``), the budget alerts and the
pricing of past days (beat).

Registered via ``billing.tasks``.

Services import these tasks at module level as ``..._task``; a task imports what it runs at module level too, since
what it runs (``billing.costs.emails``) sits below the services.
"""

from __future__ import annotations

from datetime import date

from celery import shared_task

from billing.costs.budget_alerts import team_budgets_check
from billing.costs.day_charges import day_charges_catch_up
from billing.costs.emails import reports_email


@shared_task(name="billing.email_monthly_reports", acks_late=True)
def email_monthly_reports(month: str) -> dict[str, object]:
    """Email a closed month's reports (``YYYY-MM``) not sent yet; re-running it sends nothing twice."""
    first = date.fromisoformat(f"{month}-01")
    return {"month": month, "sent": reports_email(month=first)}


@shared_task(name="billing.check_team_budgets", acks_late=True)
def check_team_budgets() -> dict[str, object]:
    """Notify each money-budget threshold crossed this month, once (beat: hourly); a re-run sends nothing twice."""
    result = team_budgets_check()
    return {
        "month": result.month,
        "created": result.created,
        "emailed": result.emailed,
        "chatted": result.chatted,
        "failed": result.failed,
        "expired": result.expired,
    }


@shared_task(name="billing.price_past_days", acks_late=True)
def price_past_days() -> dict[str, object]:
    """Price and store each day over that is not stored yet (``billing.costs.day_charges``; beat: hourly); a re-run
    stores nothing twice."""
    return day_charges_catch_up()
