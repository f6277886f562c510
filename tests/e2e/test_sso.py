"""Single sign-on in Chromium against a real OIDC provider on loopback: the login page, the provider, groups to teams.

A user signs in through the provider (Keycloak-style path group and an Entra ID GUID group in the claim), lands in
the mapped team as an approver; the provider then drops the team's group, and the next sign-in removes that
membership while the approver role stays.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from django.contrib.auth.models import Group

from allocations.models import Membership, Team
from allocations.selectors import APPROVERS_GROUP
from portal.models import GroupMapping

pytestmark = [
    pytest.mark.integration,
    pytest.mark.e2e,
    pytest.mark.django_db(transaction=True),
]

SCREENSHOTS = Path(__file__).resolve().parents[2] / "var" / "screenshots"
APPROVERS_GUID = "0d9e6f3a-52b1-4c7e-9a48-1f2e3d4c5b6a"


def sign_in_with_sso(page, sub: str) -> None:
    """Press the SSO button, name the subject at the provider's consent page, and come back signed in."""
    page.goto("/accounts/login/")
    page.get_by_role("button", name="Sign in with single sign-on").click()
    page.wait_for_url("**/oauth2/authorize?**")
    page.fill("input[name=sub]", sub)
    page.get_by_role("button", name="Authorize").click()
    page.locator("header .username").wait_for()


def test_sso_login_maps_groups_and_a_lost_group_is_gone_at_the_next_login(browser, demo, sso) -> None:
    vision = Team.objects.get(slug="vision")
    GroupMapping.objects.create(group="/ml/vision", team=vision, role="lead")
    GroupMapping.objects.create(group=APPROVERS_GUID.upper(), access_group=Group.objects.get(name=APPROVERS_GROUP))
    sso.set_user("sub-sam", preferred_username="sam", email="sam@example.com", groups=["/ml/vision/", APPROVERS_GUID])

    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    for width, height in ((1440, 900), (390, 844)):
        context = browser.new_context(base_url=demo, viewport={"width": width, "height": height})
        page = context.new_page()
        page.goto("/accounts/login/")
        page.get_by_role("button", name="Sign in with single sign-on").wait_for()
        page.locator("summary", has_text="Administrator sign-in").click()
        page.screenshot(path=str(SCREENSHOTS / f"login-sso-{width}.png"), full_page=True)
        context.close()

    context = browser.new_context(base_url=demo, viewport={"width": 1400, "height": 1000})
    context.set_default_timeout(15_000)
    page = context.new_page()
    sign_in_with_sso(page, "sub-sam")
    assert page.locator("header .username").inner_text().startswith("sam")
    assert "approver" in page.locator("header .username").inner_text()
    assert page.locator("main", has_text="Vision").count() == 1
    assert Membership.objects.get(user__username="sam", team=vision).role == "lead"

    page.get_by_role("button", name="Sign out").click()
    page.wait_for_url("**/accounts/login/")
    sso.set_user("sub-sam", preferred_username="sam", email="sam@example.com", groups=[APPROVERS_GUID])
    sign_in_with_sso(page, "sub-sam")
    page.locator("#home-approvals").wait_for()  # an approver without a team lands on the platform overview
    assert "approver" in page.locator("header .username").inner_text()
    assert not Membership.objects.filter(user__username="sam").exists()
    context.close()
