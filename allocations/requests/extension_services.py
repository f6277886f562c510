"""Writes of allocation extensions: ask for more hours on a running allocation, and an approver's decision.

Kept beside ``services`` (same conventions: keyword-only arguments with ``acting_user``, one transaction,
``full_clean`` before ``save``, the audit event in the same transaction, emails on commit). An extension never changes
the request's status; its request and decision are written to the request's timeline as events from and to the
current status.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from decimal import Decimal, InvalidOperation

from django.contrib.auth.models import AbstractBaseUser
from django.core.exceptions import PermissionDenied, ValidationError
from django.db import IntegrityError, transaction
from django.utils import timezone

from allocations.lifecycle import InvalidTransition
from allocations.models import (
    EXTENDABLE_STATUSES,
    MAX_EXTENSION_HOURS,
    AllocationExtension,
    ExtensionStatus,
    GpuRequest,
    RequestEvent,
)
from allocations.notifications import approver_emails, send_email
from allocations.requests.refusals import ROLE_NOT_READ, RoleNotRead, owner_or_lead_refusal, require_owner_or_lead
from allocations.selectors import User, user_is_approver
from audit.services import audit_record, audit_snapshot


def hours_text(hours: Decimal) -> str:
    """Hours as people write them: 24, 1.5."""
    return f"{Decimal(hours).normalize():f}"


def extension_refusal(request: GpuRequest) -> str | None:
    """Why the request's allocation cannot be extended now (its status or no end to extend), or None when it can."""
    if request.status not in EXTENDABLE_STATUSES:
        return (
            f"Only an approved, provisioning or active allocation can be extended; #{request.pk} is {request.status}."
        )
    if request.expires_at is None and not request.duration_hours:
        return f"Request #{request.pk} has no expiry or duration: it runs until released and needs no extension."
    return None


def extend_refusal(*, user: User, request: GpuRequest, role: str | RoleNotRead | None = ROLE_NOT_READ) -> str | None:
    """Why ``user`` may not ask for more hours on ``request`` now (who they are, its status or no end, one already
    pending), or None: what ``allocation_extension_request`` refuses and whether the request page offers it.
    ``role``: as for ``owner_or_lead_refusal``."""
    refusal = owner_or_lead_refusal(user=user, request=request, role=role) or extension_refusal(request)
    if refusal is None and (pending := request.extensions.filter(status=ExtensionStatus.PENDING).first()):
        refusal = _pending_message(pending)
    return refusal


def extension_decide_refusal(*, user: User, extension: AllocationExtension) -> str | None:
    """Why ``user`` may not approve or reject ``extension`` (not an approver, or their own request), or None."""
    if not user_is_approver(user):
        return "Only platform approvers can approve or reject extensions."
    if user.pk in (extension.request.requester_id, extension.requested_by_id):
        return "You cannot approve or reject an extension of your own request."
    return None


def _parse_hours(hours: object) -> tuple[Decimal | None, list[str]]:
    try:
        value = Decimal(str(hours)) if hours is not None and not isinstance(hours, bool) else None
    except InvalidOperation:
        value = None
    if value is None or not value.is_finite():
        return None, ["Give the number of hours to add."]
    if value <= 0:
        return None, ["Extend by more than 0 hours."]
    if value > MAX_EXTENSION_HOURS:
        return None, [f"Extend by at most {hours_text(MAX_EXTENSION_HOURS)} hours (30 days) at a time."]
    return value, []


def _pending_message(pending: AllocationExtension) -> str:
    return (
        f"Request #{pending.request_id} already has a pending extension of {hours_text(pending.hours)} h "
        f"(#{pending.pk}): wait for its decision before asking again."
    )


def allocation_extension_request(
    *, request: GpuRequest, acting_user: AbstractBaseUser, hours: Decimal | int | float | str, reason: str
) -> AllocationExtension:
    """Ask for ``hours`` more on an approved, provisioning or active allocation that has an end; approvers are told.

    The requester, a lead of the team or a platform approver may ask; one extension per request may be pending.
    Raises PermissionDenied, InvalidTransition (the request's status or an open-ended request) or ValidationError
    naming ``hours``, ``reason`` or ``request`` (one is already pending); nothing is written then.
    """
    require_owner_or_lead(acting_user, request)
    value, hour_errors = _parse_hours(hours)
    errors: dict[str, list[str]] = {"hours": hour_errors} if hour_errors else {}
    reason = (reason or "").strip()
    if not reason:
        errors["reason"] = ["Say why the allocation needs more time: the approver sees it."]
    with transaction.atomic():
        # The request's row lock serializes extensions of one request with their decisions.
        locked = GpuRequest.objects.select_for_update().get(pk=request.pk)
        if refusal := extension_refusal(locked):
            raise InvalidTransition(locked, locked.status, refusal)
        pending = locked.extensions.filter(status=ExtensionStatus.PENDING).first()
        if pending is not None:
            errors["request"] = [_pending_message(pending)]
        if errors:
            raise ValidationError(errors)
        extension = AllocationExtension(request=locked, requested_by=acting_user, hours=value, reason=reason)
        extension.full_clean()
        try:
            with transaction.atomic():
                extension.save()
        except IntegrityError as exc:  # the partial unique index: another pending one won a race without the lock
            raise ValidationError({"request": ["This request already has a pending extension."]}) from exc
        audit_record(actor=acting_user, obj=extension, before=None)
        _timeline_note(locked, acting_user, f"Extension of {hours_text(value)} h requested: {reason}")
        _notify_requested_on_commit(extension)
    return extension


def _timeline_note(request: GpuRequest, acting_user: AbstractBaseUser, comment: str) -> None:
    # An extension leaves the status as it is: its event goes from and to the current status.
    RequestEvent.objects.create(
        request=request,
        actor=acting_user,
        actor_label=acting_user.get_username(),
        from_status=request.status,
        to_status=request.status,
        comment=comment,
    )


def _require_extension_approver(acting_user: AbstractBaseUser, extension: AllocationExtension) -> None:
    if refusal := extension_decide_refusal(user=acting_user, extension=extension):
        raise PermissionDenied(refusal)


def allocation_extension_decide(
    *, extension: AllocationExtension, acting_user: AbstractBaseUser, approve: bool, comment: str = ""
) -> AllocationExtension:
    """Approve or reject a pending extension (platform approvers, never their own); the requester is told.

    Approving adds the hours under the request's row lock: ``expires_at`` becomes ``max(expires_at, now) + hours``
    and the day-before notice is re-armed; a request not yet running (no expiry, only a duration) gets a longer
    duration instead. A rejection needs a comment. Raises PermissionDenied, InvalidTransition (not pending any more,
    or the allocation ended) or ValidationError naming ``comment``.
    """
    _require_extension_approver(acting_user, extension)
    comment = (comment or "").strip()
    if not approve and not comment:
        raise ValidationError({"comment": ["Say why the extension is rejected: the requester sees it."]})
    with transaction.atomic():
        # Lock order: the request, then the extension (as allocation_extension_request takes the request first).
        request = GpuRequest.objects.select_for_update().get(pk=extension.request_id)
        locked = AllocationExtension.objects.select_for_update().get(pk=extension.pk)
        if locked.status != ExtensionStatus.PENDING:
            raise InvalidTransition(
                request,
                request.status,
                f"Extension #{locked.pk} of request #{request.pk} was already {locked.status}; only a pending "
                "extension can be decided.",
            )
        now = timezone.now()
        verdict = "approved" if approve else "rejected"
        extension_before = audit_snapshot(locked)
        if approve:
            if refusal := extension_refusal(request):
                raise InvalidTransition(request, request.status, refusal)
            event_comment = _extend(request, locked.hours, now, acting_user)
        else:
            event_comment = f"Extension of {hours_text(locked.hours)} h rejected: {comment}"
        locked.status = ExtensionStatus.APPROVED if approve else ExtensionStatus.REJECTED
        locked.decided_by = acting_user
        locked.decided_at = now
        locked.decision_comment = comment
        locked.full_clean()
        locked.save(update_fields=["status", "decided_by", "decided_at", "decision_comment"])
        audit_record(actor=acting_user, obj=locked, before=extension_before, comment=comment)
        if approve and comment:
            event_comment = f"{event_comment} {comment}"
        _timeline_note(request, acting_user, event_comment)
        _notify_decided_on_commit(locked, verdict)
    for name in ("status", "decided_by", "decided_at", "decision_comment"):
        setattr(extension, name, getattr(locked, name))
    return extension


def _extend(request: GpuRequest, hours: Decimal, now: datetime, acting_user: AbstractBaseUser) -> str:
    """Add the hours to the locked request and save it; returns the timeline comment."""
    before = audit_snapshot(request)
    changed = {"updated_at"}
    if request.duration_hours:
        # The rendered Job's activeDeadlineSeconds comes from the duration: keep it in step with the expiry (the
        # reconcile loop re-applies active requests, so the running Job gets the longer deadline too).
        request.duration_hours = request.duration_hours + hours
        changed.add("duration_hours")
    if request.expires_at is not None:
        request.expires_at = max(request.expires_at, now) + timedelta(seconds=int(hours * 3600))
        # The day-before notice fires again for the new expiry (provisioning.gpu_requests_expire).
        request.expiry_notified_at = None
        changed.update({"expires_at", "expiry_notified_at"})
        until = f"until {request.expires_at:%Y-%m-%d %H:%M} UTC"
    else:
        until = f"to {hours_text(request.duration_hours)} h in all, counted from activation"
    request.full_clean(exclude=["team", "requester", "sla_tier", "cluster", "node_pool"])
    request.save(update_fields=sorted(changed))
    audit_record(actor=acting_user, obj=request, before=before, comment=f"Extension of {hours_text(hours)} h approved")
    return f"Extended by {hours_text(hours)} h {until} (approved by {acting_user.get_username()})."


# --- Emails, sent once the transaction commits (allocations.notifications) ---------------------------------------


def _load_for_email(extension_id: int) -> AllocationExtension:
    related = ("request__team", "request__requester", "requested_by", "decided_by")
    return AllocationExtension.objects.select_related(*related).get(pk=extension_id)


def _notify_requested_on_commit(extension: AllocationExtension) -> None:
    extension_id = extension.pk

    def deliver() -> None:
        fresh = _load_for_email(extension_id)
        request = fresh.request
        recipients = [e for e in approver_emails() if e not in (fresh.requested_by.email, request.requester.email)]
        send_email(
            f"[GPU Portal] Extension of {hours_text(fresh.hours)} h asked for request #{request.pk} {request.name}",
            "allocations/email/extension_requested.txt",
            request,
            recipients,
            extension=fresh,
            hours=hours_text(fresh.hours),
        )

    transaction.on_commit(deliver, robust=True)


def _notify_decided_on_commit(extension: AllocationExtension, verdict: str) -> None:
    extension_id = extension.pk

    def deliver() -> None:
        fresh = _load_for_email(extension_id)
        request = fresh.request
        recipients = sorted({e for e in (request.requester.email, fresh.requested_by.email) if e})
        send_email(
            f"[GPU Portal] Extension of request #{request.pk} {request.name} was {verdict}",
            "allocations/email/extension_decided.txt",
            request,
            recipients,
            extension=fresh,
            hours=hours_text(fresh.hours),
            decision=verdict,
        )

    transaction.on_commit(deliver, robust=True)
