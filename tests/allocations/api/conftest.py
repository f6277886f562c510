"""Fixtures of the API tests: a client per role of the demo organisation, and requests submitted through the service."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from django.contrib.auth.models import User
from rest_framework.test import APIClient

from allocations.models import GpuRequest
from allocations.requests.services import gpu_request_submit
from tests.factories import DemoOrg

TRAINING = {"workload_type": "training", "gpu_memory_gb": 40}


@pytest.fixture
def client_as(demo_org: DemoOrg) -> Callable[[str], APIClient]:
    """An API client authenticated as one role of the demo organisation."""

    def make(role: str) -> APIClient:
        client = APIClient()
        client.force_authenticate(demo_org.user(role))
        return client

    return make


@pytest.fixture
def submit(demo_org: DemoOrg) -> Callable[..., GpuRequest]:
    """Submit a request for the demo team through the real service (as the member unless told otherwise)."""

    def make(user: User | None = None, name: str = "train", **profile: Any) -> GpuRequest:
        return gpu_request_submit(
            command=["python", "main.py"],
            acting_user=user or demo_org.member,
            team=demo_org.team,
            name=name,
            profile_data={**TRAINING, **profile},
        )

    return make
