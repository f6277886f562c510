"""A member cannot submit a request for ever: ``duration_hours`` and ``expires_at`` are bounded by MAX_REQUEST_HOURS."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone
from rest_framework.test import APIClient

from allocations.models import GpuRequest

pytestmark = pytest.mark.django_db
NEW = {
    "team": "vision",
    "name": "long-one",
    "workload_type": "training",
    "gpu_memory_gb": 40,
    "command": ["python", "main.py"],
}


def _submit(user, **fields) -> object:
    client = APIClient()
    client.force_authenticate(user)
    return client.post("/api/v1/requests/", {**NEW, **fields}, format="json")


@pytest.mark.parametrize(
    ("field", "value"),
    [("duration_hours", 1_000_000), ("expires_at", "2099-01-01T00:00:00Z"), ("duration_hours", 2161)],
)
def test_a_request_past_the_longest_is_refused_naming_the_field(demo_org, field, value) -> None:
    response = _submit(demo_org.member, **{field: value})
    assert response.status_code == 400
    assert list(response.json()) == [field]
    assert "2,160 hours (90 days)" in response.json()[field][0]
    assert not GpuRequest.objects.exists()


def test_up_to_the_longest_is_accepted(demo_org) -> None:
    assert _submit(demo_org.member, duration_hours=2160).status_code == 201
    expiry = (timezone.now() + timedelta(hours=2159)).isoformat()
    assert _submit(demo_org.member, name="until", expires_at=expiry).status_code == 201


def test_the_bound_is_a_setting(demo_org, settings) -> None:
    settings.MAX_REQUEST_HOURS = 24
    response = _submit(demo_org.member, duration_hours=25)
    assert response.status_code == 400 and "24 hours (1 days)" in response.json()["duration_hours"][0]
    assert _submit(demo_org.member, duration_hours=24).status_code == 201


def test_the_browser_form_names_its_expiry_field(demo_org, client) -> None:
    client.force_login(demo_org.member)
    page = client.get(reverse("allocations:request-new")).content.decode()
    token = re.search(r'name="submission_token" value="([^"]+)"', page).group(1)
    body = {
        "submission_token": token,
        "team": "vision",
        "name": "form",
        "workload_type": "training",
        "gpu_memory_gb": "40",
        "gpu_count": "1",
        "replicas": "1",
        "expires_on": "2099-01-01",
    }
    response = client.post(reverse("allocations:request-new"), body)
    assert response.status_code == 400  # the form again, with the error beside the field
    assert "at most 2,160 hours" in response.content.decode()
    assert not GpuRequest.objects.exists()
