"""Named API tokens: stored hashed, shown once, expiring, revocable, with last use recorded; each user reaches only
their own (a role matrix over the page and /api/v1/tokens/); legacy DRF tokens keep working; failed named tokens
count against the same brake as any failed token."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest
from django.test import Client
from django.urls import reverse
from django.utils import timezone
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from audit.models import AuditEvent
from portal.tokens.legacy import LEGACY_KEY_DAYS
from portal.tokens.models import ApiToken
from portal.tokens.services import api_token_create
from tests.factories import ROLES, DemoOrg, legacy_key_for

pytestmark = pytest.mark.django_db

PAGE = "/account/tokens/"
API = "/api/v1/tokens/"


def browser_of(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def with_token(key: str) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {key}")
    return client


def test_a_created_token_is_shown_once_stored_hashed_and_works(demo_org: DemoOrg) -> None:
    browser = browser_of(demo_org.member)

    created = browser.post(PAGE, {"name": "training notebook", "expires_in_days": "30"}, follow=True)

    html = created.content.decode()
    token = ApiToken.objects.get(user=demo_org.member)
    key = html.split('id="new-token">', 1)[1].split("<", 1)[0]
    assert key.startswith(f"gpp_{token.public_id}_") and len(key) > 50
    assert 'id="copy-token"' in html
    # Only a digest is kept: no column holds the key or its secret part.
    assert key not in json.dumps(list(ApiToken.objects.values()), default=str)
    assert key.rsplit("_", 1)[1] not in json.dumps(list(ApiToken.objects.values()), default=str)
    assert abs(token.expires_at - (timezone.now() + timedelta(days=30))) < timedelta(minutes=1)
    # A second look (or a reload) no longer shows it.
    again = browser.get(PAGE).content.decode()
    assert key not in again and f"gpp_{token.public_id}_…" in again and "never" in again

    answer = with_token(key).get("/api/v1/teams/", REMOTE_ADDR="10.1.2.3")
    assert answer.status_code == 200 and [t["slug"] for t in answer.json()["results"]] == ["vision"]
    token.refresh_from_db()
    assert token.last_used_at is not None and token.last_used_ip == "10.1.2.3"
    # Creating it is in the audit trail, from the browser, with the digest as a fingerprint and never the key.
    created_event = AuditEvent.objects.get(object_type="tokens.apitoken", action="create")
    assert (created_event.actor, created_event.source) == (demo_org.member, "browser")
    assert created_event.after["digest"].startswith("sha256:") and key not in json.dumps(created_event.after)
    assert "from 10.1.2.3" in browser.get(PAGE).content.decode()


def test_several_named_tokens_each_revoked_on_its_own(demo_org: DemoOrg) -> None:
    first = api_token_create(acting_user=demo_org.member, name="laptop", expires_in_days=7)
    second = api_token_create(acting_user=demo_org.member, name="ci", expires_in_days=90)

    response = browser_of(demo_org.member).post(reverse("tokens:revoke", args=[first.token.pk]), follow=True)

    assert "was revoked" in response.content.decode()
    revoked = AuditEvent.objects.get(object_type="tokens.apitoken", action="update")
    assert revoked.before == {"revoked_at": None} and revoked.object_id == str(first.token.pk)
    assert with_token(first.key).get("/api/v1/teams/").status_code == 401
    assert with_token(second.key).get("/api/v1/teams/").status_code == 200
    # The name is free again once its token is revoked.
    assert api_token_create(acting_user=demo_org.member, name="laptop", expires_in_days=7).token.name == "laptop"


def test_an_expired_token_is_refused(demo_org: DemoOrg) -> None:
    new = api_token_create(acting_user=demo_org.member, name="old", expires_in_days=1)
    ApiToken.objects.filter(pk=new.token.pk).update(expires_at=timezone.now() - timedelta(seconds=1))
    response = with_token(new.key).get("/api/v1/teams/")
    assert response.status_code == 401 and "expired" in response.json()["detail"]


def test_a_key_with_the_right_public_part_but_a_wrong_secret_is_refused(demo_org: DemoOrg) -> None:
    new = api_token_create(acting_user=demo_org.member, name="n", expires_in_days=1)
    forged = new.key[:-4] + ("AAAA" if not new.key.endswith("AAAA") else "BBBB")
    assert with_token(forged).get("/api/v1/teams/").status_code == 401
    assert ApiToken.objects.get(pk=new.token.pk).last_used_at is None


def test_legacy_drf_keys_are_migrated_hashed_expiring_and_revocable_on_the_page(demo_org: DemoOrg) -> None:
    legacy = legacy_key_for(user=demo_org.member)
    assert not Token.objects.exists()  # the plain-text table is emptied
    assert legacy.token.digest != legacy.key and legacy.key not in legacy.token.public_id
    days = (legacy.token.expires_at - timezone.now()).days
    assert LEGACY_KEY_DAYS - 1 <= days <= LEGACY_KEY_DAYS
    assert with_token(legacy.key).get("/api/v1/teams/").status_code == 200
    browser = browser_of(demo_org.member)
    page = browser.get(PAGE).content.decode()
    assert "Legacy key (migrated" in page and "older 40-hex key" in page
    browser.post(reverse("tokens:revoke", args=[legacy.token.pk]))
    assert with_token(legacy.key).get("/api/v1/teams/").status_code == 401


def test_a_plain_key_left_in_drf_table_no_longer_authenticates(demo_org: DemoOrg) -> None:
    plain = Token.objects.create(user=demo_org.member)  # written after the migration, by anything
    assert with_token(plain.key).get("/api/v1/teams/").status_code == 401


def test_an_expired_migrated_key_is_refused(demo_org: DemoOrg) -> None:
    legacy = legacy_key_for(user=demo_org.member)
    ApiToken.objects.filter(pk=legacy.token.pk).update(expires_at=timezone.now())
    assert with_token(legacy.key).get("/api/v1/teams/").status_code == 401


def test_failed_named_tokens_are_throttled_per_address(settings, demo_org: DemoOrg) -> None:
    settings.API_TOKEN_FAILURE_RATE = "3/hour"
    good = api_token_create(acting_user=demo_org.member, name="good", expires_in_days=1)
    revoked = api_token_create(acting_user=demo_org.member, name="revoked", expires_in_days=1)
    browser_of(demo_org.member).post(reverse("tokens:revoke", args=[revoked.token.pk]))
    scanner = APIClient(REMOTE_ADDR="203.0.113.9")
    bad_keys = [revoked.key, f"gpp_{good.token.public_id}_wrong", "gpp_000000000000_nothing"]

    codes = [scanner.get("/api/v1/teams/", HTTP_AUTHORIZATION=f"Token {key}").status_code for key in bad_keys]
    refused = scanner.get("/api/v1/teams/", HTTP_AUTHORIZATION="Token gpp_111111111111_more")

    assert codes == [401, 401, 401]
    assert refused.status_code == 429 and "failed token" in refused.json()["detail"]
    # A valid key is never refused for the failures before it, from this address or another.
    assert scanner.get("/api/v1/teams/", HTTP_AUTHORIZATION=f"Token {good.key}").status_code == 200
    assert with_token(good.key).get("/api/v1/teams/", REMOTE_ADDR="198.51.100.1").status_code == 200


@pytest.mark.parametrize(
    ("body", "field"),
    [({"name": "", "expires_in_days": "30"}, "name"), ({"name": "x", "expires_in_days": "3650"}, "expires_in_days")],
)
def test_a_bad_create_names_the_field_and_creates_nothing(demo_org: DemoOrg, body: dict, field: str) -> None:
    response = browser_of(demo_org.member).post(PAGE, body)
    assert response.status_code == 400 and field in response.context["form"].errors
    assert not ApiToken.objects.exists()


# --- The role matrix: every role manages its own tokens, and only those ----------------------------------------------


@pytest.mark.parametrize("role", [*ROLES, "anonymous"])
def test_role_matrix_page_and_api(demo_org: DemoOrg, role: str) -> None:
    someone_else = demo_org.outsider if role != "outsider" else demo_org.member
    theirs = api_token_create(acting_user=someone_else, name="theirs", expires_in_days=7)
    if role == "anonymous":
        assert Client().get(PAGE).status_code == 302
        assert APIClient().get(API).status_code == 401
        assert APIClient().delete(f"{API}{theirs.token.pk}/").status_code == 401
        assert ApiToken.objects.get(pk=theirs.token.pk).revoked_at is None
        return
    user = demo_org.user(role)
    mine = api_token_create(acting_user=user, name="mine", expires_in_days=7)
    page = browser_of(user).get(PAGE)
    assert page.status_code == 200
    assert "mine" in page.content.decode() and "theirs" not in page.content.decode()
    # Revoking someone else's token, on the page or through the API, finds nothing and changes nothing.
    assert browser_of(user).post(reverse("tokens:revoke", args=[theirs.token.pk])).status_code == 404
    api = with_token(mine.key)
    assert [t["name"] for t in api.get(API).json()] == ["mine"]
    assert api.delete(f"{API}{theirs.token.pk}/").status_code == 404
    assert ApiToken.objects.get(pk=theirs.token.pk).revoked_at is None
    # A token may not revoke itself (a leaked key could stop its owner's notebook); another of the owner's may.
    refused = api.delete(f"{API}{mine.token.pk}/")
    assert refused.status_code == 403 and "cannot revoke itself" in refused.json()["detail"]
    assert ApiToken.objects.get(pk=mine.token.pk).revoked_at is None
    other = api_token_create(acting_user=user, name="other", expires_in_days=7)
    assert with_token(other.key).delete(f"{API}{mine.token.pk}/").status_code == 204
    assert api.get(API).status_code == 401


def test_the_api_creates_from_a_browser_session_only(demo_org: DemoOrg) -> None:
    session = APIClient()
    session.force_login(demo_org.member)
    created = session.post(API, {"name": "from the browser", "expires_in_days": 30}, format="json")
    assert created.status_code == 201
    body = created.json()
    assert body["key"].startswith("gpp_") and body["state"] == "active"
    assert "key" not in session.get(API).json()[0]
    duplicate = session.post(API, {"name": "from the browser"}, format="json")
    assert duplicate.status_code == 400 and "already have a token" in duplicate.json()["name"][0]
    refused = with_token(body["key"]).post(API, {"name": "successor"}, format="json")
    assert refused.status_code == 403
    assert not ApiToken.objects.filter(name="successor").exists()


def test_tokens_are_in_the_openapi_schema(tmp_path) -> None:
    import yaml
    from django.core.management import call_command

    target = tmp_path / "schema.yaml"
    call_command("spectacular", "--validate", "--fail-on-warn", "--file", str(target))
    schema = yaml.safe_load(target.read_text())
    assert schema["paths"]["/api/v1/tokens/"].keys() >= {"get", "post"}
    assert "delete" in schema["paths"]["/api/v1/tokens/{id}/"]
    assert "key" in schema["components"]["schemas"]["NewApiToken"]["properties"]
    assert "key" not in schema["components"]["schemas"]["ApiToken"]["properties"]
