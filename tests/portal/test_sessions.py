"""Signed-in sessions with Django's cached_db engine: a login survives from request to request (and a cache that lost
it), a changed password or a deactivated account signs the session out, expired sessions are cleared daily, and the
upgrade moves the sessions of the portal's former table into Django's (and a rollback moves them back) so nobody is
signed out by either."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.contrib.auth import SESSION_KEY
from django.contrib.sessions.backends.db import SessionStore as DatabaseSessionStore
from django.contrib.sessions.models import Session
from django.core.cache import cache
from django.db import connection
from django.db.migrations.executor import MigrationExecutor
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from tests.factories import UserFactory

BACKENDS = ["portal.sso.backends.PasswordBackend", "portal.sso.backends.PortalOpenIdConnect"]


def _signed_in(user, backend: str = BACKENDS[0]) -> Client:
    client = Client()
    client.force_login(user, backend=backend)
    return client


@pytest.mark.django_db
def test_a_password_login_survives_the_next_requests_and_a_cache_that_lost_the_session():
    user = UserFactory()
    client = Client()
    assert client.post(reverse("login"), {"username": user.username, "password": "demo"}).status_code == 302
    key = client.session.session_key
    assert Session.objects.filter(session_key=key).exists()  # kept in the database, not only in the cache

    assert client.get("/").status_code == 200
    cache.clear()  # a restarted or evicting cache: the session is read back from the database
    assert client.get("/").status_code == 200
    assert client.get("/").wsgi_request.user == user


@pytest.mark.django_db
@pytest.mark.parametrize("backend", BACKENDS)
def test_a_changed_password_signs_the_session_out(backend):
    user = UserFactory()
    client = _signed_in(user, backend)
    key = client.session.session_key
    user.set_password("another one, changed elsewhere")
    user.save()

    response = client.get("/")
    assert response.status_code == 302 and response["Location"].startswith(reverse("login"))
    assert not Session.objects.filter(session_key=key).exists()  # Django flushed it


@pytest.mark.django_db
@pytest.mark.parametrize("backend", BACKENDS)
def test_an_inactive_or_removed_user_is_refused_at_their_next_request(backend):
    user = UserFactory()
    client = _signed_in(user, backend)
    assert client.get("/").status_code == 200

    type(user).objects.filter(pk=user.pk).update(is_active=False)
    assert client.get("/").status_code == 302
    type(user).objects.filter(pk=user.pk).update(is_active=True)
    assert client.get("/").status_code == 200
    user.delete()
    assert client.get("/").status_code == 302


@pytest.mark.django_db
def test_signing_out_ends_the_session_for_good():
    client = _signed_in(UserFactory())
    key = client.session.session_key
    client.post(reverse("logout"))
    assert not Session.objects.filter(session_key=key).exists()
    client.cookies["sessionid"] = key  # the old cookie, replayed
    assert client.get("/").status_code == 302


@pytest.mark.django_db
def test_the_daily_task_deletes_expired_sessions_and_keeps_live_ones():
    from portal.celery import app
    from portal.tasks import clear_expired_sessions

    live, ended = _signed_in(UserFactory()), _signed_in(UserFactory())
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


# --- The migration: the portal's former session table and Django's --------------------------------------------------

USER_SESSION = ("portal", "0002_user_session")


def _migrate(target: list[tuple[str, str]]):
    """The database migrated to ``target``; the apps as they are there."""
    executor = MigrationExecutor(connection)
    executor.migrate(target)
    return MigrationExecutor(connection).loader.project_state(target).apps


@pytest.mark.django_db(transaction=True)
def test_a_rollback_moves_live_sessions_to_the_former_table_and_the_upgrade_moves_them_back():
    latest = MigrationExecutor(connection).loader.graph.leaf_nodes("portal")
    user = UserFactory()
    signed_in = _signed_in(user)
    encode = DatabaseSessionStore().encode
    later, earlier = timezone.now() + timedelta(hours=1), timezone.now() - timedelta(hours=1)
    Session.objects.bulk_create(
        [
            Session(session_key="b" * 32, session_data=encode({"cart": 1}), expire_date=later),
            Session(session_key="c" * 32, session_data="not signed", expire_date=later),
            Session(session_key="d" * 32, session_data=encode({SESSION_KEY: str(user.pk)}), expire_date=earlier),
        ]
    )
    key = signed_in.session.session_key
    try:
        # Rollback: live sessions move to the former table, each naming the user its signed data signs in.
        former = _migrate([USER_SESSION]).get_model("portal", "UserSession")
        assert dict(former.objects.values_list("session_key", "user_id")) == {
            key: user.pk,
            "b" * 32: None,
            "c" * 32: None,
        }
        assert not Session.objects.exists()
        former.objects.create(session_key="e" * 32, session_data=encode({"cart": 2}), expire_date=earlier)

        # Upgrade: the live ones move back with their data unchanged, and the login holds without the cache.
        _migrate(latest)
        assert sorted(Session.objects.values_list("session_key", flat=True)) == sorted([key, "b" * 32, "c" * 32])
        assert "portal_usersession" not in connection.introspection.table_names()
    finally:
        _migrate(latest)
    cache.clear()
    assert signed_in.get("/").wsgi_request.user == user
