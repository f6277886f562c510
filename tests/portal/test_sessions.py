"""Who a session signs in, read with compiled SQL (portal/sessions.py and the backends' get_user, issue #15): the same
answers as Django's database sessions and backends, for live, expired, removed and foreign sessions, and for users
who are inactive or gone."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.contrib.auth import BACKEND_SESSION_KEY, get_user
from django.contrib.sessions.models import Session
from django.test import Client
from django.utils import timezone

from portal.sessions import SessionStore
from portal.sso.backends import PasswordBackend, PortalOpenIdConnect, active_user
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db

BACKENDS = ["portal.sso.backends.PasswordBackend", "portal.sso.backends.PortalOpenIdConnect"]


def _signed_in(user, backend: str) -> Client:
    client = Client()
    client.force_login(user, backend=backend)
    return client


def _user_of(client: Client):
    request = type("Request", (), {})()
    request.session = SessionStore(client.session.session_key)
    return get_user(request)


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_live_session_signs_its_user_in_and_an_ended_one_nobody(backend):
    user = UserFactory()
    client = _signed_in(user, backend)
    assert client.session[BACKEND_SESSION_KEY] == backend
    assert _user_of(client) == user

    Session.objects.filter(session_key=client.session.session_key).update(expire_date=timezone.now())
    assert not _user_of(client).is_authenticated  # expired this very moment: expire_date > now is false

    Session.objects.filter(session_key=client.session.session_key).update(
        expire_date=timezone.now() + timedelta(hours=1)
    )
    assert _user_of(client) == user
    Session.objects.filter(session_key=client.session.session_key).delete()
    assert not _user_of(client).is_authenticated


@pytest.mark.parametrize("backend", BACKENDS)
def test_an_inactive_or_removed_user_is_signed_out_at_their_next_request(backend):
    user = UserFactory()
    client = _signed_in(user, backend)

    type(user).objects.filter(pk=user.pk).update(is_active=False)
    assert not _user_of(client).is_authenticated
    assert client.get("/").status_code == 302  # to the sign-in page

    type(user).objects.filter(pk=user.pk).update(is_active=True)
    assert client.get("/").status_code == 200
    user.delete()
    assert client.get("/").status_code == 302


def test_an_unknown_or_malformed_session_key_reads_no_session_and_gets_a_new_key_when_saved():
    other = _signed_in(UserFactory(), BACKENDS[0])
    key = other.session.session_key
    store = SessionStore(key[:-1] + ("a" if key[-1] != "a" else "b"))

    assert store.load() == {}
    assert store.session_key is None
    assert SessionStore("x").load() == {}  # too short to be a key: never read
    assert SessionStore(None).load() == {}


@pytest.mark.parametrize("user_id", [0, -1, 2**63, -(2**63) - 1, "7x", None])
def test_a_user_id_that_matches_no_user_answers_none(user_id):
    assert active_user(user_id) is None
    assert PasswordBackend().get_user(user_id) is None
    assert PortalOpenIdConnect().get_user(user_id) is None


def test_a_user_id_read_from_a_session_as_text_still_finds_the_user():
    user = UserFactory()
    assert active_user(str(user.pk)) == user
