"""``Idempotency-Key`` on POST /api/v1/requests/: a retry with the same key gets the first answer, nothing new.

The concurrent case (two workers, the same key at once) and a real database loss are in
``tests/integration/test_database_loss.py``.
"""

from __future__ import annotations

from datetime import timedelta

import pytest
import time_machine
from django.utils import timezone
from rest_framework.test import APIClient

from allocations.models import GpuRequest, IdempotencyKey
from allocations.tasks import purge_idempotency_keys

pytestmark = pytest.mark.django_db
NEW = {
    "team": "vision",
    "name": "from-a-notebook",
    "workload_type": "training",
    "gpu_memory_gb": 40,
    "command": ["python", "main.py"],
}


def _client(user) -> APIClient:
    client = APIClient()
    client.force_authenticate(user)
    return client


def _submit(client: APIClient, body: dict, key: str | None = "7c1e4b52-retry") -> object:
    headers = {} if key is None else {"HTTP_IDEMPOTENCY_KEY": key}
    return client.post("/api/v1/requests/", body, format="json", **headers)


def test_a_retry_with_the_same_key_gets_the_first_answer_and_creates_nothing(demo_org) -> None:
    client = _client(demo_org.member)
    first = _submit(client, NEW)
    assert first.status_code == 201, first.content
    # Key order does not matter: the same body.
    again = _submit(client, dict(reversed(list(NEW.items()))))
    assert again.status_code == 201
    assert again.content == first.content
    assert again["Idempotent-Replayed"] == "true"
    assert "Idempotent-Replayed" not in first
    assert GpuRequest.objects.count() == 1
    stored = IdempotencyKey.objects.get()
    assert stored.user == demo_org.member and stored.response_body == first.content.decode()


def test_without_a_key_each_post_creates_a_request(demo_org) -> None:
    client = _client(demo_org.member)
    assert _submit(client, NEW, key=None).status_code == 201
    assert _submit(client, NEW, key=None).status_code == 201
    assert GpuRequest.objects.count() == 2
    assert not IdempotencyKey.objects.exists()


def test_the_same_key_with_another_body_is_422(demo_org) -> None:
    client = _client(demo_org.member)
    assert _submit(client, NEW).status_code == 201
    response = _submit(client, {**NEW, "gpu_memory_gb": 80})
    assert response.status_code == 422
    assert "Idempotency-Key" in response.json()["detail"]
    assert GpuRequest.objects.count() == 1


def test_keys_are_per_user(demo_org) -> None:
    mine = _submit(_client(demo_org.member), NEW)
    theirs = _submit(_client(demo_org.team_lead), NEW)
    assert mine.status_code == theirs.status_code == 201
    assert mine.json()["id"] != theirs.json()["id"]
    assert GpuRequest.objects.count() == 2


def test_a_refused_submission_stores_nothing_and_may_be_corrected_with_the_same_key(demo_org) -> None:
    client = _client(demo_org.member)
    refused = _submit(client, {**NEW, "name": ""})
    assert refused.status_code == 400 and "name" in refused.json()
    assert not IdempotencyKey.objects.exists()
    assert _submit(client, NEW).status_code == 201


def test_keys_expire(demo_org, settings) -> None:
    settings.IDEMPOTENCY_KEY_TTL_HOURS = 24
    client = _client(demo_org.member)
    first = _submit(client, NEW)
    with time_machine.travel(timezone.now() + timedelta(hours=25)):
        later = _submit(client, {**NEW, "name": "next-day"})
        assert later.status_code == 201
        assert later.json()["id"] != first.json()["id"]
        assert "Idempotent-Replayed" not in later
    assert GpuRequest.objects.count() == 2


def test_expired_keys_are_purged(demo_org, settings) -> None:
    settings.IDEMPOTENCY_KEY_TTL_HOURS = 24
    _submit(_client(demo_org.member), NEW)
    assert purge_idempotency_keys() == 0
    with time_machine.travel(timezone.now() + timedelta(hours=25)):
        assert purge_idempotency_keys() == 1
    assert not IdempotencyKey.objects.exists()


@pytest.mark.parametrize("key", ["", "x" * 256, "caf\u00e9", "tab\there"])
def test_an_unusable_key_is_400_naming_the_header(demo_org, key) -> None:
    response = _submit(_client(demo_org.member), NEW, key=key)
    assert response.status_code == 400
    assert "Idempotency-Key" in response.json()
    assert not GpuRequest.objects.exists()
