"""Password sign-in under PASSWORD_LOGIN: on (anyone), admins (break-glass staff only), off; permissions intact."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import Group
from django.urls import reverse

from allocations.selectors import APPROVERS_GROUP, user_is_approver
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def people():
    """An engineer and a break-glass administrator, both with local passwords ('demo')."""
    return UserFactory(username="engineer"), UserFactory(username="breakglass", is_staff=True, is_superuser=True)


def signs_in(client, username: str) -> bool:
    response = client.post(reverse("login"), {"username": username, "password": "demo"})
    client.post(reverse("logout"))
    return response.status_code == 302


@pytest.mark.parametrize(
    ("policy", "engineer", "admin"),
    [("on", True, True), ("admins", False, True), ("off", False, False)],
)
def test_who_may_sign_in_with_a_password(client, settings, people, policy, engineer, admin) -> None:
    settings.PASSWORD_LOGIN = policy
    assert signs_in(client, "engineer") is engineer
    assert signs_in(client, "breakglass") is admin


def test_the_admin_login_follows_the_same_policy(client, settings, people) -> None:
    settings.PASSWORD_LOGIN = "off"
    response = client.post(reverse("admin:login"), {"username": "breakglass", "password": "demo"})
    assert response.status_code == 200  # the form again, not a redirect into the admin
    settings.PASSWORD_LOGIN = "admins"
    response = client.post(reverse("admin:login"), {"username": "breakglass", "password": "demo"})
    assert response.status_code == 302


def test_a_refused_engineer_is_told_to_use_single_sign_on(client, settings, people) -> None:
    settings.PASSWORD_LOGIN = "admins"
    settings.OIDC_PROVIDER_NAME = "Acme SSO"
    body = client.post(reverse("login"), {"username": "engineer", "password": "demo"}).content.decode()
    assert "password sign-in is kept for break-glass administrators. Everyone else signs in with Acme SSO." in body
    # The shared class dict is not changed: the default message is back for the stock form.
    settings.PASSWORD_LOGIN = "on"
    body = client.post(reverse("login"), {"username": "engineer", "password": "wrong"}).content.decode()
    assert "Please enter a correct username and password" in body


def test_the_login_page_hides_the_password_form_when_it_is_off(client, sso, settings) -> None:
    settings.PASSWORD_LOGIN = "off"
    body = client.get(reverse("login")).content.decode()
    assert "Sign in with single sign-on" in body
    assert 'name="password"' not in body
    settings.PASSWORD_LOGIN = "admins"
    body = client.get(reverse("login")).content.decode()
    assert "Administrator sign-in (break&#8209;glass)" in body and 'name="password"' in body


def test_group_permissions_still_work_when_passwords_are_off(settings) -> None:
    settings.PASSWORD_LOGIN = "off"
    user = UserFactory()
    user.groups.add(Group.objects.get(name=APPROVERS_GROUP))
    assert user_is_approver(user)  # has_perm goes through the same backend


def test_unset_policy_keeps_passwords_for_administrators_once_single_sign_on_is_on(client, settings, people) -> None:
    settings.PASSWORD_LOGIN = ""
    assert signs_in(client, "engineer")
    settings.OIDC_ISSUER, settings.OIDC_CLIENT_ID = "https://id.example.com", "gpu-portal"
    assert not signs_in(client, "engineer")
    assert signs_in(client, "breakglass")
