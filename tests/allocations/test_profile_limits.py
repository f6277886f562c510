"""One validation source for the profile's limits: the browser form, its live preview and the API refuse the same
values with the same message (gpucore.profile's bounds; beyond the catalog's largest GPU x gpu_count, the
framework's catalog-aware refusal)."""

from __future__ import annotations

import pytest
from django.test import Client
from django.urls import reverse
from rest_framework.test import APIClient

from gpucore.profile import GPU_MEMORY_TOO_BIG
from tests.factories import DemoOrg

pytestmark = pytest.mark.django_db

BASE = {"team": "vision", "workload_type": "training", "gpu_count": "1", "replicas": "1", "command": "python main.py"}


def messages_from_form(org: DemoOrg, memory: str, gpu_count: str = "1") -> list[str]:
    client = Client()
    client.force_login(org.member)
    data = {**BASE, "name": "big", "gpu_memory_gb": memory, "gpu_count": gpu_count}
    response = client.post(reverse("allocations:request-new"), data)
    assert response.status_code == 400
    return list(response.context["form"].errors["gpu_memory_gb"])


def messages_from_preview(org: DemoOrg, memory: str, gpu_count: str = "1") -> list[str]:
    client = Client()
    client.force_login(org.member)
    response = client.post(
        reverse("allocations:request-preview"), {**BASE, "gpu_memory_gb": memory, "gpu_count": gpu_count}
    )
    assert response.status_code == 400
    [row] = [row for row in response.context["errors"] if row["field"] == "gpu_memory_gb"]
    return list(row["messages"])


def messages_from_api(org: DemoOrg, memory: float, gpu_count: int = 1, expected: int = 400) -> list[str]:
    """The API's messages: 400 for a malformed value, 422 for a well-formed one no GPU holds."""
    client = APIClient()
    client.force_authenticate(org.member)
    body = {
        "team": "vision",
        "name": "big",
        "workload_type": "training",
        "gpu_memory_gb": memory,
        "gpu_count": gpu_count,
        "command": ["python", "main.py"],
    }
    response = client.post("/api/v1/requests/", body, format="json")
    assert response.status_code == expected, response.content
    return list(response.json()["gpu_memory_gb"])


def test_a_typing_slip_gets_one_message_everywhere(demo_org: DemoOrg) -> None:
    form, preview, api = (
        messages_from_form(demo_org, "1e9"),
        messages_from_preview(demo_org, "1e9"),
        messages_from_api(demo_org, 1e9),
    )

    assert form == preview == api == [GPU_MEMORY_TOO_BIG]


def test_more_than_the_largest_gpu_gets_the_catalogs_answer_everywhere(demo_org: DemoOrg) -> None:
    form, preview, api = (
        messages_from_form(demo_org, "500"),
        messages_from_preview(demo_org, "500"),
        messages_from_api(demo_org, 500, expected=422),
    )

    assert form == preview == api
    [message] = form
    assert (
        "no GPU model in the catalog is that big" in message and "gpu_count >= 8" in message
    )  # the test catalog's largest: H100-80GB, 79.25 GiB, 67.36 with headroom: 500 / 67.36 = 7.4


def test_the_same_memory_spread_over_enough_gpus_is_fine(demo_org: DemoOrg) -> None:
    client = Client()
    client.force_login(demo_org.member)

    response = client.post(reverse("allocations:request-preview"), {**BASE, "gpu_memory_gb": "500", "gpu_count": "8"})

    assert response.status_code == 200


@pytest.mark.parametrize(
    ("value", "message"), [("0", "Ensure this value is greater than 0."), ("ten", "A valid number")]
)
def test_small_and_garbled_values_read_the_same_in_form_and_preview(
    demo_org: DemoOrg, value: str, message: str
) -> None:
    assert messages_from_form(demo_org, value)[0].startswith(message)
    assert messages_from_preview(demo_org, value)[0].startswith(message)
