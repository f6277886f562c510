"""Who a session signs in, read with compiled SQL (portal/sessions.py and the backends' get_user, issue #15): the same
answers as Django's database sessions and backends, for live, expired, removed and foreign sessions, and for users
who are inactive or gone; through the portal's AuthenticationMiddleware, the session and its user in one statement,
and Django's checks (the session's hash, the user id in the signed data) still deciding."""

from __future__ import annotations

import importlib
from datetime import timedelta

import pytest
from django.conf import settings
from django.contrib.auth import BACKEND_SESSION_KEY, SESSION_KEY, get_user
from django.test import Client
from django.utils import timezone

from portal.models import UserSession as Session
from portal.sessions import SessionStore, user_id_of
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


# --- The session's row names its user: both read in one statement ---------------------------------------------------


def _middleware_user(client: Client):
    """``request.user`` as the portal's middleware stack gives it to a view, for the client's session cookie."""
    from django.contrib.sessions.middleware import SessionMiddleware
    from django.test import RequestFactory

    from portal.sessions import AuthenticationMiddleware

    request = RequestFactory().get("/")
    request.COOKIES[settings.SESSION_COOKIE_NAME] = client.cookies[settings.SESSION_COOKIE_NAME].value
    SessionMiddleware(lambda r: None).process_request(request)
    AuthenticationMiddleware(lambda r: None).process_request(request)
    return request


@pytest.mark.parametrize("backend", BACKENDS)
def test_the_session_row_names_its_user_and_a_request_reads_both_in_one_query(backend, django_assert_num_queries):
    user = UserFactory()
    client = _signed_in(user, backend)
    assert Session.objects.get(session_key=client.session.session_key).user_id == user.pk

    request = _middleware_user(client)
    with django_assert_num_queries(1):
        assert request.user == user
        assert request.user.is_authenticated
    # The user's permissions came with it (the approver check of every page reads no more).
    with django_assert_num_queries(0):
        assert request.user.has_perm("allocations.approve_gpurequest") is False


def test_a_row_naming_another_user_never_signs_that_user_in(django_assert_num_queries):
    """The signed data decides who is signed in: a row whose column names someone else (written by hand, say) is
    not believed, and the user of the data is read on its own."""
    user, other = UserFactory(), UserFactory()
    client = _signed_in(user, BACKENDS[0])
    Session.objects.filter(session_key=client.session.session_key).update(user_id=other.pk)

    request = _middleware_user(client)
    with django_assert_num_queries(2):
        assert request.user == user


def test_a_session_saved_before_its_row_named_a_user_still_signs_it_in():
    user = UserFactory()
    client = _signed_in(user, BACKENDS[0])
    Session.objects.filter(session_key=client.session.session_key).update(user_id=None)

    assert _middleware_user(client).user == user
    assert client.get("/").status_code == 200


def test_a_changed_password_ends_the_session_through_the_joined_read():
    """Django's session hash check runs on the user read with the session: another password signs the session
    out and flushes it."""
    user = UserFactory()
    client = _signed_in(user, BACKENDS[0])
    key = client.session.session_key
    user.set_password("another one, changed elsewhere")
    user.save()

    assert not _middleware_user(client).user.is_authenticated
    assert not Session.objects.filter(session_key=key).exists()  # flushed
    assert client.get("/").status_code == 302


def test_an_inactive_user_read_with_the_session_is_nobody(django_assert_num_queries):
    user = UserFactory()
    client = _signed_in(user, BACKENDS[1])
    type(user).objects.filter(pk=user.pk).update(is_active=False)

    request = _middleware_user(client)
    with django_assert_num_queries(1):
        assert not request.user.is_authenticated


def test_signing_out_and_in_as_someone_else_renames_the_row():
    first, second = UserFactory(), UserFactory()
    client = _signed_in(first, BACKENDS[0])
    assert Session.objects.get(session_key=client.session.session_key).user_id == first.pk
    client.force_login(second, backend=BACKENDS[0])  # Django's login(): another user's session starts afresh
    assert Session.objects.get(session_key=client.session.session_key).user_id == second.pk
    assert _middleware_user(client).user == second


def test_deleting_a_user_deletes_their_sessions():
    user, other = UserFactory(), UserFactory()
    _signed_in(user, BACKENDS[0])
    _signed_in(user, BACKENDS[1])
    _signed_in(other, BACKENDS[0])
    assert Session.objects.filter(user_id=user.pk).count() == 2

    user.delete()
    assert Session.objects.filter(user_id=user.pk).count() == 0
    assert Session.objects.filter(user_id=other.pk).count() == 1


def test_a_session_without_a_user_names_nobody():
    store = SessionStore()
    store["cart"] = "anything"
    store.save()
    assert Session.objects.get(session_key=store.session_key).user_id is None
    assert SessionStore(store.session_key).load() == {"cart": "anything"}


@pytest.mark.parametrize(
    ("value", "expected"), [("7", 7), (7, 7), (None, None), ("", None), ("x", None), ("0", None), (str(2**63), None)]
)
def test_the_user_id_a_row_keeps_is_the_datas_id_or_none(value, expected):
    assert user_id_of(value) == expected


def test_the_upgrade_moves_live_sessions_with_their_user_and_a_rollback_moves_them_back():
    """portal/migrations/0002_user_session: live sessions of Django's table move with the user their data signs in
    (nobody is signed out by the upgrade), expired ones are dropped, and a rollback moves them back."""
    from django.apps import apps
    from django.contrib.sessions.backends.db import SessionStore as DjangoSessionStore
    from django.contrib.sessions.models import Session as DjangoSession

    migration = importlib.import_module("portal.migrations.0002_user_session")
    user = UserFactory()
    encode = DjangoSessionStore().encode
    later, earlier = timezone.now() + timedelta(hours=1), timezone.now() - timedelta(hours=1)
    DjangoSession.objects.bulk_create(
        [
            DjangoSession(session_key="a" * 32, session_data=encode({SESSION_KEY: str(user.pk)}), expire_date=later),
            DjangoSession(session_key="b" * 32, session_data=encode({"cart": 1}), expire_date=later),
            DjangoSession(session_key="c" * 32, session_data="not signed", expire_date=later),
            DjangoSession(session_key="d" * 32, session_data=encode({SESSION_KEY: str(user.pk)}), expire_date=earlier),
        ]
    )

    migration.forwards(apps, None)
    assert dict(Session.objects.values_list("session_key", "user_id")) == {
        "a" * 32: user.pk,
        "b" * 32: None,
        "c" * 32: None,
    }
    assert not DjangoSession.objects.exists()
    store = SessionStore("a" * 32)
    assert store[SESSION_KEY] == str(user.pk)  # the same signed data reads the same under the portal's store

    migration.backwards(apps, None)
    assert sorted(DjangoSession.objects.values_list("session_key", flat=True)) == ["a" * 32, "b" * 32, "c" * 32]
    assert not Session.objects.exists()


def test_the_daily_task_deletes_expired_sessions_and_keeps_live_ones():
    from portal.celery import app
    from portal.tasks import clear_expired_sessions

    live, ended = _signed_in(UserFactory(), BACKENDS[0]), _signed_in(UserFactory(), BACKENDS[0])
    Session.objects.filter(session_key=ended.session.session_key).update(expire_date=timezone.now())
    assert app.conf.beat_schedule["clear-expired-sessions"]["task"] == clear_expired_sessions.name

    clear_expired_sessions.apply().get()
    clear_expired_sessions.apply().get()  # again: nothing more to delete
    assert list(Session.objects.values_list("session_key", flat=True)) == [live.session.session_key]
    assert live.get("/").status_code == 200


def test_every_periodic_task_is_one_a_worker_finds():
    """Each beat entry names a task the worker registers from the apps' ``tasks`` modules (autodiscovery)."""
    from portal.celery import app

    app.loader.import_default_modules()
    assert {entry["task"] for entry in app.conf.beat_schedule.values()} <= set(app.tasks)
