"""POST /api/v1/requests/{id}/resume/ and /keep/: the role matrix, the quota on resume, keep once per window."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from allocations.models import GpuRequest, RequestEvent, RequestStatus, SlaTier
from tests.factories import ROLES, GpuRequestFactory

pytestmark = pytest.mark.django_db

# The requester (the member), a lead of the team or a platform approver; the outsider cannot see it (404).
RESUME_STATUS = {"platform_admin": 202, "approver": 202, "team_lead": 202, "member": 202, "outsider": 404}
KEEP_STATUS = {"platform_admin": 200, "approver": 200, "team_lead": 200, "member": 200, "outsider": 404}


def notebook(org, status: str = RequestStatus.SUSPENDED, units: int = 1, workload_type: str = "development"):
    request = GpuRequestFactory(
        team=org.team,
        requester=org.member,
        workload_type=workload_type,
        sla_tier=SlaTier.objects.get(slug="tier3_development"),
        status=status,
        cluster=org.cluster,
        node_pool=org.pool,
        resource_units=units,
    )
    if status == RequestStatus.SUSPENDED:
        GpuRequest.objects.filter(pk=request.pk).update(suspended_at=timezone.now(), activated_at=timezone.now())
    return request


def url(request, action: str) -> str:
    return f"/api/v1/requests/{request.pk}/{action}/"


@pytest.mark.parametrize("role", ROLES)
def test_resume_role_matrix(demo_org, client_as, role) -> None:
    request = notebook(demo_org)

    response = client_as(role).post(url(request, "resume"), {"comment": "back to work"}, format="json")

    assert response.status_code == RESUME_STATUS[role], response.content
    request.refresh_from_db()
    if response.status_code == 202:
        assert response.json()["status"] == RequestStatus.PROVISIONING
        assert request.suspended_at is None
        assert request.events.last().comment == "back to work"
    else:
        assert request.status == RequestStatus.SUSPENDED


def test_resume_is_refused_when_the_quota_no_longer_fits(demo_org, client_as) -> None:
    request = notebook(demo_org, units=2)
    notebook(demo_org, status=RequestStatus.ACTIVE, units=7)  # the team's 8 GPUs: 7 held by another request

    response = client_as("member").post(url(request, "resume"), {}, format="json")

    assert response.status_code == 400
    assert "quota" in response.json()
    request.refresh_from_db()
    assert request.status == RequestStatus.SUSPENDED


def test_only_a_suspended_request_is_resumed(demo_org, client_as) -> None:
    request = notebook(demo_org, status=RequestStatus.ACTIVE)
    response = client_as("member").post(url(request, "resume"), {}, format="json")
    assert response.status_code == 409
    assert "Only a suspended request can be resumed" in response.json()["detail"]


@pytest.mark.parametrize("role", ROLES)
def test_keep_role_matrix(demo_org, client_as, role) -> None:
    request = notebook(demo_org, status=RequestStatus.ACTIVE)
    GpuRequest.objects.filter(pk=request.pk).update(idle_warned_at=timezone.now())

    response = client_as(role).post(url(request, "keep"), {}, format="json")

    assert response.status_code == KEEP_STATUS[role], response.content
    request.refresh_from_db()
    if response.status_code == 200:
        assert request.idle_kept_at is not None and request.idle_warned_at is None
        assert RequestEvent.objects.filter(request=request, details__idle_reclaim="keep").count() == 1


def test_keep_defers_once_per_window(demo_org, client_as) -> None:
    request = notebook(demo_org, status=RequestStatus.ACTIVE)
    client = client_as("member")
    assert client.post(url(request, "keep"), {}, format="json").status_code == 200

    again = client.post(url(request, "keep"), {}, format="json")

    assert again.status_code == 409
    assert "once per idle window (8 h)" in again.json()["detail"]
    # A window later it may be kept again.
    GpuRequest.objects.filter(pk=request.pk).update(idle_kept_at=timezone.now() - timedelta(hours=8, minutes=1))
    assert client.post(url(request, "keep"), {}, format="json").status_code == 200


def test_only_a_running_notebook_is_kept(demo_org, client_as) -> None:
    training = notebook(demo_org, status=RequestStatus.ACTIVE, workload_type="training")
    assert client_as("member").post(url(training, "keep"), {}, format="json").status_code == 409


def test_the_events_endpoint_shows_the_readings(demo_org, client_as) -> None:
    request = notebook(demo_org)
    RequestEvent.objects.create(
        request=request,
        actor_label="system:idle-reclaim",
        from_status=RequestStatus.ACTIVE,
        to_status=RequestStatus.SUSPENDED,
        details={"idle_reclaim": "suspend", "readings": [{"hour": "2026-11-10T00:00:00+00:00", "idle": True}]},
    )
    events = client_as("member").get(url(request, "events")).json()
    found = events["results"] if isinstance(events, dict) else events
    assert found[-1]["details"]["readings"][0]["idle"] is True
