"""Token lookups with SQL compiled once (issue #15) answer what the ORM answers, as the rows are now, in one query."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from portal.tokens.authentication import _LEGACY_TOKEN
from portal.tokens.models import ApiToken
from portal.tokens.services import _TOKEN_BY_PUBLIC_ID, api_token_create
from tests.factories import DemoOrg

pytestmark = pytest.mark.django_db


def _fields(instance) -> dict:
    return {field.attname: getattr(instance, field.attname) for field in instance._meta.concrete_fields}


def test_the_same_instances_as_the_orm(demo_org: DemoOrg) -> None:
    legacy = Token.objects.create(user=demo_org.member)
    named = api_token_create(acting_user=demo_org.member, name="nb", expires_in_days=7).token
    ApiToken.objects.filter(pk=named.pk).update(last_used_at=timezone.now(), last_used_ip="10.0.0.7")
    for lookup, value, orm in (
        (_LEGACY_TOKEN, legacy.key, Token.objects.select_related("user").get(key=legacy.key)),
        (_TOKEN_BY_PUBLIC_ID, named.public_id, ApiToken.objects.select_related("user").get(public_id=named.public_id)),
    ):
        with CaptureQueriesContext(connection) as queries:
            found = lookup.first(value)
            user = found.user  # already read: no second query
        assert len(queries) == 1
        assert type(found) is type(orm) and _fields(found) == _fields(orm)
        assert _fields(user) == _fields(orm.user) and user.pk == demo_org.member.pk
        assert not found._state.adding and found._state.db == "default"
        assert lookup.first(value + "x") is None


def test_every_call_reads_the_row_as_it_is_now(demo_org: DemoOrg) -> None:
    new = api_token_create(acting_user=demo_org.member, name="nb", expires_in_days=7)
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {new.key}")
    assert client.get("/api/v1/teams/").status_code == 200
    ApiToken.objects.filter(pk=new.token.pk).update(expires_at=timezone.now() - timedelta(seconds=1))
    assert client.get("/api/v1/teams/").status_code == 401
    legacy = Token.objects.create(user=demo_org.team_lead)
    client.credentials(HTTP_AUTHORIZATION=f"Token {legacy.key}")
    assert client.get("/api/v1/teams/").status_code == 200
    type(demo_org.team_lead).objects.filter(pk=demo_org.team_lead.pk).update(is_active=False)
    response = client.get("/api/v1/teams/")
    assert response.status_code == 401 and response.json() == {"detail": "User inactive or deleted."}
    legacy.delete()
    response = client.get("/api/v1/teams/")
    assert response.status_code == 401 and response.json() == {"detail": "Invalid token."}
