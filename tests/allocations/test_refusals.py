"""Refusal predicates: each page shows exactly the buttons whose service would not refuse, for every role and status."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.core.exceptions import PermissionDenied, ValidationError
from django.db import transaction
from django.utils import timezone

from allocations.lifecycle import InvalidTransition
from allocations.models import AllocationExtension, RequestStatus
from allocations.requests.extension_services import allocation_extension_decide, allocation_extension_request
from allocations.requests.pages import gpu_request_actions, gpu_request_extension_rows
from allocations.requests.refusals import approve_refusal
from allocations.requests.services import (
    gpu_request_approve,
    gpu_request_cancel,
    gpu_request_reapply,
    gpu_request_reject,
    gpu_request_release,
)
from tests.factories import ROLES, DemoOrg, GpuRequestFactory

pytestmark = pytest.mark.django_db

STATUSES = [
    RequestStatus.PENDING_APPROVAL,
    RequestStatus.APPROVED,
    RequestStatus.ACTIVE,
    RequestStatus.FAILED,
    RequestStatus.RELEASED,
    RequestStatus.REJECTED,
]
SERVICES = {
    "cancel": lambda request, user: gpu_request_cancel(request=request, acting_user=user),
    "release": lambda request, user: gpu_request_release(request=request, acting_user=user),
    "review": lambda request, user: gpu_request_approve(request=request, acting_user=user),
    "reapply": lambda request, user: gpu_request_reapply(request=request, acting_user=user),
    "extend": lambda request, user: allocation_extension_request(
        request=request, acting_user=user, hours=4, reason="more epochs"
    ),
}


class _Undo(Exception):
    """Raised to roll back a service call that went through."""


def refused(service, request, user) -> bool:
    """Whether the service refuses (who, or the status); a call that goes through is rolled back."""
    try:
        with transaction.atomic():
            service(request, user)
            raise _Undo
    except (PermissionDenied, InvalidTransition):
        return True
    except (_Undo, ValidationError):
        return False  # ValidationError: the input (quota, hours) is checked on submit, not by the predicate


@pytest.mark.parametrize("status", STATUSES)
@pytest.mark.parametrize("role", ROLES)
def test_the_detail_page_offers_exactly_what_the_services_accept(demo_org: DemoOrg, role: str, status: str) -> None:
    user = demo_org.user(role)
    request = GpuRequestFactory(
        team=demo_org.team,
        requester=demo_org.member,
        status=status,
        expires_at=timezone.now() + timedelta(days=1),
        submitted_at=timezone.now(),
    )

    actions = gpu_request_actions(user=user, request=request)

    for action, service in SERVICES.items():
        request.refresh_from_db()
        assert actions[action] is not refused(service, request, user), (role, status, action)


def test_reject_and_approve_share_the_reviewer_rule(demo_org: DemoOrg) -> None:
    own = GpuRequestFactory(team=demo_org.team, requester=demo_org.approver)

    assert approve_refusal(user=demo_org.approver, request=own) == "You cannot approve or reject your own request."
    with pytest.raises(PermissionDenied, match="your own request"):
        gpu_request_reject(request=own, acting_user=demo_org.approver, comment="no")
    assert gpu_request_actions(user=demo_org.approver, request=own)["review"] is False
    assert gpu_request_actions(user=demo_org.approver, request=own)["own_request_pending_review"] is True


def test_an_extension_is_decidable_on_the_page_exactly_when_the_service_accepts(demo_org: DemoOrg) -> None:
    request = GpuRequestFactory(
        team=demo_org.team,
        requester=demo_org.member,
        status=RequestStatus.ACTIVE,
        expires_at=timezone.now() + timedelta(days=1),
    )
    allocation_extension_request(request=request, acting_user=demo_org.member, hours=4, reason="more epochs")
    extension = AllocationExtension.objects.get()

    for role in ROLES:
        user = demo_org.user(role)
        [row] = gpu_request_extension_rows(user=user, request=request)
        decide = lambda request, user: allocation_extension_decide(  # noqa: E731
            extension=extension, acting_user=user, approve=True
        )
        assert row["decide"] is not refused(decide, request, user), role
    assert gpu_request_actions(user=demo_org.member, request=request)["extend"] is False  # one is pending
