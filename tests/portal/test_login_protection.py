"""Password guessing is stopped per (username, client IP) by django-axes, visible to admins; failed API tokens are
throttled per IP; the API's rate limits count in the shared cache."""

from __future__ import annotations

import time

import pytest
from axes.models import AccessAttempt, AccessFailureLog
from django.core.cache import cache
from django.test import Client
from django.urls import reverse
from rest_framework.request import Request
from rest_framework.test import APIClient, APIRequestFactory

from infra.throttling import SharedUserRateThrottle
from tests.factories import UserFactory, api_key_for

pytestmark = pytest.mark.django_db
ATTACKER, ELSEWHERE = "203.0.113.9", "198.51.100.7"


@pytest.fixture(autouse=True)
def _empty_cache():
    cache.clear()
    yield
    cache.clear()


def _login(ip: str, username: str, password: str):
    return Client(REMOTE_ADDR=ip).post(reverse("login"), {"username": username, "password": password})


def test_five_failures_lock_only_that_username_from_that_address(settings) -> None:
    assert settings.AXES_FAILURE_LIMIT == 5
    UserFactory(username="alice")
    UserFactory(username="bob")
    statuses = [_login(ATTACKER, "alice", f"guess-{i}").status_code for i in range(6)]
    assert statuses == [200, 200, 200, 200, 429, 429]  # the 5th failure locks; the form re-renders before that
    locked = _login(ATTACKER, "alice", "demo")  # even the right password, from the guesser's address
    assert locked.status_code == 429 and b"Sign-in paused" in locked.content and b"15 minutes" in locked.content
    # The real user elsewhere, and another user from the same address, are unaffected: nobody is locked out globally.
    assert _login(ELSEWHERE, "alice", "demo").status_code == 302
    assert _login(ATTACKER, "bob", "demo").status_code == 302
    attempt = AccessAttempt.objects.get(username="alice", ip_address=ATTACKER)
    assert attempt.failures_since_start >= 5
    assert AccessFailureLog.objects.filter(username="alice", ip_address=ATTACKER, locked_out=True).exists()


def test_a_success_resets_the_count() -> None:
    UserFactory(username="alice")
    for i in range(4):
        _login(ATTACKER, "alice", f"guess-{i}")
    assert _login(ATTACKER, "alice", "demo").status_code == 302
    assert not AccessAttempt.objects.filter(username="alice", ip_address=ATTACKER).exists()
    assert [_login(ATTACKER, "alice", "x").status_code for _ in range(4)] == [200] * 4


def test_admins_see_attempts_and_can_lift_a_lockout(demo_org) -> None:
    UserFactory(username="alice")
    for i in range(5):
        _login(ATTACKER, "alice", f"guess-{i}")
    admin = Client()
    admin.force_login(demo_org.platform_admin)
    page = admin.get("/admin/axes/accessattempt/")
    assert page.status_code == 200 and b"alice" in page.content and ATTACKER.encode() in page.content
    assert admin.get("/admin/axes/accessfailurelog/").status_code == 404  # plumbing: off the admin
    member = Client()
    member.force_login(demo_org.member)
    assert member.get("/admin/axes/accessattempt/").status_code == 302  # not staff: sent to the admin login
    attempt = AccessAttempt.objects.get(username="alice")
    admin.post(f"/admin/axes/accessattempt/{attempt.pk}/delete/", {"post": "yes"})
    assert _login(ATTACKER, "alice", "demo").status_code == 302


def test_failed_api_tokens_are_throttled_per_address(settings, demo_org) -> None:
    settings.API_TOKEN_FAILURE_RATE = "3/hour"
    good = api_key_for(user=demo_org.member).key
    scanner = APIClient(REMOTE_ADDR=ATTACKER)
    codes = [scanner.get("/api/v1/teams/", HTTP_AUTHORIZATION=f"Token {'0' * 39}{i}").status_code for i in range(5)]
    assert codes == [401, 401, 401, 429, 429]
    refused = scanner.get("/api/v1/teams/", HTTP_AUTHORIZATION=f"Token {'1' * 40}")
    assert refused.status_code == 429 and "Retry-After" in refused and "failed token" in refused.json()["detail"]
    # A valid token is served from that address too, and from another.
    assert scanner.get("/api/v1/teams/", HTTP_AUTHORIZATION=f"Token {good}").status_code == 200
    assert APIClient(REMOTE_ADDR=ELSEWHERE).get("/api/v1/teams/", HTTP_AUTHORIZATION=f"Token {good}").status_code == 200


def test_user_rate_limit_counts_in_the_shared_cache(demo_org) -> None:
    class ThreePerHour(SharedUserRateThrottle):
        rate = "3/hour"

    request = Request(APIRequestFactory().get("/api/v1/teams/"))
    request.user = demo_org.member
    allowed = [ThreePerHour().allow_request(request, None) for _ in range(5)]
    assert allowed == [True, True, True, False, False]
    throttle = ThreePerHour()
    assert not throttle.allow_request(request, None) and 0 < throttle.wait() <= 3600
    # A new throttle object (another worker's) sees the same count: it lives in the cache, not the instance.
    assert cache.get(f"throttle_user_{demo_org.member.pk}:{int(time.time()) // 3600 * 3600}") == 6
