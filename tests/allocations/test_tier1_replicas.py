"""Tier 1's two-replica rule, through the API and the form: serving left without replicas gets two, an explicit one
is refused on ``replicas``, and a Job of one pod stays one pod."""

from __future__ import annotations

import pytest
from django.test import Client
from django.urls import reverse

from allocations.models import GpuRequest
from tests.allocations.test_form_resubmission import _form_page

pytestmark = pytest.mark.django_db


@pytest.fixture
def api_client(demo_org, api_client):
    api_client.force_authenticate(demo_org.member)
    return api_client


URL = "/api/v1/requests/"
SERVING = {
    "team": "vision",
    "name": "ranker",
    "workload_type": "realtime_inference",
    "gpu_memory_gb": 30,
    "sla_tier": "tier1_realtime",
    "command": ["tritonserver", "--model-repository=s3://models/ranker"],
}


def test_tier1_serving_without_replicas_gets_two(demo_org, api_client) -> None:
    response = api_client.post(URL, SERVING, format="json")
    assert response.status_code == 201, response.json()
    assert response.json()["replicas"] == 2
    assert GpuRequest.objects.get().spec["replicas"] == 2


def test_an_explicit_single_replica_is_refused_on_the_field(demo_org, api_client) -> None:
    response = api_client.post(URL, {**SERVING, "replicas": 1}, format="json")
    # Well formed, but no allocation can keep the tier's promise with it: 422, naming the field.
    assert response.status_code == 422
    (message,) = response.json()["replicas"]
    assert "99.99 % availability, which one replica cannot give" in message
    assert "leave replicas out" in message


def test_the_recommendation_preview_defaults_the_same_way(demo_org, api_client) -> None:
    profile = {key: value for key, value in SERVING.items() if key not in ("team", "name", "command")}
    response = api_client.post("/api/v1/recommendations/", profile, format="json")
    assert response.status_code == 200, response.json()
    assert response.json()["replicas"] == 2


@pytest.mark.parametrize("workload_type", ["training", "hpc_simulation"])
def test_a_tier1_job_of_one_pod_is_accepted_as_one_pod(demo_org, api_client, workload_type) -> None:
    body = {**SERVING, "workload_type": workload_type, "name": "one-pod", "command": ["torchrun", "train.py"]}
    response = api_client.post(URL, body, format="json")
    assert response.status_code == 201, response.json()
    assert response.json()["replicas"] == 1
    assert GpuRequest.objects.get().spec["replicas"] == 1


def test_the_form_defaults_tier1_serving_to_two_and_says_so(demo_org) -> None:
    client = Client()
    client.force_login(demo_org.member)
    page = client.get(reverse("allocations:request-new")).content.decode()
    assert "2 for real-time inference on tier 1" in page
    body = {
        **_form_page(client),
        "team": "vision",
        "name": "ranker",
        "workload_type": "realtime_inference",
        "gpu_memory_gb": "30",
        "gpu_count": "1",
        "replicas": "",
        "sla_tier": "tier1_realtime",
        "command": "tritonserver --model-repository=s3://models/ranker",
    }
    response = client.post(reverse("allocations:request-new"), body)
    assert response.status_code == 302, response.content.decode()[:2000]
    assert GpuRequest.objects.get().replicas == 2
