"""POST /api/v1/requests/{id}/approve|reject|cancel|release/: the role matrix and the services' errors over HTTP."""

from __future__ import annotations

import pytest

from allocations.models import RequestEvent, RequestStatus
from allocations.requests.services import gpu_request_approve
from tests.factories import ROLES, GpuRequestFactory

pytestmark = pytest.mark.django_db

# The request is the member's, in team vision. Approvers (and the staff admin) review; the lead and the member may
# not; the outsider cannot see the request at all (404, as if it did not exist).
APPROVE_STATUS = {"platform_admin": 202, "approver": 202, "team_lead": 403, "member": 403, "outsider": 404}
REJECT_STATUS = {"platform_admin": 200, "approver": 200, "team_lead": 403, "member": 403, "outsider": 404}
# Cancel and release: the requester, a lead of the team, or a platform approver.
WITHDRAW_STATUS = {"platform_admin": 200, "approver": 200, "team_lead": 200, "member": 200, "outsider": 404}


def url(request, action: str) -> str:
    return f"/api/v1/requests/{request.pk}/{action}/"


@pytest.mark.parametrize("role", ROLES)
def test_approve_role_matrix(client_as, submit, role):
    request = submit()

    response = client_as(role).post(url(request, "approve"), {"comment": "ok"}, format="json")

    assert response.status_code == APPROVE_STATUS[role], response.content
    request.refresh_from_db()
    if response.status_code == 202:
        assert response.json()["status"] == RequestStatus.APPROVED
        assert request.status == RequestStatus.APPROVED
        assert request.events.last().comment == "ok"
    else:
        assert request.status == RequestStatus.PENDING_APPROVAL
    if response.status_code == 403:
        assert "approvers" in response.json()["detail"]


@pytest.mark.parametrize("role", ROLES)
def test_reject_role_matrix(client_as, submit, role):
    request = submit()

    response = client_as(role).post(url(request, "reject"), {"comment": "Use the A30 pool."}, format="json")

    assert response.status_code == REJECT_STATUS[role], response.content
    request.refresh_from_db()
    expected = RequestStatus.REJECTED if response.status_code == 200 else RequestStatus.PENDING_APPROVAL
    assert request.status == expected


@pytest.mark.parametrize("role", ROLES)
def test_cancel_role_matrix(client_as, submit, role):
    request = submit()

    response = client_as(role).post(url(request, "cancel"), {"comment": "not needed"}, format="json")

    assert response.status_code == WITHDRAW_STATUS[role], response.content
    request.refresh_from_db()
    expected = RequestStatus.RELEASED if response.status_code == 200 else RequestStatus.PENDING_APPROVAL
    assert request.status == expected


@pytest.mark.parametrize("role", ROLES)
def test_release_role_matrix(client_as, submit, demo_org, role):
    request = gpu_request_approve(request=submit(), acting_user=demo_org.approver)

    response = client_as(role).post(url(request, "release"), {}, format="json")

    assert response.status_code == WITHDRAW_STATUS[role], response.content
    request.refresh_from_db()
    expected = RequestStatus.RELEASED if response.status_code == 200 else RequestStatus.APPROVED
    assert request.status == expected


@pytest.mark.parametrize("role", ["approver", "platform_admin"])
def test_approver_cannot_approve_or_reject_own_request(client_as, demo_org, role):
    own = GpuRequestFactory(team=demo_org.team, requester=demo_org.user(role))
    client = client_as(role)

    for action in ("approve", "reject"):
        response = client.post(url(own, action), {"comment": "mine"}, format="json")
        assert response.status_code == 403
        assert "own request" in response.json()["detail"]
    own.refresh_from_db()
    assert own.status == RequestStatus.PENDING_APPROVAL


def test_member_cannot_cancel_or_release_the_leads_request(client_as, submit, demo_org):
    leads = submit(user=demo_org.team_lead)

    response = client_as("member").post(url(leads, "cancel"), {}, format="json")

    assert response.status_code == 403
    assert "requester" in response.json()["detail"]


def test_lead_can_cancel_and_release_team_requests(client_as, submit, demo_org):
    lead = client_as("team_lead")
    pending, running = submit(name="a"), submit(name="b")
    gpu_request_approve(request=running, acting_user=demo_org.approver)

    assert lead.post(url(pending, "cancel"), {}, format="json").status_code == 200
    assert lead.post(url(running, "release"), {}, format="json").status_code == 200

    event = RequestEvent.objects.filter(request=running).last()
    assert (event.to_status, event.actor_label) == (RequestStatus.RELEASED, "lead")


def test_approving_twice_is_409_with_a_clear_message(client_as, submit):
    request = submit()
    client = client_as("approver")
    assert client.post(url(request, "approve"), {}, format="json").status_code == 202

    response = client.post(url(request, "approve"), {}, format="json")

    assert response.status_code == 409
    assert "is approved; it cannot move to approved" in response.json()["detail"]


def test_rejecting_a_released_request_is_409(client_as, submit):
    request = submit()
    assert client_as("member").post(url(request, "cancel"), {}, format="json").status_code == 200

    response = client_as("approver").post(url(request, "reject"), {"comment": "late"}, format="json")

    assert response.status_code == 409
    assert "final" in response.json()["detail"]


def test_reject_needs_a_reason(client_as, submit):
    response = client_as("approver").post(url(submit(), "reject"), {"comment": "  "}, format="json")

    assert response.status_code == 400
    assert "comment" in response.json()


@pytest.mark.parametrize(("action", "expected"), [("cancel", "release it instead"), ("release", "can be released")])
def test_wrong_status_for_withdrawal_is_a_409_conflict_like_approval(client_as, submit, demo_org, action, expected):
    request = submit()
    if action == "cancel":
        gpu_request_approve(request=request, acting_user=demo_org.approver)

    response = client_as("member").post(url(request, action), {}, format="json")

    assert response.status_code == 409
    assert expected in response.json()["detail"]


def test_approval_rechecks_the_quota(client_as, submit, demo_org):
    first, second = submit(gpu_count=6, gpu_memory_gb=80, name="a"), submit(gpu_count=4, gpu_memory_gb=80, name="b")
    client = client_as("approver")
    assert client.post(url(first, "approve"), {}, format="json").status_code == 202

    response = client.post(url(second, "approve"), {}, format="json")

    assert response.status_code == 400
    [message] = response.json()["quota"]
    assert "may hold 8" in message
    assert "6 in use" in message
    assert "4 asked" in message


def test_comment_must_be_a_string(client_as, submit):
    response = client_as("approver").post(url(submit(), "approve"), {"comment": ["a", "b"]}, format="json")

    assert response.status_code == 400
    assert "comment" in response.json()


def test_actions_on_unknown_requests_are_404(client_as, demo_org):
    assert client_as("approver").post("/api/v1/requests/999999/approve/", {}, format="json").status_code == 404
