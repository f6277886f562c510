"""Writes on a team's money budget: who may set what, in a transaction, audited.

Platform admins and the Finance group set the amount (a team does not raise its own budget); they and the team's
leads set the thresholds that notify and the team's chat URL (which services and hosts: ``chat_urls``). Refusals are
``PermissionDenied`` with the reason, or ``ValidationError`` naming the field.
"""

from __future__ import annotations

from decimal import Decimal

from django.core.exceptions import PermissionDenied, ValidationError
from django.db import transaction

from allocations.models import Membership, Role, Team
from allocations.selectors import User, user_is_platform_admin
from audit.services import audit_record, audit_snapshot
from billing.costs.chat_urls import chat_url_refusal
from billing.costs.visibility import VIEW_ALL_COSTS_PERMISSION
from billing.models import TeamBudget


def user_may_set_budget_amount(user: User) -> bool:
    """Platform admins and the Finance group (``billing.view_all_costs``) set budget amounts."""
    if not user.is_authenticated or not user.is_active:
        return False
    return user_is_platform_admin(user) or user.has_perm(VIEW_ALL_COSTS_PERMISSION)


def user_may_edit_budget(user: User, team: Team) -> bool:
    """Whether ``user`` may change anything of ``team``'s budget (its thresholds and chat at least)."""
    if user_may_set_budget_amount(user):
        return True
    return Membership.objects.filter(team=team, user=user, role=Role.LEAD).exists()


def team_budget_update(
    *,
    acting_user: User,
    team: Team,
    thresholds_pct: list[int],
    chat_webhook_url: str,
    monthly_amount: Decimal | None = None,
) -> TeamBudget:
    """Set ``team``'s budget (``monthly_amount`` None: keep the amount, the only choice for a lead); audited."""
    if not user_may_edit_budget(acting_user, team):
        raise PermissionDenied("Only the team's leads, platform admins and Finance can change its budget.")
    if monthly_amount is not None and not user_may_set_budget_amount(acting_user):
        raise PermissionDenied("Only platform admins and Finance set a budget's amount.")
    with transaction.atomic():
        budget = TeamBudget.objects.select_for_update().filter(team=team).first()
        before = audit_snapshot(budget)
        if budget is None:
            if monthly_amount is None:
                raise PermissionDenied("The team has no budget yet: platform admins and Finance set its amount.")
            budget = TeamBudget(team=team, monthly_amount=monthly_amount)
        elif monthly_amount is not None:
            budget.monthly_amount = monthly_amount
        budget.thresholds_pct = sorted(thresholds_pct)
        if chat_webhook_url and chat_webhook_url != budget.chat_webhook_url:
            refusal = chat_url_refusal(chat_webhook_url, privileged=user_is_platform_admin(acting_user))
            if refusal:
                raise ValidationError({"chat_webhook_url": refusal})
        budget.chat_webhook_url = chat_webhook_url
        budget.full_clean()
        budget.save()
        audit_record(actor=acting_user, obj=budget, before=before)
    return budget
