"""Signing in and out, the home page, the health check and the eager-tasks banner."""

import pytest
from django.test import override_settings
from django.urls import reverse

from tests.factories import MembershipFactory, QuotaFactory, TeamFactory, UserFactory

pytestmark = pytest.mark.django_db


def test_home_requires_login(client) -> None:
    response = client.get(reverse("home"))
    assert response.status_code == 302
    assert response["Location"].startswith(reverse("login"))


def test_login_with_password_then_home_shows_teams_and_quota(client) -> None:
    team = TeamFactory(slug="vision", name="Vision")
    user = UserFactory(username="alice")
    MembershipFactory(user=user, team=team)
    QuotaFactory(team=team, resource_name="nvidia.com/mig-2g.10gb", limit=3)

    response = client.post(reverse("login"), {"username": "alice", "password": "demo"})
    assert response.status_code == 302
    assert response["Location"] == reverse("home")

    home = client.get(reverse("home"))
    assert home.status_code == 200
    body = home.content.decode()
    assert "Vision" in body
    assert "team-vision" in body
    assert "nvidia.com/mig-2g.10gb" in body
    assert "0 / 3" in body


def test_login_with_a_wrong_password_says_so(client) -> None:
    UserFactory(username="alice")
    response = client.post(reverse("login"), {"username": "alice", "password": "nope"})
    assert response.status_code == 200
    assert b"Please enter a correct username and password" in response.content


def test_user_without_team_sees_the_empty_state(client) -> None:
    client.force_login(UserFactory())
    response = client.get(reverse("home"))
    assert b"You are not in a team yet" in response.content


def test_logout_is_a_post_with_csrf(client) -> None:
    client.force_login(UserFactory())
    response = client.post(reverse("logout"))
    assert response.status_code == 302
    assert client.get(reverse("home")).status_code == 302


def test_login_form_carries_a_csrf_token(client) -> None:
    response = client.get(reverse("login"))
    assert b"csrfmiddlewaretoken" in response.content


@override_settings(CELERY_TASK_ALWAYS_EAGER=True)
def test_banner_says_tasks_run_in_process_without_a_broker(client) -> None:
    client.force_login(UserFactory())
    assert b"No task broker is configured" in client.get(reverse("home")).content


@override_settings(CELERY_TASK_ALWAYS_EAGER=False)
def test_no_banner_with_a_broker(client) -> None:
    client.force_login(UserFactory())
    assert b"No task broker is configured" not in client.get(reverse("home")).content


def test_healthz_reports_database(client) -> None:
    response = client.get(reverse("healthz"))
    assert response.status_code == 200
    assert response.json() == {"status": "ok", "database": "ok", "cache": "ok"}


def test_api_docs_load_swagger_from_our_static_files(client) -> None:
    client.force_login(UserFactory())
    body = client.get(reverse("api-docs")).content.decode()
    assert "swagger-ui-bundle.js" in body
    assert "cdn.jsdelivr.net" not in body and "unpkg.com" not in body
