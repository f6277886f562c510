"""Token lookups read the token with its user in one query, and every call reads the rows as they are now."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone
from rest_framework.exceptions import AuthenticationFailed
from rest_framework.test import APIClient

from portal.tokens.authentication import NamedTokenAuthentication
from portal.tokens.models import ApiToken
from portal.tokens.services import api_token_authenticate, api_token_create
from tests.factories import DemoOrg, legacy_key_for

pytestmark = pytest.mark.django_db


def test_a_token_and_its_user_are_one_query(demo_org: DemoOrg, django_assert_num_queries) -> None:
    legacy = legacy_key_for(user=demo_org.member)
    named = api_token_create(acting_user=demo_org.member, name="nb", expires_in_days=7)
    for first_use in (legacy.key, named.key):
        api_token_authenticate(key=first_use, client_ip=None)  # records its first use: a write
    authentication = NamedTokenAuthentication()
    for key in (legacy.key, named.key):
        with django_assert_num_queries(1):
            user, token = authentication.authenticate_credentials(key)
            assert user.pk == demo_org.member.pk and user.username == demo_org.member.username
        assert token.pk in (legacy.token.pk, named.token.pk)
    for wrong in (legacy.key + "x", named.key + "x", named.key.replace("_", "_x", 1)):
        with pytest.raises(AuthenticationFailed):
            authentication.authenticate_credentials(wrong)


def test_every_call_reads_the_row_as_it_is_now(demo_org: DemoOrg) -> None:
    new = api_token_create(acting_user=demo_org.member, name="nb", expires_in_days=7)
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {new.key}")
    assert client.get("/api/v1/teams/").status_code == 200
    ApiToken.objects.filter(pk=new.token.pk).update(expires_at=timezone.now() - timedelta(seconds=1))
    assert client.get("/api/v1/teams/").status_code == 401
    legacy = legacy_key_for(user=demo_org.team_lead)
    client.credentials(HTTP_AUTHORIZATION=f"Token {legacy.key}")
    assert client.get("/api/v1/teams/").status_code == 200
    type(demo_org.team_lead).objects.filter(pk=demo_org.team_lead.pk).update(is_active=False)
    response = client.get("/api/v1/teams/")
    assert response.status_code == 401 and response.json() == {"detail": "User inactive or deleted."}
    legacy.token.delete()
    response = client.get("/api/v1/teams/")
    assert response.status_code == 401 and response.json() == {"detail": "Invalid, expired or revoked token."}
