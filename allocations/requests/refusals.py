"""Refusals: one predicate per action decides both the service's refusal and the button a page shows.

Each ``<action>_refusal(user=, request=)`` says why ``user`` may not do it now (who they are, or the request's
status), or None. The services raise PermissionDenied for the first kind and InvalidTransition for the second;
``allocations.requests.pages`` shows a button only where the predicate says None.
"""

from __future__ import annotations

from django.contrib.auth.models import AbstractBaseUser
from django.core.exceptions import PermissionDenied

from allocations.lifecycle import InvalidTransition
from allocations.models import (
    CANCELLABLE_STATUSES,
    REAPPLICABLE_STATUSES,
    RELEASABLE_STATUSES,
    GpuRequest,
    RequestStatus,
    Role,
)
from allocations.selectors import User, membership_role, user_is_approver


def _reviewer_refusal(user: User, request: GpuRequest) -> str | None:
    if not user_is_approver(user):
        return "Only platform approvers can approve or reject requests."
    if request.requester_id == user.pk:
        return "You cannot approve or reject your own request."
    return None


def pending_refusal(request: GpuRequest, to_status: str) -> str | None:
    if request.status != RequestStatus.PENDING_APPROVAL:
        return str(InvalidTransition(request, to_status))
    return None


def approve_refusal(*, user: User, request: GpuRequest) -> str | None:
    """Why ``user`` may not approve ``request`` now (not an approver, their own, not pending), or None."""
    return _reviewer_refusal(user, request) or pending_refusal(request, RequestStatus.APPROVED)


class RoleNotRead:
    """The default of ``role`` below: the predicate reads the user's role itself."""


ROLE_NOT_READ = RoleNotRead()


def owner_or_lead_refusal(
    *, user: User, request: GpuRequest, role: str | RoleNotRead | None = ROLE_NOT_READ
) -> str | None:
    """Why ``user`` is not the requester (still a member), a lead of the team or an approver; None when they are.

    ``role``: the user's role in the request's team (``membership_role``) when the caller already read it, so a page
    asking several predicates reads it once.
    """
    if isinstance(role, RoleNotRead):
        role = membership_role(user=user, team=request.team)
    if request.requester_id == user.pk and role is not None:
        return None
    if role == Role.LEAD or user_is_approver(user):
        return None
    return "Only the requester, a lead of the team or a platform approver can do that."


# The status refusals' wording, formatted with the request's pk and status: by the predicates for the pages, and by
# gpu_request_transition under the row lock for the services (so a racing action cannot slip in between).
CANCEL_REFUSAL = "Only a pending request can be cancelled; #{pk} is {status} (release it instead)."
RELEASE_REFUSAL = (
    "Only an approved, provisioning, active, suspended or failed request can be released; #{pk} is {status}."
)


def _cancel_status_refusal(request: GpuRequest) -> str | None:
    if request.status not in CANCELLABLE_STATUSES:
        return CANCEL_REFUSAL.format(pk=request.pk, status=request.status)
    return None


def cancel_refusal(*, user: User, request: GpuRequest, role: str | RoleNotRead | None = ROLE_NOT_READ) -> str | None:
    """Why ``user`` may not withdraw ``request`` now (who they are, or it is past approval), or None."""
    return owner_or_lead_refusal(user=user, request=request, role=role) or _cancel_status_refusal(request)


def _release_status_refusal(request: GpuRequest) -> str | None:
    if request.status not in RELEASABLE_STATUSES:
        return RELEASE_REFUSAL.format(pk=request.pk, status=request.status)
    return None


def release_refusal(*, user: User, request: GpuRequest, role: str | RoleNotRead | None = ROLE_NOT_READ) -> str | None:
    """Why ``user`` may not give ``request``'s allocation back now (who they are, or its status), or None."""
    return owner_or_lead_refusal(user=user, request=request, role=role) or _release_status_refusal(request)


def reapplier_refusal(user: User) -> str | None:
    return None if user_is_approver(user) else "Only platform approvers can re-apply a request to its cluster."


def reapply_status_refusal(request: GpuRequest) -> str | None:
    if request.status not in REAPPLICABLE_STATUSES:
        return f"Only a failed or active request can be re-applied; #{request.pk} is {request.status}."
    return None


def reapply_refusal(*, user: User, request: GpuRequest) -> str | None:
    """Why ``user`` may not hand ``request`` back to provisioning now (not an approver, or its status), or None."""
    return reapplier_refusal(user) or reapply_status_refusal(request)


def require_owner_or_lead(acting_user: AbstractBaseUser, request: GpuRequest) -> None:
    """Raise PermissionDenied with the reason unless ``owner_or_lead_refusal`` says None."""
    if refusal := owner_or_lead_refusal(user=acting_user, request=request):
        raise PermissionDenied(refusal)


def require_reviewer(acting_user: AbstractBaseUser, request: GpuRequest) -> None:
    if refusal := _reviewer_refusal(acting_user, request):
        raise PermissionDenied(refusal)
