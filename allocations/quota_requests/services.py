"""Writes of quotas from the portal: a team asks for a larger quota, an approver grants or declines it, and
approvers edit a quota's nominal, borrowing and lending limits. Each write is audited in its transaction."""

from __future__ import annotations

from typing import Any

from django.contrib.auth.models import AbstractBaseUser
from django.core.exceptions import PermissionDenied, ValidationError
from django.db import transaction
from django.utils import timezone

from allocations.models import Quota, QuotaIncreaseRequest, QuotaRequestStatus, Team
from allocations.notifications import notify_quota_decision_on_commit
from allocations.quota_requests.selectors import quota_increase_ask_refusal, quota_increase_decide_refusal
from allocations.selectors import user_is_approver
from audit.services import audit_record, audit_snapshot

# quota_update's borrowing and lending limits: left as they are unless given (None clears one).
UNCHANGED: Any = object()


def quota_increase_request_create(
    *, acting_user: AbstractBaseUser, quota: Quota, requested_limit: int, reason: str
) -> QuotaIncreaseRequest:
    """Ask for the quota's nominal limit to become ``requested_limit`` (more than now); one pending ask per quota."""
    refusal = quota_increase_ask_refusal(user=acting_user, quota=quota)
    if refusal:
        raise PermissionDenied(refusal)
    reason = (reason or "").strip()
    with transaction.atomic():
        Team.objects.select_for_update().filter(pk=quota.team_id).first()  # one ask at a time per team
        quota = Quota.objects.get(pk=quota.pk)
        errors: dict[str, str] = {}
        if requested_limit <= quota.limit:
            errors["requested_limit"] = f"Ask for more than the {quota.limit} units the team has now."
        if not reason:
            errors["reason"] = "Say what the units are for: the approver decides on it."
        if QuotaIncreaseRequest.objects.filter(quota=quota, status=QuotaRequestStatus.PENDING).exists():
            errors["requested_limit"] = "An increase of this quota is already waiting for an approver."
        if errors:
            raise ValidationError(errors)
        increase = QuotaIncreaseRequest(
            team_id=quota.team_id,
            quota=quota,
            limit_when_asked=quota.limit,
            requested_limit=requested_limit,
            reason=reason,
            requested_by=acting_user,
        )
        increase.full_clean()
        increase.save()
        audit_record(actor=acting_user, obj=increase, before=None)
    return increase


def quota_increase_decide(
    *, acting_user: AbstractBaseUser, increase: QuotaIncreaseRequest, grant: bool, comment: str = ""
) -> QuotaIncreaseRequest:
    """Grant (the quota's nominal limit becomes the asked number) or decline (a reason is required)."""
    comment = (comment or "").strip()
    with transaction.atomic():
        Team.objects.select_for_update().filter(pk=increase.team_id).first()
        increase = QuotaIncreaseRequest.objects.select_related("quota", "team").get(pk=increase.pk)
        refusal = quota_increase_decide_refusal(user=acting_user, increase=increase)
        if refusal:
            raise PermissionDenied(refusal)
        if not grant and not comment:
            raise ValidationError({"comment": "Say why the increase is declined: the team reads it."})
        before = audit_snapshot(increase)
        if grant:
            quota_update(
                acting_user=acting_user,
                quota=increase.quota,
                limit=max(increase.requested_limit, increase.quota.limit),
                comment=f"Quota increase #{increase.pk} granted. {comment}".strip(),
            )
        increase.status = QuotaRequestStatus.GRANTED if grant else QuotaRequestStatus.DECLINED
        increase.decided_by = acting_user
        increase.decided_at = timezone.now()
        increase.decision_comment = comment
        increase.save()
        audit_record(actor=acting_user, obj=increase, before=before, comment=comment)
        notify_quota_decision_on_commit(increase)
    return increase


def quota_increase_withdraw(*, acting_user: AbstractBaseUser, increase: QuotaIncreaseRequest) -> QuotaIncreaseRequest:
    """The asker withdraws a pending increase."""
    with transaction.atomic():
        increase = QuotaIncreaseRequest.objects.select_for_update().get(pk=increase.pk)
        if increase.requested_by_id != acting_user.pk:
            raise PermissionDenied("Only who asked for an increase withdraws it.")
        if increase.status != QuotaRequestStatus.PENDING:
            raise ValidationError(f"This increase is already {increase.get_status_display().lower()}.")
        before = audit_snapshot(increase)
        increase.status = QuotaRequestStatus.WITHDRAWN
        increase.save()
        audit_record(actor=acting_user, obj=increase, before=before)
    return increase


def quota_update(
    *,
    acting_user: AbstractBaseUser,
    quota: Quota,
    limit: int,
    borrowing_limit: Any = UNCHANGED,
    lending_limit: Any = UNCHANGED,
    comment: str = "",
) -> Quota:
    """Platform approvers set a quota's nominal limit and, when given, its borrowing and lending limits (Kueue's
    rules checked by the model). Lowering a quota below what is held takes nothing back: it refuses new requests."""
    if not user_is_approver(acting_user):
        raise PermissionDenied("Only platform approvers change quotas.")
    with transaction.atomic():
        quota = (
            Quota.objects.select_for_update(of=("self",))
            .select_related("team", "cluster", "node_pool")
            .get(pk=quota.pk)
        )
        before = audit_snapshot(quota)
        quota.limit = limit
        if borrowing_limit is not UNCHANGED:
            quota.borrowing_limit = borrowing_limit
        if lending_limit is not UNCHANGED:
            quota.lending_limit = lending_limit
        quota.full_clean()
        quota.save()
        audit_record(actor=acting_user, obj=quota, before=before, comment=comment)
    return quota
