"""POST /api/v1/recommendations/ against real pools: node size, several time-sliced pools of a model, duration cost.

The pools are rows in PostgreSQL, the recommendation runs through placement.
"""

from __future__ import annotations

import pytest

from allocations.models import GpuModel, SharingMode
from tests.factories import NodePoolFactory

URL = "/api/v1/recommendations/"

pytestmark = pytest.mark.django_db


def test_gpu_count_above_the_largest_node_is_a_422_naming_gpu_count(client_as, demo_org):
    # The demo pool has 8 H100s per node: 16 GPUs per replica can never be scheduled.
    body = {"workload_type": "training", "gpu_memory_gb": 640, "gpu_count": 16}
    response = client_as("member").post(URL, body, format="json")

    assert response.status_code == 422, response.content  # well formed, but no node holds it
    errors = response.json()
    assert list(errors) == ["gpu_count"]
    assert "at most 8 GPUs" in errors["gpu_count"][0]


def test_gpu_count_is_refused_at_submission_too(client_as, demo_org):
    body = {"team": "vision", "name": "big", "workload_type": "training", "gpu_memory_gb": 640, "gpu_count": 16}
    body["command"] = ["python", "main.py"]
    response = client_as("member").post("/api/v1/requests/", body, format="json")

    assert response.status_code == 422, response.content  # well formed, but no node holds it
    assert "gpu_count" in response.json()


def test_a_development_notebook_lands_on_the_t4_pool_whose_share_fits(client_as, demo_org):
    t4 = GpuModel.objects.get(name="T4")
    for name, replicas in (("t4-four", 4), ("t4-two", 2)):
        NodePoolFactory(
            cluster=demo_org.cluster,
            name=name,
            gpu_model=t4,
            sharing_mode=SharingMode.TIME_SLICING,
            time_slice_replicas=replicas,
        )
    notebook = {"workload_type": "development", "gpu_memory_gb": 6, "gpu_model": "T4"}

    body = client_as("member").post(URL, notebook, format="json").json()

    assert (body["strategy"], body["gpu_model"], body["time_slice_replicas"]) == ("time-slicing", "T4", 2)
    assert body["gpu_share"] == "0.5"
    # A 3 GiB notebook takes the cheaper 4-way pool (15 GiB x 0.85 / 4 = 3.19): both pools are priced and chosen from.
    small = client_as("member").post(URL, {**notebook, "gpu_memory_gb": 3}, format="json").json()
    assert small["time_slice_replicas"] == 4


def test_the_duration_cost_reaches_the_api(client_as, demo_org):
    body = {"workload_type": "training", "gpu_memory_gb": 60, "duration_hours": 48}
    data = client_as("member").post(URL, body, format="json").json()

    assert data["gpu_model"] == "H100-80GB"
    assert data["estimated_monthly_cost"]["amount"] == "5022.40"  # 6.88 x 730, catalog list price
    assert data["estimated_cost"] == {"amount": "330.24", "currency": "USD", "hours": 48.0}  # 6.88 x 48


def test_four_1g20gb_on_a_fully_partitioned_h100_pool_bill_one_gpu_together(client_as, demo_org):
    NodePoolFactory(
        cluster=demo_org.cluster,
        name="h100-mig",
        gpu_model=GpuModel.objects.get(name="H100-80GB"),
        sharing_mode=SharingMode.MIG,
        mig_devices={"1g.20gb": 4},
    )
    body = {"workload_type": "batch_inference", "gpu_memory_gb": 15, "isolation_required": True, "replicas": 4}
    data = client_as("member").post(URL, body, format="json").json()

    assert (data["strategy"], data["mig_profile"], data["gpu_share"]) == ("mig", "1g.20gb", "0.25"), data["rationale"]
    assert data["estimated_monthly_cost"]["amount"] == "5022.40"  # 4 x 0.25 x 6.88 x 730: one H100's month


def test_a_refused_profile_in_the_browsable_api_keeps_the_profile_form(client_as, demo_org):
    # Validation binds only the fields DRF runs; the form the browsable API shows again still has the
    # profile's fields, and the answer still names the field that is wrong.
    body = {"workload_type": "training", "gpu_memory_gb": -1}
    response = client_as("member").post(URL, body, format="json", HTTP_ACCEPT="text/html")

    assert response.status_code == 400
    html = response.content.decode()
    for field in ("workload_type", "gpu_memory_gb", "gpu_count", "duration_hours", "cluster"):
        assert f'name="{field}"' in html, field
    assert "Ensure this value is greater than 0." in html
