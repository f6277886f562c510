"""Allocation extensions through the services: who may ask and decide, in which states, the expiry math, the re-armed
day-before notice, the request's timeline and the emails."""

from __future__ import annotations

from datetime import timedelta
from decimal import Decimal

import pytest
from django.core import mail
from django.core.exceptions import PermissionDenied, ValidationError
from django.db import IntegrityError, transaction
from django.utils import timezone

from allocations.clusters.provisioning import gpu_requests_expire
from allocations.lifecycle import InvalidTransition
from allocations.models import AllocationExtension, ExtensionStatus, GpuRequest, RequestStatus
from allocations.requests.extension_services import (
    allocation_extension_decide,
    allocation_extension_request,
    hours_text,
)
from allocations.requests.pages import gpu_request_actions
from allocations.requests.services import gpu_request_release
from tests.factories import ROLES, DemoOrg, GpuRequestFactory, MembershipFactory, UserFactory

pytestmark = pytest.mark.django_db

REASON = "The sweep needs two more days."


def running(org: DemoOrg, *, status: str = RequestStatus.ACTIVE, hours_left: float = 30, **fields) -> GpuRequest:
    """The member's allocation in team vision, expiring in ``hours_left`` hours."""
    fields.setdefault("expires_at", timezone.now() + timedelta(hours=hours_left))
    return GpuRequestFactory(team=org.team, requester=org.member, status=status, **fields)


def ask(org: DemoOrg, request: GpuRequest, hours: object = 24, user=None) -> AllocationExtension:
    return allocation_extension_request(request=request, acting_user=user or org.member, hours=hours, reason=REASON)


# --- Asking: who --------------------------------------------------------------------------------------------------

# The requester, a lead of the team or a platform approver; the outsider is of another team.
ASK_ALLOWED = {"platform_admin": True, "approver": True, "team_lead": True, "member": True, "outsider": False}


@pytest.mark.parametrize("role", ROLES)
def test_who_may_ask_for_an_extension(demo_org: DemoOrg, role: str) -> None:
    request = running(demo_org)
    user = demo_org.user(role)

    if ASK_ALLOWED[role]:
        extension = ask(demo_org, request, user=user)
        assert (extension.status, extension.requested_by, extension.hours) == ("pending", user, Decimal("24"))
        assert request.extensions.get() == extension
    else:
        with pytest.raises(PermissionDenied, match="requester, a lead"):
            ask(demo_org, request, user=user)
        assert not request.extensions.exists()


def test_another_member_of_the_team_may_not_ask_for_someone_elses_allocation(demo_org: DemoOrg) -> None:
    colleague = UserFactory(username="colleague")
    MembershipFactory(user=colleague, team=demo_org.team)

    with pytest.raises(PermissionDenied):
        ask(demo_org, running(demo_org), user=colleague)


# --- Asking: when -------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("status", [RequestStatus.APPROVED, RequestStatus.PROVISIONING, RequestStatus.ACTIVE])
def test_running_allocations_can_be_extended(demo_org: DemoOrg, status: str) -> None:
    assert ask(demo_org, running(demo_org, status=status)).status == ExtensionStatus.PENDING


@pytest.mark.parametrize(
    "status",
    [
        RequestStatus.DRAFT,
        RequestStatus.PENDING_APPROVAL,
        RequestStatus.REJECTED,
        RequestStatus.FAILED,
        RequestStatus.RELEASED,
        RequestStatus.EXPIRED,
    ],
)
def test_other_statuses_cannot_be_extended(demo_org: DemoOrg, status: str) -> None:
    request = running(demo_org, status=status)

    with pytest.raises(InvalidTransition, match=f"Only an approved, provisioning or active .* is {status}"):
        ask(demo_org, request)
    assert not AllocationExtension.objects.exists()
    assert not request.events.exists()


def test_an_open_ended_allocation_needs_no_extension(demo_org: DemoOrg) -> None:
    request = running(demo_org, expires_at=None, duration_hours=None)

    with pytest.raises(InvalidTransition, match="no expiry or duration"):
        ask(demo_org, request)


def test_a_duration_is_enough_to_be_extended_before_it_runs(demo_org: DemoOrg) -> None:
    request = running(demo_org, status=RequestStatus.APPROVED, expires_at=None, duration_hours=Decimal("48"))

    assert ask(demo_org, request).status == ExtensionStatus.PENDING


def test_only_one_extension_may_be_pending(demo_org: DemoOrg) -> None:
    request = running(demo_org)
    first = ask(demo_org, request)

    with pytest.raises(ValidationError) as caught:
        ask(demo_org, request, hours=8, user=demo_org.team_lead)

    assert list(caught.value.message_dict) == ["request"]
    assert f"already has a pending extension of 24 h (#{first.pk})" in caught.value.message_dict["request"][0]
    assert request.extensions.count() == 1
    # Once decided, the next one may be asked.
    allocation_extension_decide(extension=first, acting_user=demo_org.approver, approve=False, comment="No.")
    assert ask(demo_org, request, hours=8).hours == Decimal("8")


def test_the_database_keeps_one_pending_extension_per_request(demo_org: DemoOrg) -> None:
    request = running(demo_org)
    AllocationExtension.objects.create(request=request, requested_by=demo_org.member, hours=1, reason="a")
    AllocationExtension.objects.create(
        request=request, requested_by=demo_org.member, hours=1, reason="b", status=ExtensionStatus.REJECTED
    )

    with pytest.raises(IntegrityError), transaction.atomic():
        AllocationExtension.objects.create(request=request, requested_by=demo_org.member, hours=1, reason="c")


@pytest.mark.parametrize(
    ("hours", "message"),
    [
        (0, "more than 0"),
        (-4, "more than 0"),
        ("720.01", "at most 720"),
        (10_000, "at most 720"),
        ("soon", "number of hours"),
        (None, "number of hours"),
        ("NaN", "number of hours"),
        ("1.005", "2 decimal places"),
    ],
)
def test_hours_must_be_a_positive_number_up_to_720(demo_org: DemoOrg, hours: object, message: str) -> None:
    with pytest.raises(ValidationError) as caught:
        ask(demo_org, running(demo_org), hours=hours)

    assert message in " ".join(caught.value.message_dict["hours"])
    assert not AllocationExtension.objects.exists()


def test_720_hours_and_a_fraction_of_an_hour_are_fine(demo_org: DemoOrg) -> None:
    assert ask(demo_org, running(demo_org), hours="720").hours == Decimal("720")
    assert ask(demo_org, running(demo_org), hours=Decimal("0.25")).hours == Decimal("0.25")


def test_a_reason_is_required(demo_org: DemoOrg) -> None:
    with pytest.raises(ValidationError) as caught:
        allocation_extension_request(request=running(demo_org), acting_user=demo_org.member, hours=4, reason="  ")

    assert list(caught.value.message_dict) == ["reason"]


def test_asking_writes_an_event_without_changing_the_status(demo_org: DemoOrg) -> None:
    request = running(demo_org)

    ask(demo_org, request, hours="1.5")

    event = request.events.get()
    assert (event.from_status, event.to_status, event.actor, event.actor_label) == (
        "active",
        "active",
        demo_org.member,
        "member",
    )
    assert event.comment == f"Extension of 1.5 h requested: {REASON}"
    request.refresh_from_db()
    assert request.status == RequestStatus.ACTIVE


def test_approvers_are_emailed_once_it_commits(demo_org: DemoOrg, django_capture_on_commit_callbacks) -> None:
    request = running(demo_org)

    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        ask(demo_org, request)
    assert mail.outbox == []  # nothing leaves before the commit
    for callback in callbacks:
        callback()

    (message,) = mail.outbox
    assert sorted(message.to) == ["approver@example.com", "platform_admin@example.com"]
    assert f"Extension of 24 h asked for request #{request.pk}" in message.subject
    assert REASON in message.body and "Pending extensions" in message.body


def test_the_approver_asking_is_not_emailed_about_it(demo_org: DemoOrg, django_capture_on_commit_callbacks) -> None:
    with django_capture_on_commit_callbacks(execute=True):
        ask(demo_org, running(demo_org), user=demo_org.approver)

    assert mail.outbox[0].to == ["platform_admin@example.com"]


# --- Deciding: who ------------------------------------------------------------------------------------------------

DECIDE_ALLOWED = {"platform_admin": True, "approver": True, "team_lead": False, "member": False, "outsider": False}


@pytest.mark.parametrize("role", ROLES)
@pytest.mark.parametrize("approve", [True, False])
def test_only_platform_approvers_decide(demo_org: DemoOrg, role: str, approve: bool) -> None:
    extension = ask(demo_org, running(demo_org))

    def decide():
        return allocation_extension_decide(
            extension=extension, acting_user=demo_org.user(role), approve=approve, comment="Reason given."
        )

    if DECIDE_ALLOWED[role]:
        decided = decide()
        assert decided.status == ("approved" if approve else "rejected")
        assert (decided.decided_by, decided.decision_comment) == (demo_org.user(role), "Reason given.")
        assert decided.decided_at is not None
    else:
        with pytest.raises(PermissionDenied, match="Only platform approvers"):
            decide()
        extension.refresh_from_db()
        assert extension.status == ExtensionStatus.PENDING


@pytest.mark.parametrize("role", ["approver", "platform_admin"])
def test_approvers_cannot_decide_on_their_own_request(demo_org: DemoOrg, role: str) -> None:
    approver = demo_org.user(role)
    own = GpuRequestFactory(
        team=demo_org.team,
        requester=approver,
        status=RequestStatus.ACTIVE,
        expires_at=timezone.now() + timedelta(hours=5),
    )
    extension = ask(demo_org, own, user=approver)

    for approve in (True, False):
        with pytest.raises(PermissionDenied, match="your own request"):
            allocation_extension_decide(extension=extension, acting_user=approver, approve=approve, comment="x")


def test_an_approver_who_asked_for_a_members_allocation_cannot_approve_it(demo_org: DemoOrg) -> None:
    extension = ask(demo_org, running(demo_org), user=demo_org.approver)

    with pytest.raises(PermissionDenied):
        allocation_extension_decide(extension=extension, acting_user=demo_org.approver, approve=True)
    # Another approver can.
    decided = allocation_extension_decide(extension=extension, acting_user=demo_org.platform_admin, approve=True)
    assert decided.status == ExtensionStatus.APPROVED


# --- Deciding: when -----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("first", [True, False])
def test_only_a_pending_extension_is_decided(demo_org: DemoOrg, first: bool) -> None:
    extension = ask(demo_org, running(demo_org))
    allocation_extension_decide(extension=extension, acting_user=demo_org.approver, approve=first, comment="ok")
    stale = AllocationExtension.objects.get(pk=extension.pk)

    with pytest.raises(InvalidTransition, match=r"was already (approved|rejected); only a pending"):
        allocation_extension_decide(extension=stale, acting_user=demo_org.platform_admin, approve=True)


def test_a_stale_copy_cannot_decide_twice(demo_org: DemoOrg) -> None:
    extension = ask(demo_org, running(demo_org))
    copy = AllocationExtension.objects.get(pk=extension.pk)
    allocation_extension_decide(extension=extension, acting_user=demo_org.approver, approve=True)
    expires_at = GpuRequest.objects.get(pk=extension.request_id).expires_at

    # The copy still says pending; the locked row does not.
    with pytest.raises(InvalidTransition):
        allocation_extension_decide(extension=copy, acting_user=demo_org.platform_admin, approve=True)
    assert GpuRequest.objects.get(pk=extension.request_id).expires_at == expires_at


def test_rejecting_needs_a_comment(demo_org: DemoOrg) -> None:
    extension = ask(demo_org, running(demo_org))

    with pytest.raises(ValidationError) as caught:
        allocation_extension_decide(extension=extension, acting_user=demo_org.approver, approve=False, comment=" ")

    assert list(caught.value.message_dict) == ["comment"]
    extension.refresh_from_db()
    assert extension.status == ExtensionStatus.PENDING


def test_an_allocation_released_meanwhile_cannot_be_extended_but_its_extension_can_be_rejected(
    demo_org: DemoOrg,
) -> None:
    request = running(demo_org)
    extension = ask(demo_org, request)
    gpu_request_release(request=request, acting_user=demo_org.member)

    with pytest.raises(InvalidTransition, match="is released"):
        allocation_extension_decide(extension=extension, acting_user=demo_org.approver, approve=True)
    rejected = allocation_extension_decide(
        extension=extension, acting_user=demo_org.approver, approve=False, comment="It was released."
    )
    assert rejected.status == ExtensionStatus.REJECTED


# --- Approving: the expiry math -----------------------------------------------------------------------------------


def test_approving_adds_the_hours_to_a_future_expiry(demo_org: DemoOrg) -> None:
    request = running(demo_org, hours_left=30)
    before = request.expires_at
    extension = ask(demo_org, request, hours="12.5")

    allocation_extension_decide(extension=extension, acting_user=demo_org.approver, approve=True)

    request.refresh_from_db()
    assert request.expires_at == before + timedelta(hours=12, minutes=30)
    assert request.status == RequestStatus.ACTIVE


def test_approving_counts_from_now_when_the_expiry_has_passed(demo_org: DemoOrg) -> None:
    # Past its expiry but not yet swept by the expiry task: the hours count from now, not from the past.
    request = running(demo_org, hours_left=-3)
    extension = ask(demo_org, request, hours=10)

    start = timezone.now()
    allocation_extension_decide(extension=extension, acting_user=demo_org.approver, approve=True)
    end = timezone.now()

    request.refresh_from_db()
    assert start + timedelta(hours=10) <= request.expires_at <= end + timedelta(hours=10)


def test_approving_rearms_the_day_before_notice(demo_org: DemoOrg, django_capture_on_commit_callbacks) -> None:
    request = running(demo_org, hours_left=20)
    with django_capture_on_commit_callbacks(execute=True):
        assert gpu_requests_expire() == ([], [request.pk])
    request.refresh_from_db()
    assert request.expiry_notified_at is not None
    extension = ask(demo_org, request, hours=48)

    allocation_extension_decide(extension=extension, acting_user=demo_org.approver, approve=True)

    request.refresh_from_db()
    assert request.expiry_notified_at is None
    # Nothing to say until the new expiry is a day away; then the notice goes out again.
    assert gpu_requests_expire() == ([], [])
    later = request.expires_at - timedelta(hours=12)
    with django_capture_on_commit_callbacks(execute=True):
        assert gpu_requests_expire(now=later) == ([], [request.pk])


def test_approving_a_request_not_yet_running_lengthens_its_duration(demo_org: DemoOrg) -> None:
    request = running(demo_org, status=RequestStatus.APPROVED, expires_at=None, duration_hours=Decimal("48"))
    extension = ask(demo_org, request, hours=24)

    allocation_extension_decide(extension=extension, acting_user=demo_org.approver, approve=True)

    request.refresh_from_db()
    assert (request.duration_hours, request.expires_at) == (Decimal("72"), None)
    assert request.events.last().comment == (
        "Extended by 24 h to 72 h in all, counted from activation (approved by approver)."
    )


def test_approving_a_running_request_with_a_duration_keeps_the_duration_in_step(demo_org: DemoOrg) -> None:
    # The Job's activeDeadlineSeconds is rendered from the duration: it grows with the expiry.
    request = running(demo_org, hours_left=10, duration_hours=Decimal("48"))
    before = request.expires_at
    extension = ask(demo_org, request, hours=6)

    allocation_extension_decide(extension=extension, acting_user=demo_org.approver, approve=True)

    request.refresh_from_db()
    assert (request.duration_hours, request.expires_at) == (Decimal("54"), before + timedelta(hours=6))


# --- The timeline and the emails ----------------------------------------------------------------------------------


def test_approval_writes_an_event_on_the_request(demo_org: DemoOrg) -> None:
    request = running(demo_org)
    extension = ask(demo_org, request, hours=24)

    allocation_extension_decide(extension=extension, acting_user=demo_org.approver, approve=True, comment="Fine.")

    request.refresh_from_db()
    event = request.events.last()
    assert (event.from_status, event.to_status, event.actor, event.actor_label) == (
        "active",
        "active",
        demo_org.approver,
        "approver",
    )
    until = f"{request.expires_at:%Y-%m-%d %H:%M} UTC"
    assert event.comment == f"Extended by 24 h until {until} (approved by approver). Fine."


def test_rejection_writes_an_event_and_changes_nothing_else(demo_org: DemoOrg) -> None:
    request = running(demo_org)
    before = request.expires_at
    extension = ask(demo_org, request, hours=8)

    allocation_extension_decide(
        extension=extension, acting_user=demo_org.approver, approve=False, comment="The pool is booked."
    )

    request.refresh_from_db()
    assert request.expires_at == before
    event = request.events.last()
    assert (event.from_status, event.to_status) == ("active", "active")
    assert event.comment == "Extension of 8 h rejected: The pool is booked."


@pytest.mark.parametrize("approve", [True, False])
def test_the_requester_is_emailed_the_decision(demo_org: DemoOrg, approve: bool, django_capture_on_commit_callbacks):
    request = running(demo_org)
    extension = ask(demo_org, request, hours=24)
    mail.outbox.clear()

    with django_capture_on_commit_callbacks(execute=True):
        allocation_extension_decide(
            extension=extension, acting_user=demo_org.approver, approve=approve, comment="Booked until Friday."
        )

    (message,) = mail.outbox
    verdict = "approved" if approve else "rejected"
    assert message.to == ["member@example.com"]
    assert message.subject == f"[GPU Portal] Extension of request #{request.pk} {request.name} was {verdict}"
    assert "extension of 24 hours" in message.body and f"was {verdict} by approver" in message.body
    assert "Booked until Friday." in message.body
    request.refresh_from_db()
    assert f"{request.expires_at:%Y-%m-%d %H:%M}" in message.body


def test_a_lead_who_asked_is_emailed_the_decision_too(demo_org: DemoOrg, django_capture_on_commit_callbacks):
    extension = ask(demo_org, running(demo_org), user=demo_org.team_lead)
    mail.outbox.clear()

    with django_capture_on_commit_callbacks(execute=True):
        allocation_extension_decide(extension=extension, acting_user=demo_org.approver, approve=True)

    assert sorted(mail.outbox[0].to) == ["lead@example.com", "member@example.com"]


# --- The detail page's button -------------------------------------------------------------------------------------


def test_the_extend_action_follows_the_services_rules(demo_org: DemoOrg) -> None:
    request = running(demo_org)
    assert gpu_request_actions(user=demo_org.member, request=request)["extend"] is True
    assert gpu_request_actions(user=demo_org.outsider, request=request)["extend"] is False

    ask(demo_org, request)

    assert gpu_request_actions(user=demo_org.member, request=request)["extend"] is False  # one is pending
    open_ended = running(demo_org, expires_at=None)
    assert gpu_request_actions(user=demo_org.member, request=open_ended)["extend"] is False
    pending = running(demo_org, status=RequestStatus.PENDING_APPROVAL)
    assert gpu_request_actions(user=demo_org.member, request=pending)["extend"] is False


@pytest.mark.parametrize(("hours", "text"), [(Decimal("24.00"), "24"), (Decimal("1.50"), "1.5"), (720, "720")])
def test_hours_read_as_people_write_them(hours: Decimal, text: str) -> None:
    assert hours_text(hours) == text
