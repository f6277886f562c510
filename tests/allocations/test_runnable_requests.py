"""A request runs something: with the default image (NGC PyTorch, Triton), training, batch, HPC and serving need a
command (400 naming ``command``, a form error on the field); development starts JupyterLab when it has none; an image
of the requester's own runs its entrypoint."""

from __future__ import annotations

import pytest
from django.test import Client
from django.urls import reverse

from allocations.clusters.rendering import workload_context
from allocations.models import GpuRequest
from gpucore.manifests import render_request_objects
from tests.allocations.test_form_resubmission import _form_page

pytestmark = pytest.mark.django_db

URL = "/api/v1/requests/"
BASE = {"team": "vision", "name": "job", "gpu_memory_gb": 20, "sla_tier": "tier2_batch"}


@pytest.fixture
def api(demo_org, api_client):
    api_client.force_authenticate(demo_org.member)
    return api_client


def _container(request: GpuRequest) -> dict:
    objects = render_request_objects(workload_context(request))
    workload = next(o for o in objects if o["kind"] in ("Job", "JobSet", "Deployment"))
    return workload["spec"]["template"]["spec"]["containers"][0]


@pytest.mark.parametrize(
    ("workload_type", "said"),
    [
        ("training", "nvcr.io/nvidia/pytorch:24.05-py3) runs nothing by itself"),
        ("batch_inference", "runs nothing by itself"),
        ("hpc_simulation", "runs nothing by itself"),
        ("realtime_inference", "tritonserver:24.05-py3) serves nothing without a model repository"),
    ],
)
def test_the_default_image_without_a_command_is_refused_on_command(api, workload_type, said) -> None:
    response = api.post(URL, {**BASE, "workload_type": workload_type}, format="json")
    assert response.status_code == 400
    assert list(response.json()) == ["command"]
    (message,) = response.json()["command"]
    assert said in message and "For example: " in message
    assert not GpuRequest.objects.exists()


def test_a_command_or_an_image_of_ones_own_is_accepted(api) -> None:
    with_command = api.post(
        URL, {**BASE, "workload_type": "training", "command": ["torchrun", "train.py"]}, format="json"
    )
    assert with_command.status_code == 201, with_command.json()
    assert _container(GpuRequest.objects.get(pk=with_command.json()["id"]))["command"] == ["torchrun", "train.py"]
    own_image = {**BASE, "name": "own", "workload_type": "training", "image": "registry.example.com/ml/train:1.2"}
    response = api.post(URL, own_image, format="json")
    assert response.status_code == 201, response.json()
    assert "command" not in _container(GpuRequest.objects.get(pk=response.json()["id"]))  # the image's entrypoint


def test_development_without_a_command_starts_jupyterlab(api) -> None:
    body = {**BASE, "workload_type": "development", "gpu_memory_gb": 3, "sla_tier": "tier3_development"}
    response = api.post(URL, body, format="json")
    assert response.status_code == 201, response.json()
    request = GpuRequest.objects.get(pk=response.json()["id"])
    assert request.command == []  # nothing asked: the default is applied when rendered
    command = _container(request)["command"]
    assert command[:2] == ["jupyter", "lab"] and "--port=8888" in command and "--ip=0.0.0.0" in command


def test_the_form_puts_the_refusal_on_the_command_field(demo_org) -> None:
    client = Client()
    client.force_login(demo_org.member)
    page = client.get(reverse("allocations:request-new")).content.decode()
    assert "Required with the default image" in page and "starts JupyterLab" in page
    body = {
        **_form_page(client),
        "team": "vision",
        "name": "train",
        "workload_type": "training",
        "gpu_memory_gb": "20",
        "gpu_count": "1",
        "replicas": "1",
        "command": "",
    }
    response = client.post(reverse("allocations:request-new"), body)
    assert response.status_code == 400
    form = response.context["form"]
    assert "runs nothing by itself" in form.errors["command"][0]
    assert not GpuRequest.objects.exists()
