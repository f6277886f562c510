"""Quick repeats and safe actions: a rejected or ended request clones into a pre-filled form; release, cancel and
the bulk review buttons carry the confirmation that names what they act on (static/js/confirm.js shows it)."""

from __future__ import annotations

import pytest
from django.test import Client
from django.urls import reverse

from allocations.models import RequestStatus
from allocations.requests.services import gpu_request_reject, gpu_request_submit
from tests.factories import DemoOrg

pytestmark = pytest.mark.django_db

PROFILE = {
    "workload_type": "realtime_inference",
    "gpu_memory_gb": 30,
    "gpu_count": 1,
    "replicas": 2,
    "latency_p99_ms": 80,
    "sla_tier": "tier1_realtime",
    "duration_hours": 36,
}


def client_for(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


@pytest.fixture
def rejected(demo_org: DemoOrg):
    request = gpu_request_submit(
        acting_user=demo_org.member,
        team=demo_org.team,
        name="serve-resnet",
        purpose="Image tagging API",
        profile_data=PROFILE,
        image="registry.example.com/ml/triton:24.05",
        command=["tritonserver", "--model-repository=/models"],
    )
    gpu_request_reject(request=request, acting_user=demo_org.approver, comment="Too big for the pool this week.")
    request.refresh_from_db()
    assert request.status == RequestStatus.REJECTED
    return request


def test_a_rejected_request_offers_a_clone(demo_org: DemoOrg, rejected) -> None:
    html = client_for(demo_org.member).get(reverse("allocations:request-detail", args=[rejected.pk])).content.decode()

    assert f'href="/requests/new/?from={rejected.pk}"' in html and "Clone into a new request" in html


def test_the_clone_pre_fills_the_form(demo_org: DemoOrg, rejected) -> None:
    response = client_for(demo_org.member).get(reverse("allocations:request-new") + f"?from={rejected.pk}")

    assert response.status_code == 200
    form = response.context["form"]
    assert form.initial["team"] == "vision" and form.initial["name"] == "serve-resnet (copy)"
    assert form.initial["workload_type"] == "realtime_inference" and form.initial["replicas"] == 2
    assert form.initial["sla_tier"] == "tier1_realtime" and form.initial["duration_hours"] == 36
    assert form.initial["command"] == "tritonserver --model-repository=/models"
    html = response.content.decode()
    assert 'value="serve-resnet (copy)"' in html and 'value="registry.example.com/ml/triton:24.05"' in html
    assert f"Pre-filled from request #{rejected.pk}" in html


def test_the_cloned_form_submits_a_new_request(demo_org: DemoOrg, rejected) -> None:
    client = client_for(demo_org.member)
    form = client.get(reverse("allocations:request-new") + f"?from={rejected.pk}").context["form"]
    data = {key: value for key, value in form.initial.items() if value not in (None, "")}
    data["isolation_required"] = "on" if data.get("isolation_required") else ""

    response = client.post(reverse("allocations:request-new"), data)

    assert response.status_code == 302
    new = demo_org.team.gpu_requests.exclude(pk=rejected.pk).get()
    assert new.status == RequestStatus.PENDING_APPROVAL and new.name == "serve-resnet (copy)"
    assert (new.workload_type, new.replicas, new.command) == ("realtime_inference", 2, rejected.command)


def test_nobody_clones_another_teams_request(demo_org: DemoOrg, rejected) -> None:
    outsider = client_for(demo_org.outsider)

    assert outsider.get(reverse("allocations:request-new") + f"?from={rejected.pk}").status_code == 404
    assert outsider.get(reverse("allocations:request-new") + "?from=abc").status_code == 400


def test_a_pending_request_offers_a_clone_and_asks_before_cancelling(demo_org: DemoOrg) -> None:
    request = gpu_request_submit(
        command=["python", "main.py"],
        acting_user=demo_org.member,
        team=demo_org.team,
        name="train",
        profile_data=PROFILE,
    )

    html = client_for(demo_org.member).get(reverse("allocations:request-detail", args=[request.pk])).content.decode()

    assert f'href="/requests/new/?from={request.pk}"' in html
    assert f'data-confirm="Cancel request #{request.pk} “train”?' in html
    assert "js/confirm.js" in html


def test_the_bulk_buttons_ask_and_each_row_names_its_request(demo_org: DemoOrg) -> None:
    request = gpu_request_submit(
        command=["python", "main.py"],
        acting_user=demo_org.member,
        team=demo_org.team,
        name="train",
        profile_data=PROFILE,
    )

    html = client_for(demo_org.approver).get(reverse("allocations:approvals")).content.decode()

    assert 'data-confirm-items="ids"' in html
    assert 'data-confirm="Approve {count}?"' in html and 'data-confirm="Reject {count}?' in html
    assert f'data-label="#{request.pk} train (Vision, ' in html
