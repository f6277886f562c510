"""Nobody is refused for someone else's failures: behind the Ingress (one trusted proxy) failed tokens and sign-ins
count per client and per token, a valid token is always served, and the shipped overlays set the proxy count."""

from __future__ import annotations

import pytest
from django.core.cache import cache
from django.test import Client
from django.urls import reverse
from rest_framework.test import APIClient

from portal.tokens.services import api_token_create
from tests.deploy.kustomize import pod_templates, render
from tests.deploy.test_env_consistency import container_environment
from tests.factories import DemoOrg, UserFactory, legacy_key_for

pytestmark = pytest.mark.django_db
INGRESS = "10.42.0.7"  # the Ingress controller's pod: every request arrives from it
GUESSER, ALICE = "203.0.113.9", "198.51.100.7"


@pytest.fixture(autouse=True)
def _behind_the_ingress(settings):
    settings.REST_FRAMEWORK = {**settings.REST_FRAMEWORK, "NUM_PROXIES": 1}
    settings.API_TOKEN_FAILURE_RATE = "3/hour"
    cache.clear()
    yield
    cache.clear()


def via_ingress(client_address: str) -> APIClient:
    return APIClient(REMOTE_ADDR=INGRESS, HTTP_X_FORWARDED_FOR=client_address)


def teams(client: APIClient, key: str) -> int:
    return client.get("/api/v1/teams/", HTTP_AUTHORIZATION=f"Token {key}").status_code


def test_a_valid_token_is_served_however_many_failed_from_its_address(demo_org: DemoOrg) -> None:
    named = api_token_create(acting_user=demo_org.member, name="notebook", expires_in_days=7).key
    legacy = legacy_key_for(user=demo_org.team_lead).key
    scanner = APIClient(REMOTE_ADDR=INGRESS)  # a shared address: a NAT, or an Ingress without the proxy count
    codes = [teams(scanner, f"gpp_{i:012x}_wrong") for i in range(5)]
    assert codes == [401, 401, 401, 429, 429]
    assert teams(scanner, named) == 200 and teams(scanner, legacy) == 200


def test_failures_count_per_client_behind_the_ingress(demo_org: DemoOrg) -> None:
    assert [teams(via_ingress(GUESSER), f"{i:040x}") for i in range(4)] == [401, 401, 401, 429]
    # Another client's wrong key through the same Ingress is its own first failure: 401, not 429.
    assert teams(via_ingress(ALICE), "f" * 40) == 401


def test_guesses_at_one_token_are_throttled_across_addresses_and_the_token_still_works(demo_org: DemoOrg) -> None:
    key = api_token_create(acting_user=demo_org.member, name="notebook", expires_in_days=7).key
    public = key.rpartition("_")[0]
    codes = [teams(via_ingress(f"192.0.2.{i}"), f"{public}_guess{i}") for i in range(5)]
    assert codes == [401, 401, 401, 429, 429]  # five addresses, one token: counted on its public id
    assert teams(via_ingress("192.0.2.99"), key) == 200


def test_a_guesser_behind_the_ingress_cannot_lock_a_named_user_out() -> None:
    UserFactory(username="alice")

    def login(address: str, password: str) -> int:
        client = Client(REMOTE_ADDR=INGRESS, HTTP_X_FORWARDED_FOR=address)
        return client.post(reverse("login"), {"username": "alice", "password": password}).status_code

    assert [login(GUESSER, f"guess-{i}") for i in range(6)][-1] == 429
    assert login(ALICE, "demo") == 302  # alice through the same Ingress, from her own address


@pytest.mark.parametrize(("overlay", "count"), [("prod", "1"), ("dev", "0")])
def test_the_overlays_set_the_proxy_count(overlay: str, count: str) -> None:
    objects = render(overlay)
    web = pod_templates(objects)["web"]["spec"]["containers"][0]
    assert container_environment(objects, web).get("TRUSTED_PROXY_COUNT") == count
