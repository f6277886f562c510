"""Extensions in the browser: the form and the extensions on the request page, asking through it, and the
"Pending extensions" section of the approval queue with its approve and reject buttons."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from allocations.approvals.pending_queues import pending_extensions_queue
from allocations.models import AllocationExtension, ExtensionStatus, GpuRequest, RequestStatus
from allocations.requests.extension_services import allocation_extension_decide, allocation_extension_request
from tests.factories import ROLES, DemoOrg, GpuRequestFactory, MembershipFactory, UserFactory

pytestmark = pytest.mark.django_db

FORM_ACTION = 'id="extension-form"'


def client_for(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def messages_of(response) -> list[str]:
    return [str(m) for m in response.context["messages"]] if response.context else []


def running(org: DemoOrg, **fields) -> GpuRequest:
    fields.setdefault("expires_at", timezone.now() + timedelta(hours=30))
    fields.setdefault("status", RequestStatus.ACTIVE)
    return GpuRequestFactory(team=org.team, requester=org.member, **fields)


def ask(org: DemoOrg, request: GpuRequest, hours: int = 24, reason: str = "Needs a day more.") -> AllocationExtension:
    return allocation_extension_request(request=request, acting_user=org.member, hours=hours, reason=reason)


def detail(request: GpuRequest) -> str:
    return reverse("allocations:request-detail", args=[request.pk])


def extend(request: GpuRequest) -> str:
    return reverse("allocations:request-extend", args=[request.pk])


def review(extension: AllocationExtension) -> str:
    return reverse("allocations:extension-review", args=[extension.pk])


# --- The request page ---------------------------------------------------------------------------------------------

SEES_FORM = {"platform_admin": True, "approver": True, "team_lead": True, "member": True}


@pytest.mark.parametrize("role", ROLES)
def test_the_form_shows_for_who_may_ask(demo_org: DemoOrg, role: str) -> None:
    request = running(demo_org)

    response = client_for(demo_org.user(role)).get(detail(request))

    if role == "outsider":
        assert response.status_code == 404
        return
    html = response.content.decode()
    assert (FORM_ACTION in html) is SEES_FORM[role]
    assert f'action="{extend(request)}"' in html
    assert "Request an extension" in html and 'name="hours"' in html and 'name="reason"' in html
    assert "Expires " in html


def test_no_form_for_a_colleague_who_is_not_the_requester(demo_org: DemoOrg) -> None:
    colleague = UserFactory(username="colleague")
    MembershipFactory(user=colleague, team=demo_org.team)

    html = client_for(colleague).get(detail(running(demo_org))).content.decode()

    assert FORM_ACTION not in html


@pytest.mark.parametrize(
    "fields",
    [{"status": RequestStatus.PENDING_APPROVAL}, {"status": RequestStatus.RELEASED}, {"expires_at": None}],
)
def test_no_form_when_the_request_cannot_be_extended(demo_org: DemoOrg, fields: dict) -> None:
    html = client_for(demo_org.member).get(detail(running(demo_org, **fields))).content.decode()

    assert FORM_ACTION not in html
    assert 'id="extensions"' not in html  # no extensions either: the section is left out


def test_a_pending_extension_is_shown_with_its_status_instead_of_the_form(demo_org: DemoOrg) -> None:
    request = running(demo_org)
    extension = ask(demo_org, request, hours=12, reason="Final epoch.")

    html = client_for(demo_org.member).get(detail(request)).content.decode()

    assert FORM_ACTION not in html
    assert f'id="extension-{extension.pk}"' in html
    assert "Final epoch." in html and ">12<" in html
    assert 'class="status status-pending_approval">Pending<' in html
    assert "Waiting for a platform approver." in html
    assert "Extension of 12 h requested: Final epoch." in html  # the timeline


def test_decided_extensions_show_who_decided_and_why(demo_org: DemoOrg) -> None:
    request = running(demo_org)
    extension = ask(demo_org, request)
    allocation_extension_decide(extension=extension, acting_user=demo_org.approver, approve=False, comment="Booked.")

    html = client_for(demo_org.member).get(detail(request)).content.decode()

    assert 'class="status status-rejected">Rejected<' in html
    assert "Booked." in html and "approver" in html
    assert FORM_ACTION in html  # nothing pending: another one may be asked


def test_approvers_can_decide_on_the_request_page(demo_org: DemoOrg) -> None:
    request = running(demo_org)
    extension = ask(demo_org, request)

    html = client_for(demo_org.approver).get(detail(request)).content.decode()

    assert f'action="{review(extension)}"' in html


# --- Asking -------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("role", ["member", "team_lead", "approver", "platform_admin"])
def test_asking_through_the_form(demo_org: DemoOrg, role: str) -> None:
    request = running(demo_org)

    response = client_for(demo_org.user(role)).post(
        extend(request), {"hours": "36", "reason": "Eval runs late."}, follow=True
    )

    assert response.redirect_chain == [(detail(request), 302)]
    extension = request.extensions.get()
    assert (extension.hours, extension.reason, extension.requested_by) == (36, "Eval runs late.", demo_org.user(role))
    assert f"Extension of 36 h asked for request #{request.pk}" in " ".join(messages_of(response))


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        ({"hours": "", "reason": "x"}, "Hours to add: This field is required."),
        ({"hours": "0", "reason": "x"}, "Hours to add: Ensure this value is greater than or equal to 0.01."),
        ({"hours": "721", "reason": "x"}, "Hours to add: Ensure this value is less than or equal to 720."),
        ({"hours": "4", "reason": ""}, "Reason: This field is required."),
    ],
)
def test_a_bad_form_says_why_and_asks_nothing(demo_org: DemoOrg, data: dict, expected: str) -> None:
    request = running(demo_org)

    response = client_for(demo_org.member).post(extend(request), data, follow=True)

    assert expected in messages_of(response)
    assert not request.extensions.exists()


def test_the_services_refusal_is_a_message(demo_org: DemoOrg) -> None:
    request = running(demo_org)
    ask(demo_org, request)

    response = client_for(demo_org.member).post(extend(request), {"hours": "2", "reason": "again"}, follow=True)

    assert any("already has a pending extension" in m for m in messages_of(response))
    assert request.extensions.count() == 1


def test_asking_for_a_request_that_is_not_running_is_a_message(demo_org: DemoOrg) -> None:
    request = running(demo_org, status=RequestStatus.PENDING_APPROVAL)

    response = client_for(demo_org.member).post(extend(request), {"hours": "2", "reason": "x"}, follow=True)

    assert any("Only an approved, provisioning or active" in m for m in messages_of(response))


def test_others_cannot_ask(demo_org: DemoOrg) -> None:
    request = running(demo_org)
    colleague = UserFactory(username="colleague")
    MembershipFactory(user=colleague, team=demo_org.team)
    data = {"hours": "2", "reason": "x"}

    assert client_for(demo_org.outsider).post(extend(request), data).status_code == 404
    assert client_for(colleague).post(extend(request), data).status_code == 403
    assert client_for(demo_org.member).get(extend(request)).status_code == 405
    assert Client().post(extend(request), data).status_code == 302  # to the sign-in page
    assert not request.extensions.exists()


# --- The approval queue -------------------------------------------------------------------------------------------


def test_the_queue_reads_pending_extensions_oldest_first_by_team(demo_org: DemoOrg, django_assert_num_queries) -> None:
    # Pending ones only, of every team for an approver (of one when asked), with the request, its team and who asked
    # read with the rows; what is decided since is gone at once.
    first = ask(demo_org, running(demo_org, name="first-job"), hours=12)
    other = GpuRequestFactory(
        team=demo_org.other_team,
        requester=demo_org.outsider,
        status=RequestStatus.ACTIVE,
        expires_at=timezone.now() + timedelta(hours=5),
    )
    theirs = allocation_extension_request(request=other, acting_user=demo_org.outsider, hours=3, reason="Theirs.")
    decided = ask(demo_org, running(demo_org, name="decided-job"))
    allocation_extension_decide(extension=decided, acting_user=demo_org.approver, approve=False, comment="No.")
    later = ask(demo_org, running(demo_org, name="later-job"), hours=2)

    queued = pending_extensions_queue(user=demo_org.approver)  # reads the approver's permissions (kept on the user)
    with django_assert_num_queries(1):  # the related objects come with the rows, none read later
        rows = list(queued)
        printed = [(ext.request.name, ext.request.team.slug, ext.requested_by.username) for ext in rows]
    assert [ext.pk for ext in rows] == [first.pk, theirs.pk, later.pk]
    assert printed[0] == ("first-job", demo_org.team.slug, demo_org.member.username)
    assert printed[1] == (other.name, demo_org.other_team.slug, demo_org.outsider.username)
    assert [ext.pk for ext in pending_extensions_queue(user=demo_org.approver, team_id=demo_org.team.pk)] == [
        first.pk,
        later.pk,
    ]

    allocation_extension_decide(extension=first, acting_user=demo_org.approver, approve=True)
    assert [ext.pk for ext in pending_extensions_queue(user=demo_org.approver)] == [theirs.pk, later.pk]
    assert not pending_extensions_queue(user=demo_org.member).exists()


def test_the_queue_lists_pending_extensions_oldest_first(demo_org: DemoOrg) -> None:
    first = ask(demo_org, running(demo_org, name="first-job"), hours=12, reason="Final epoch.")
    second = ask(demo_org, running(demo_org, name="second-job"), hours=6, reason="Eval.")
    decided = ask(demo_org, running(demo_org, name="decided-job"))
    allocation_extension_decide(extension=decided, acting_user=demo_org.approver, approve=True)

    response = client_for(demo_org.approver).get(reverse("allocations:approvals"))

    assert [ext.pk for ext in response.context["extension_rows"]] == [first.pk, second.pk]
    html = response.content.decode()
    assert "Pending extensions" in html and "Nothing waits for approval" not in html
    section = html[html.index('id="pending-extensions"') :]
    assert "first-job" in section and "Vision" in section and "Final epoch." in section and "+12" in section
    assert f"{first.request.expires_at:%Y-%m-%d %H:%M} UTC" in section
    assert f'action="{review(first)}"' in section and "decided-job" not in section


def test_the_queue_does_not_offer_approvers_their_own_extensions(demo_org: DemoOrg) -> None:
    extension = allocation_extension_request(
        request=running(demo_org), acting_user=demo_org.approver, hours=1, reason="x"
    )

    html = client_for(demo_org.approver).get(reverse("allocations:approvals")).content.decode()

    assert f'action="{review(extension)}"' not in html
    assert "Your own request: another approver reviews it." in html


def test_the_queue_is_empty_without_pending_extensions(demo_org: DemoOrg) -> None:
    html = client_for(demo_org.approver).get(reverse("allocations:approvals")).content.decode()

    assert "Nothing waits for approval" in html and "Pending extensions" not in html


def test_the_queue_stays_for_approvers_only(demo_org: DemoOrg) -> None:
    ask(demo_org, running(demo_org))

    assert client_for(demo_org.team_lead).get(reverse("allocations:approvals")).status_code == 403


# --- Reviewing an extension ---------------------------------------------------------------------------------------


def test_approving_from_the_queue_moves_the_expiry(demo_org: DemoOrg) -> None:
    request = running(demo_org)
    before = request.expires_at
    extension = ask(demo_org, request, hours=24)

    response = client_for(demo_org.approver).post(
        review(extension), {"decision": "approve", "comment": "Go."}, follow=True
    )

    assert response.redirect_chain == [(reverse("allocations:approvals"), 302)]
    assert f"Extension of 24 h of request #{request.pk} was approved." in messages_of(response)
    request.refresh_from_db()
    extension.refresh_from_db()
    assert (extension.status, extension.decision_comment) == (ExtensionStatus.APPROVED, "Go.")
    assert request.expires_at == before + timedelta(hours=24)


def test_rejecting_from_the_request_page_goes_back_there(demo_org: DemoOrg) -> None:
    request = running(demo_org)
    extension = ask(demo_org, request)

    response = client_for(demo_org.approver).post(
        review(extension), {"decision": "reject", "comment": "Booked.", "next": detail(request)}, follow=True
    )

    assert response.redirect_chain == [(detail(request), 302)]
    extension.refresh_from_db()
    assert extension.status == ExtensionStatus.REJECTED


def test_a_rejection_without_a_comment_is_refused_with_a_message(demo_org: DemoOrg) -> None:
    extension = ask(demo_org, running(demo_org))

    response = client_for(demo_org.approver).post(review(extension), {"decision": "reject"}, follow=True)

    assert any("Say why the extension is rejected" in m for m in messages_of(response))
    extension.refresh_from_db()
    assert extension.status == ExtensionStatus.PENDING


def test_reviewing_twice_is_a_message(demo_org: DemoOrg) -> None:
    extension = ask(demo_org, running(demo_org))
    client = client_for(demo_org.approver)
    client.post(review(extension), {"decision": "approve"})

    response = client.post(review(extension), {"decision": "approve"}, follow=True)

    assert any("was already approved" in m for m in messages_of(response))


def test_reviewing_without_a_decision_is_a_message(demo_org: DemoOrg) -> None:
    extension = ask(demo_org, running(demo_org))

    response = client_for(demo_org.approver).post(review(extension), {"comment": "hm"}, follow=True)

    assert "Choose approve or reject." in messages_of(response)


@pytest.mark.parametrize("role", ["team_lead", "member", "outsider"])
def test_only_approvers_review(demo_org: DemoOrg, role: str) -> None:
    extension = ask(demo_org, running(demo_org))

    response = client_for(demo_org.user(role)).post(review(extension), {"decision": "approve"})

    assert response.status_code == 403
    extension.refresh_from_db()
    assert extension.status == ExtensionStatus.PENDING


def test_reviewing_an_unknown_extension_is_404(demo_org: DemoOrg) -> None:
    response = client_for(demo_org.approver).post(reverse("allocations:extension-review", args=[999999]))

    assert response.status_code == 404
