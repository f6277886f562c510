"""A finished Job's request says how long it ran against what it asked for, on its page and in the detail API: the
Job's end read by reconcile through the gateway (the API-server emulator over real HTTP)."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.test import Client
from django.urls import reverse
from django.utils import timezone
from rest_framework.test import APIClient

from allocations.clusters.provisioning import gpu_request_provision
from allocations.models import GpuRequest
from allocations.requests.run_time import format_span
from tests.factories import DemoOrg
from tests.integration.k8s_emulator import EmulatedCluster
from tests.integration.test_finished_jobs import NAMESPACE, emulated, pod, running, stamp  # noqa: F401 - fixtures

pytestmark = [pytest.mark.integration, pytest.mark.django_db]


def _finish(emulated: EmulatedCluster, request: GpuRequest, condition_type: str, at) -> None:  # noqa: F811
    emulated.put(pod(request.pk, "Succeeded" if condition_type == "Complete" else "Failed"))
    condition = {"type": condition_type, "status": "True", "lastTransitionTime": stamp(at), "message": "exit code 3"}
    status = {"conditions": [condition], **({"completionTime": stamp(at)} if condition_type == "Complete" else {})}
    emulated.edit("Job", f"gpr-{request.pk}", {"status": status}, NAMESPACE)
    gpu_request_provision(request_id=request.pk)


def _api_run_time(org: DemoOrg, request: GpuRequest) -> dict:
    client = APIClient()
    client.force_authenticate(org.member)
    response = client.get(f"/api/v1/requests/{request.pk}/")
    assert response.status_code == 200
    return response.json()["run_time"]


def _page(org: DemoOrg, request: GpuRequest) -> str:
    client = Client()
    client.force_login(org.member)
    return client.get(reverse("allocations:request-detail", args=[request.pk])).content.decode()


@pytest.mark.parametrize("condition_type", ["Complete", "Failed"])
def test_a_finished_job_shows_requested_against_run_time(
    demo_org: DemoOrg,
    emulated: EmulatedCluster,  # noqa: F811
    running: GpuRequest,  # noqa: F811
    condition_type: str,
) -> None:
    finished = (timezone.now() - timedelta(minutes=48)).replace(microsecond=0)
    activated = finished - timedelta(hours=5, minutes=12)
    GpuRequest.objects.filter(pk=running.pk).update(duration_hours=72, activated_at=activated)
    running.refresh_from_db()
    assert _api_run_time(demo_org, running)["ended_at"] is None  # still running: no end yet
    assert _api_run_time(demo_org, running)["summary"] == "Requested 72 h, running for 6 h so far."

    _finish(emulated, running, condition_type, finished)

    running.refresh_from_db()
    ran = finished - running.activated_at
    expected = f"Requested 72 h, ran {format_span(ran)}, ended {condition_type} at {finished:%Y-%m-%d %H:%M} UTC."
    assert format_span(ran) == "5 h 12 min"
    run_time = _api_run_time(demo_org, running)
    assert run_time["summary"] == expected
    assert (run_time["requested_hours"], run_time["ran_seconds"], run_time["ended_as"]) == (
        72.0,
        int(ran.total_seconds()),
        condition_type,
    )
    assert expected in _page(demo_org, running)


def test_no_run_time_before_it_ran(demo_org: DemoOrg) -> None:
    from tests.factories import GpuRequestFactory

    request = GpuRequestFactory(team=demo_org.team, requester=demo_org.member, name="waiting")
    assert _api_run_time(demo_org, request) is None
    assert 'id="run-time"' not in _page(demo_org, request)


@pytest.mark.parametrize(
    ("minutes", "text"), [(0, "0 min"), (45, "45 min"), (180, "3 h"), (312, "5 h 12 min"), (60 * 1000, "1,000 h")]
)
def test_spans_read_in_hours_and_minutes(minutes: int, text: str) -> None:
    assert format_span(timedelta(minutes=minutes, seconds=30)) == text
