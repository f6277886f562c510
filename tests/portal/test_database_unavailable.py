"""While the database cannot be reached, the API answers JSON 503 and pages the branded 503, both with Retry-After.

Here the loss is made by Django's own query hook (``connection.execute_wrapper``) raising what the driver raises when
the server has gone away, so it runs on SQLite too; ``tests/integration/test_database_loss.py`` cuts a real
PostgreSQL connection.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import pytest
from django.db import InterfaceError, OperationalError, connection
from django.test import Client
from rest_framework.test import APIClient

from portal.tokens.services import api_token_create

pytestmark = pytest.mark.django_db


@contextmanager
def database_away(
    error: type[Exception] = OperationalError, message: str = "server closed the connection unexpectedly"
) -> Iterator[None]:
    """Every query fails as it does while PostgreSQL restarts."""

    def refuse(execute, sql, params, many, context):
        raise error(message)

    with connection.execute_wrapper(refuse):
        yield


@pytest.mark.parametrize("error", [OperationalError, InterfaceError])
def test_the_api_answers_json_503_with_retry_after(demo_org, error) -> None:
    client = APIClient(raise_request_exception=False)
    key = api_token_create(acting_user=demo_org.member, name="notebook", expires_in_days=7).key
    client.credentials(HTTP_AUTHORIZATION=f"Token {key}")
    with database_away(error):
        listing = client.get("/api/v1/requests/")
        submit = client.post("/api/v1/requests/", {"team": "vision", "name": "x"}, format="json")
    for response in (listing, submit):
        assert response.status_code == 503, response.content[:300]
        assert response["Content-Type"].startswith("application/json")
        assert response["Retry-After"] == "5"
        assert response.json()["code"] == "database_unavailable"
    # The database back: the same client is served again.
    assert client.get("/api/v1/requests/").status_code == 200


def test_a_session_signed_in_api_call_gets_the_503_too(demo_org, settings) -> None:
    settings.DATABASE_RETRY_AFTER_SECONDS = 12
    client = APIClient(raise_request_exception=False)
    client.force_login(demo_org.member)
    with database_away():
        response = client.get("/api/v1/teams/")
    assert response.status_code == 503
    assert response["Retry-After"] == "12"
    assert "database" in response.json()["detail"]


def test_pages_answer_the_branded_503(demo_org) -> None:
    client = Client(raise_request_exception=False)
    client.force_login(demo_org.member)
    with database_away():
        for path in ("/", "/requests/", "/accounts/login/"):
            response = client.get(path)
            assert response.status_code == 503, path
            assert response["Retry-After"] == "5"
            assert response["Content-Type"].startswith("text/html")
            page = response.content.decode()
            assert "GPU Portal" in page and "back in a moment" in page
            assert "server closed" not in page  # the driver's text stays in the log


def test_other_errors_are_still_500(demo_org) -> None:
    client = APIClient(raise_request_exception=False)
    client.force_authenticate(demo_org.member)

    def broken(execute, sql, params, many, context):
        raise ZeroDivisionError

    with connection.execute_wrapper(broken):
        assert client.get("/api/v1/requests/").status_code == 500


def test_a_database_without_its_migrations_is_a_fault_not_an_outage(demo_org) -> None:
    """SQLite says "no such column" with the OperationalError of a lost connection; retrying will not mend it."""
    client = APIClient(raise_request_exception=False)
    client.force_login(demo_org.member)
    with database_away(message="no such column: allocations_cluster.prometheus_recording_rules"):
        response = client.get("/api/v1/teams/")
    assert response.status_code == 500
    assert "Retry-After" not in response
