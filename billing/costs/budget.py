"""Reads: what a recommended or pending request does to its team's month (spend so far, its cost, the budget left).

The arithmetic is ``gpucore.budget``; this module supplies the team's month-to-date figures (the same chargeback as
the team page's panel) and the request's spec.
"""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal, InvalidOperation
from typing import Any

from django.utils import timezone

from allocations.models import GpuRequest, Team
from billing.costs.chargeback import month_bounds
from billing.costs.month_spend import team_month_to_date
from gpucore.budget import BudgetEffect, budget_effect


def _decimal(value: Any) -> Decimal | None:
    if value in (None, ""):
        return None
    try:
        return Decimal(str(value))
    except InvalidOperation:
        return None


def spec_budget_effect(
    *,
    team: Team,
    spec: dict[str, Any],
    duration_hours: Decimal | None,
    ends_at: datetime | None = None,
    now: datetime | None = None,
    month_to_date: dict[str, Any] | None = None,
) -> BudgetEffect | None:
    """The effect on ``team``'s month of the allocation ``spec`` starting now; None for a spec without a GPU share.

    ``month_to_date`` (``team_month_to_date``'s answer) may be passed in when one page shows several requests of a team.
    """
    share = _decimal(spec.get("gpu_share"))
    if share is None:
        return None  # a spec frozen before GPU shares were recorded
    now = now or timezone.now()
    _, month_end = month_bounds(now.astimezone(UTC).date())
    month = month_to_date or team_month_to_date(team=team, now=now)
    budget = team.monthly_gpu_hour_budget
    return budget_effect(
        gpu_share=share,
        quantity=int(spec.get("quantity") or 1),
        replicas=int(spec.get("replicas") or 1),
        monthly_cost=_decimal((spec.get("estimated_monthly_cost") or {}).get("amount")),
        start=now,
        month_end=month_end,
        duration_hours=duration_hours,
        ends_at=ends_at,
        month_to_date_gpu_hours=Decimal(month["gpu_hours"]),
        month_to_date_cost=Decimal(month["amount"]),
        budget_gpu_hours=None if budget is None else Decimal(budget),
    )


def request_budget_effect(
    *, request: GpuRequest, now: datetime | None = None, month_to_date: dict[str, Any] | None = None
) -> BudgetEffect | None:
    """The effect on its team's month of a pending request, were it approved now."""
    return spec_budget_effect(
        team=request.team,
        spec=request.spec or {},
        duration_hours=request.duration_hours,
        ends_at=request.expires_at,
        now=now,
        month_to_date=month_to_date,
    )
