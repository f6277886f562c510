"""The request lifecycle's one write: a status change under a row lock, with its event, or InvalidTransition.

Below every service that moves a request (``services``, ``extension_services``, ``provisioning``): they all change
status through ``gpu_request_transition``, so the allowed moves (``ALLOWED_TRANSITIONS``) are checked in one place.
"""

from __future__ import annotations

from typing import Any

from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from django.utils import timezone

from allocations.models import ALLOWED_TRANSITIONS, TERMINAL_STATUSES, GpuRequest, RequestEvent, RequestStatus
from audit.services import audit_record, audit_snapshot


class InvalidTransition(Exception):
    """A status change the request lifecycle (or the action asked for) does not allow; nothing was changed."""

    def __init__(self, request: GpuRequest, to_status: str, message: str | None = None) -> None:
        allowed = sorted(ALLOWED_TRANSITIONS.get(request.status, frozenset()))
        allowed_text = ", ".join(allowed) if allowed else "none (it is final)"
        super().__init__(
            message
            or f"Request #{request.pk} is {request.status}; it cannot move to {to_status}. "
            f"From {request.status} it may move to: {allowed_text}."
        )
        self.from_status = request.status
        self.to_status = to_status


_TIMESTAMP_FOR_STATUS = {
    RequestStatus.PENDING_APPROVAL: "submitted_at",
    RequestStatus.APPROVED: "approved_at",
    RequestStatus.ACTIVE: "activated_at",
}


def _actor_label(user: AbstractBaseUser | None, fallback: str) -> str:
    if user is None:
        return fallback
    return user.get_username()


def gpu_request_transition(
    *,
    request: GpuRequest,
    to_status: str,
    acting_user: AbstractBaseUser | None,
    comment: str = "",
    actor_label: str | None = None,
    updates: dict[str, Any] | None = None,
    from_statuses: frozenset[str] | None = None,
    refusal: str | None = None,
    details: dict[str, Any] | None = None,
) -> GpuRequest:
    """Move a request to a new status under a row lock and write its event, or raise InvalidTransition.

    ``acting_user`` is None for the system (a task or a policy); ``actor_label`` then says which. ``updates`` are
    extra fields saved in the same transaction (e.g. ``status_detail``). ``from_statuses`` narrows the move to the
    statuses an action accepts (cancel: not yet approved), checked under the lock so a racing action cannot slip in
    between; ``refusal`` is then the InvalidTransition's message, formatted with the locked request's ``pk`` and
    ``status``. ``details`` is the evidence kept on the event (an idle reclaim's readings).
    """
    if to_status not in RequestStatus.values:
        raise InvalidTransition(request, to_status)
    with transaction.atomic():
        locked = GpuRequest.objects.select_for_update().get(pk=request.pk)
        if from_statuses is not None and locked.status not in from_statuses:
            message = refusal.format(pk=locked.pk, status=locked.status) if refusal else None
            raise InvalidTransition(locked, to_status, message)
        if not locked.can_transition_to(to_status):
            raise InvalidTransition(locked, to_status)
        from_status = locked.status
        before = audit_snapshot(locked)
        now = timezone.now()
        locked.status = to_status
        changed = {"status", "updated_at"}
        if field := _TIMESTAMP_FOR_STATUS.get(to_status):
            setattr(locked, field, now)
            changed.add(field)
        if to_status in TERMINAL_STATUSES:
            locked.ended_at = now
            changed.add("ended_at")
        for name, value in (updates or {}).items():
            setattr(locked, name, value)
            changed.add(name)
        locked.full_clean(exclude=["team", "requester", "sla_tier", "cluster", "node_pool"])
        locked.save(update_fields=sorted(changed))
        RequestEvent.objects.create(
            request=locked,
            actor=acting_user,
            actor_label=actor_label or _actor_label(acting_user, "system"),
            from_status=from_status,
            to_status=to_status,
            comment=comment,
            details=details or {},
        )
        audit_record(actor=acting_user, obj=locked, before=before, actor_label=actor_label or "system", comment=comment)
    # Keep the caller's instance in step with the database.
    for name in changed:
        setattr(request, name, getattr(locked, name))
    return request
