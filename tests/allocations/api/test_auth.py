"""API authentication: a token for notebooks, the session (with CSRF) for the browser, nothing for anonymous callers."""

from __future__ import annotations

import pytest
from django.utils.crypto import get_random_string
from rest_framework.test import APIClient

from allocations.models import GpuRequest
from tests.factories import api_key_for

PROFILE = {"workload_type": "training", "gpu_memory_gb": 40}
NEW = {"team": "vision", "name": "from-a-notebook", **PROFILE, "command": ["python", "main.py"]}

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("post", "/api/v1/recommendations/"),
        ("get", "/api/v1/requests/"),
        ("post", "/api/v1/requests/"),
        ("get", "/api/v1/requests/1/"),
        ("get", "/api/v1/requests/1/events/"),
        ("post", "/api/v1/requests/1/approve/"),
        ("post", "/api/v1/requests/1/reject/"),
        ("post", "/api/v1/requests/1/cancel/"),
        ("post", "/api/v1/requests/1/release/"),
        ("get", "/api/v1/teams/"),
        ("get", "/api/v1/teams/vision/"),
    ],
)
def test_anonymous_callers_get_401(demo_org, method, path):
    response = getattr(APIClient(), method)(path, {}, format="json")

    assert response.status_code == 401
    assert response["WWW-Authenticate"] == "Token"


def test_token_auth_lists_and_submits_without_csrf(demo_org):
    token = api_key_for(user=demo_org.member)
    client = APIClient(enforce_csrf_checks=True)
    client.credentials(HTTP_AUTHORIZATION=f"Token {token.key}")

    assert client.get("/api/v1/requests/").status_code == 200
    assert client.post("/api/v1/recommendations/", PROFILE, format="json").status_code == 200
    response = client.post("/api/v1/requests/", NEW, format="json")

    assert response.status_code == 201, response.content
    assert GpuRequest.objects.get().requester == demo_org.member


def test_a_wrong_token_is_401(demo_org):
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION="Token not-a-real-key")

    assert client.get("/api/v1/requests/").status_code == 401


def test_an_inactive_users_token_is_refused(demo_org):
    token = api_key_for(user=demo_org.member)
    demo_org.member.is_active = False
    demo_org.member.save()
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {token.key}")

    assert client.get("/api/v1/requests/").status_code == 401


def test_session_post_without_csrf_is_refused(demo_org):
    client = APIClient(enforce_csrf_checks=True)
    client.force_login(demo_org.member)

    assert client.get("/api/v1/requests/").status_code == 200  # reads need no CSRF token
    for path, body in (("/api/v1/recommendations/", PROFILE), ("/api/v1/requests/", NEW)):
        response = client.post(path, body, format="json")
        assert response.status_code == 403
        assert "CSRF" in response.json()["detail"]
    assert not GpuRequest.objects.exists()


def test_session_post_with_csrf_token_is_accepted(demo_org):
    client = APIClient(enforce_csrf_checks=True)
    client.force_login(demo_org.member)
    secret = get_random_string(32)
    client.cookies["csrftoken"] = secret

    response = client.post("/api/v1/requests/", NEW, format="json", HTTP_X_CSRFTOKEN=secret)

    assert response.status_code == 201, response.content
