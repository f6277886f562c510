"""POST /api/v1/requests/{id}/extend/, GET .../extensions/, /api/v1/extensions/ and their approve|reject actions:
the role matrix, other teams' objects as 404, and the services' errors as 400 and 409."""

from __future__ import annotations

from datetime import timedelta
from decimal import Decimal

import pytest
import yaml
from django.core.management import call_command
from django.utils import timezone

from allocations.models import AllocationExtension, ExtensionStatus, GpuRequest, RequestStatus
from allocations.requests.extension_services import allocation_extension_decide, allocation_extension_request
from tests.factories import ROLES, DemoOrg, GpuRequestFactory

pytestmark = pytest.mark.django_db

BODY = {"hours": 24, "reason": "The sweep needs another day."}
# Asking: the requester (member), a lead of the team, or a platform approver; the outsider cannot see the request.
EXTEND_STATUS = {"platform_admin": 201, "approver": 201, "team_lead": 201, "member": 201, "outsider": 404}
# Deciding: platform approvers; the team's lead and member may see the extension but not decide it.
DECIDE_STATUS = {"platform_admin": 200, "approver": 200, "team_lead": 403, "member": 403, "outsider": 404}
SEE_STATUS = {"platform_admin": 200, "approver": 200, "team_lead": 200, "member": 200, "outsider": 404}


def running(org: DemoOrg, team=None, **fields) -> GpuRequest:
    fields.setdefault("expires_at", timezone.now() + timedelta(hours=30))
    fields.setdefault("status", RequestStatus.ACTIVE)
    return GpuRequestFactory(team=team or org.team, requester=org.member if team is None else org.outsider, **fields)


def pending_extension(org: DemoOrg, request: GpuRequest | None = None, hours: int = 24) -> AllocationExtension:
    return allocation_extension_request(
        request=request or running(org), acting_user=org.member, hours=hours, reason="More time."
    )


def extend_url(request: GpuRequest) -> str:
    return f"/api/v1/requests/{request.pk}/extend/"


def decide_url(extension: AllocationExtension, action: str) -> str:
    return f"/api/v1/extensions/{extension.pk}/{action}/"


# --- POST /api/v1/requests/{id}/extend/ -------------------------------------------------------------------------


@pytest.mark.parametrize("role", ROLES)
def test_extend_role_matrix(client_as, demo_org, role):
    request = running(demo_org)

    response = client_as(role).post(extend_url(request), BODY, format="json")

    assert response.status_code == EXTEND_STATUS[role], response.content
    if response.status_code == 201:
        body = response.json()
        assert body["request"] == request.pk
        assert (body["hours"], body["reason"], body["status"]) == (24, BODY["reason"], "pending")
        assert body["requested_by"] == demo_org.user(role).username
        assert (body["decided_by"], body["decided_at"], body["decision_comment"]) == (None, None, "")
        assert body["request_status"] == "active"
        assert body["request_expires_at"] is not None
        assert request.extensions.get().pk == body["id"]
    else:
        assert not request.extensions.exists()


def test_extending_another_teams_request_is_404_even_for_its_shape(client_as, demo_org):
    theirs = running(demo_org, team=demo_org.other_team)

    for body in (BODY, {}):
        assert client_as("member").post(extend_url(theirs), body, format="json").status_code == 404
    assert client_as("member").post("/api/v1/requests/abc/extend/", BODY, format="json").status_code == 404


def test_a_member_who_is_not_the_requester_gets_403(client_as, demo_org):
    leads = GpuRequestFactory(
        team=demo_org.team,
        requester=demo_org.team_lead,
        status=RequestStatus.ACTIVE,
        expires_at=timezone.now() + timedelta(hours=3),
    )

    response = client_as("member").post(extend_url(leads), BODY, format="json")

    assert response.status_code == 403
    assert "requester" in response.json()["detail"]


@pytest.mark.parametrize(
    ("body", "fields"),
    [
        ({}, {"hours", "reason"}),
        ({"hours": 0, "reason": "x"}, {"hours"}),
        ({"hours": -1, "reason": "x"}, {"hours"}),
        ({"hours": 721, "reason": "x"}, {"hours"}),
        ({"hours": "1.005", "reason": "x"}, {"hours"}),
        ({"hours": "soon", "reason": "x"}, {"hours"}),
        ({"hours": 4, "reason": ""}, {"reason"}),
        ({"hours": 4, "reason": "   "}, {"reason"}),
        ({"hours": 4, "reason": "a\x00b"}, {"reason"}),
    ],
)
def test_extend_with_a_bad_body_is_400_naming_the_fields(client_as, demo_org, body, fields):
    request = running(demo_org)

    response = client_as("member").post(extend_url(request), body, format="json")

    assert response.status_code == 400
    assert set(response.json()) == fields
    assert not request.extensions.exists()


def test_hours_as_a_string_with_two_decimals_are_fine(client_as, demo_org):
    response = client_as("member").post(extend_url(running(demo_org)), {"hours": "0.25", "reason": "x"}, format="json")

    assert response.status_code == 201
    assert response.json()["hours"] == 0.25


def test_a_second_pending_extension_is_400_naming_request(client_as, demo_org):
    request = running(demo_org)
    client = client_as("member")
    assert client.post(extend_url(request), BODY, format="json").status_code == 201

    response = client.post(extend_url(request), {"hours": 2, "reason": "x"}, format="json")

    assert response.status_code == 400
    assert "already has a pending extension of 24 h" in response.json()["request"][0]


@pytest.mark.parametrize(
    ("fields", "expected"),
    [
        ({"status": RequestStatus.PENDING_APPROVAL}, "is pending_approval"),
        ({"status": RequestStatus.RELEASED}, "is released"),
        ({"expires_at": None, "duration_hours": None}, "no expiry or duration"),
    ],
)
def test_extending_what_cannot_be_extended_is_409(client_as, demo_org, fields, expected):
    request = running(demo_org, **fields)

    response = client_as("member").post(extend_url(request), BODY, format="json")

    assert response.status_code == 409
    assert expected in response.json()["detail"]


def test_extend_needs_authentication(api_client, demo_org):
    response = api_client.post(extend_url(running(demo_org)), BODY, format="json")

    assert response.status_code in (401, 403)
    assert not AllocationExtension.objects.exists()


# --- GET /api/v1/requests/{id}/extensions/ and /api/v1/extensions/ ----------------------------------------------


@pytest.mark.parametrize("role", ROLES)
def test_a_requests_extensions_by_role(client_as, demo_org, role):
    request = running(demo_org)
    first = pending_extension(demo_org, request, hours=4)
    allocation_extension_decide(extension=first, acting_user=demo_org.approver, approve=False, comment="No.")
    second = pending_extension(demo_org, request, hours=2)

    response = client_as(role).get(f"/api/v1/requests/{request.pk}/extensions/")

    assert response.status_code == SEE_STATUS[role]
    if response.status_code == 200:
        rows = response.json()
        assert [row["id"] for row in rows] == [second.pk, first.pk]  # newest first
        assert [row["status"] for row in rows] == ["pending", "rejected"]
        assert (rows[1]["decided_by"], rows[1]["decision_comment"]) == ("approver", "No.")


def test_the_extension_list_is_scoped_to_visible_requests(client_as, demo_org):
    ours = pending_extension(demo_org)
    theirs = allocation_extension_request(
        request=running(demo_org, team=demo_org.other_team), acting_user=demo_org.outsider, hours=1, reason="x"
    )

    def ids(role: str, query: str = "") -> list[int]:
        response = client_as(role).get(f"/api/v1/extensions/{query}")
        assert response.status_code == 200
        return [row["id"] for row in response.json()["results"]]

    assert ids("member") == [ours.pk]
    assert ids("outsider") == [theirs.pk]
    assert sorted(ids("approver")) == sorted([ours.pk, theirs.pk])
    allocation_extension_decide(extension=theirs, acting_user=demo_org.approver, approve=True)
    assert ids("approver", "?status=pending") == [ours.pk]
    assert ids("approver", "?status=approved") == [theirs.pk]


@pytest.mark.parametrize("role", ROLES)
def test_one_extension_by_role(client_as, demo_org, role):
    extension = pending_extension(demo_org)

    response = client_as(role).get(f"/api/v1/extensions/{extension.pk}/")

    assert response.status_code == SEE_STATUS[role]


def test_a_bad_status_filter_is_400(client_as, demo_org):
    response = client_as("approver").get("/api/v1/extensions/?status=maybe")

    assert response.status_code == 400
    assert "status" in response.json()


def test_the_extension_list_has_a_query_budget(client_as, demo_org, django_assert_max_num_queries):
    for _ in range(5):
        pending_extension(demo_org)
    client = client_as("approver")

    with django_assert_max_num_queries(8):
        response = client.get("/api/v1/extensions/")

    assert response.json()["count"] == 5


# --- POST /api/v1/extensions/{id}/approve|reject/ ----------------------------------------------------------------


@pytest.mark.parametrize("role", ROLES)
def test_approve_role_matrix(client_as, demo_org, role):
    request = running(demo_org)
    before = request.expires_at
    extension = pending_extension(demo_org, request, hours=24)

    response = client_as(role).post(decide_url(extension, "approve"), {"comment": "ok"}, format="json")

    assert response.status_code == DECIDE_STATUS[role], response.content
    request.refresh_from_db()
    extension.refresh_from_db()
    if response.status_code == 200:
        body = response.json()
        assert (body["status"], body["decided_by"], body["decision_comment"]) == ("approved", role, "ok")
        assert request.expires_at == before + timedelta(hours=24)
        assert body["request_expires_at"] == request.expires_at.isoformat().replace("+00:00", "Z")
    else:
        assert extension.status == ExtensionStatus.PENDING
        assert request.expires_at == before
    if response.status_code == 403:
        assert "approvers" in response.json()["detail"]


@pytest.mark.parametrize("role", ROLES)
def test_reject_role_matrix(client_as, demo_org, role):
    extension = pending_extension(demo_org)

    response = client_as(role).post(decide_url(extension, "reject"), {"comment": "Pool booked."}, format="json")

    assert response.status_code == DECIDE_STATUS[role], response.content
    extension.refresh_from_db()
    expected = ExtensionStatus.REJECTED if response.status_code == 200 else ExtensionStatus.PENDING
    assert extension.status == expected


def test_approving_a_request_with_only_a_duration_lengthens_it(client_as, demo_org):
    request = running(demo_org, status=RequestStatus.APPROVED, expires_at=None, duration_hours=Decimal("48"))
    extension = pending_extension(demo_org, request, hours=12)

    response = client_as("approver").post(decide_url(extension, "approve"), {}, format="json")

    assert response.status_code == 200
    assert (response.json()["request_expires_at"], response.json()["request_duration_hours"]) == (None, 60)


@pytest.mark.parametrize("role", ["approver", "platform_admin"])
def test_approvers_cannot_decide_on_their_own_request(client_as, demo_org, role):
    own = GpuRequestFactory(
        team=demo_org.team,
        requester=demo_org.user(role),
        status=RequestStatus.ACTIVE,
        expires_at=timezone.now() + timedelta(hours=3),
    )
    extension = allocation_extension_request(request=own, acting_user=demo_org.user(role), hours=1, reason="x")

    for action in ("approve", "reject"):
        response = client_as(role).post(decide_url(extension, action), {"comment": "mine"}, format="json")
        assert response.status_code == 403
        assert "own request" in response.json()["detail"]


def test_rejecting_needs_a_reason(client_as, demo_org):
    response = client_as("approver").post(decide_url(pending_extension(demo_org), "reject"), {}, format="json")

    assert response.status_code == 400
    assert "comment" in response.json()


def test_deciding_twice_is_409(client_as, demo_org):
    extension = pending_extension(demo_org)
    client = client_as("approver")
    assert client.post(decide_url(extension, "approve"), {}, format="json").status_code == 200

    for action in ("approve", "reject"):
        response = client.post(decide_url(extension, action), {"comment": "again"}, format="json")
        assert response.status_code == 409
        assert "was already approved" in response.json()["detail"]


def test_approving_after_the_allocation_ended_is_409(client_as, demo_org):
    extension = pending_extension(demo_org)
    GpuRequest.objects.filter(pk=extension.request_id).update(status=RequestStatus.EXPIRED)

    response = client_as("approver").post(decide_url(extension, "approve"), {}, format="json")

    assert response.status_code == 409
    assert "is expired" in response.json()["detail"]


def test_deciding_an_unknown_extension_is_404(client_as, demo_org):
    for path in ("/api/v1/extensions/999999/approve/", "/api/v1/extensions/x/reject/"):
        assert client_as("approver").post(path, {"comment": "x"}, format="json").status_code == 404


# --- The schema ---------------------------------------------------------------------------------------------------


def test_the_schema_documents_the_extension_endpoints(tmp_path):
    target = tmp_path / "schema.yaml"
    call_command("spectacular", "--validate", "--fail-on-warn", "--file", str(target))
    paths = yaml.safe_load(target.read_text())["paths"]

    assert paths["/api/v1/requests/{id}/extend/"]["post"]["responses"].keys() >= {"201", "400", "403", "404", "409"}
    assert "200" in paths["/api/v1/requests/{id}/extensions/"]["get"]["responses"]
    for action in ("approve", "reject"):
        responses = paths[f"/api/v1/extensions/{{id}}/{action}/"]["post"]["responses"]
        assert responses.keys() >= {"200", "400", "403", "404", "409"}
    assert {"/api/v1/extensions/", "/api/v1/extensions/{id}/"} <= paths.keys()
