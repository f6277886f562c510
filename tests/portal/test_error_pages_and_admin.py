"""The demo server (DEBUG on, as ``make run``) answers 404 and 500 with the portal's own pages, not Django's
technical ones; the API keeps its JSON; the admin offers what an operator edits, not the libraries' plumbing."""

from __future__ import annotations

import pytest
from django.contrib import admin
from django.test import Client
from django.urls import path

from portal.urls import urlpatterns as portal_urlpatterns
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db


def _fails(request):
    raise RuntimeError("boom")


urlpatterns = [path("boom/", _fails), *portal_urlpatterns]
handler404 = "portal.views.page_not_found"


@pytest.fixture
def demo_server(settings):
    settings.DEBUG = True
    settings.PORTAL_DEBUG_ERROR_PAGES = False
    settings.ROOT_URLCONF = __name__
    return settings


def test_a_missing_page_is_the_branded_404_under_debug(demo_server) -> None:
    client = Client()
    client.force_login(UserFactory())

    for url in ("/no-such-page/", "/teams/no-such-team/", "/requests/999999/"):
        response = client.get(url)
        body = response.content.decode()
        assert response.status_code == 404, url
        assert "Nothing here" in body and "GPU Portal" in body, url
        assert "Django tried these URL patterns" not in body and "DEBUG = True" not in body, url


def test_an_error_is_the_branded_500_under_debug(demo_server) -> None:
    client = Client(raise_request_exception=False)

    response = client.get("/boom/")

    body = response.content.decode()
    assert response.status_code == 500
    assert "Something went wrong on our side" in body
    assert "Traceback" not in body and "RuntimeError" not in body


def test_the_api_keeps_its_json_404_under_debug(demo_server, api_client) -> None:
    api_client.force_authenticate(UserFactory())

    response = api_client.get("/api/v1/requests/999999/")

    assert response.status_code == 404 and response["Content-Type"].startswith("application/json")


def test_a_developer_gets_the_technical_pages_back(demo_server) -> None:
    demo_server.PORTAL_DEBUG_ERROR_PAGES = True
    client = Client()
    client.force_login(UserFactory())

    assert "Django tried these URL patterns" in client.get("/no-such-page/").content.decode()


def test_the_admin_offers_no_plumbing() -> None:
    registered = {model._meta.label for model in admin.site._registry}

    assert not registered & {
        "social_django.Nonce",
        "social_django.Association",
        "axes.AccessLog",
        "axes.AccessFailureLog",
        "authtoken.TokenProxy",
    }
    # What operators edit stays: users and groups, teams, quotas, clusters, budgets, and unlocking a locked-out user.
    assert {
        "auth.User",
        "allocations.Team",
        "allocations.Quota",
        "billing.TeamBudget",
        "axes.AccessAttempt",
    } <= registered
