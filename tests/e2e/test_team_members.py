"""The team page from the navigation in Chromium: a lead adds a member, changes a role and removes someone after a
confirmation naming them; at 390 px the page does not scroll sideways. Screenshots at 1440 and 390 px under /tmp."""

from __future__ import annotations

import pytest

from allocations.models import Membership, Role

pytestmark = [
    pytest.mark.integration,
    pytest.mark.e2e,
    pytest.mark.django_db(transaction=True),
]


def test_a_lead_manages_members_from_the_navigation(new_page) -> None:
    page = new_page("dave")
    page.set_viewport_size({"width": 1440, "height": 1000})
    page.click("nav.mainnav >> text=Teams")
    page.wait_for_url("**/teams/vision/")
    page.fill("#member-username", "bob")
    page.select_option("#member-role", "member")
    page.click("#member-add button[type=submit]")
    page.locator(".messages").wait_for()
    assert "bob joined Computer Vision as member." in page.locator(".messages").inner_text()
    page.select_option("#member-bob select[name=role]", "lead")
    page.click("#member-bob button:has-text('Change')")
    page.locator(".messages", has_text="bob is now team lead").wait_for()
    page.screenshot(path="/tmp/h13b-team-lead-1440.png", full_page=True)

    page.click("#member-alice button:has-text('Remove')")
    dialog = page.locator("dialog#confirm-dialog")
    dialog.wait_for(state="visible")
    assert "Remove alice from team Computer Vision?" in dialog.locator("h2").inner_text()
    dialog.locator("#confirm-ok").click()
    page.locator(".messages", has_text="alice was removed").wait_for()
    roles = dict(Membership.objects.filter(team__slug="vision").values_list("user__username", "role"))
    assert roles == {"dave": Role.LEAD, "bob": Role.LEAD}


def test_the_team_page_fits_a_narrow_screen(new_page) -> None:
    page = new_page("dave")
    page.set_viewport_size({"width": 390, "height": 844})
    page.goto("/teams/vision/")
    page.locator("#member-add").wait_for()
    assert page.evaluate("document.documentElement.scrollWidth - window.innerWidth") <= 0
    page.screenshot(path="/tmp/h13b-team-lead-390.png", full_page=True)


# Distinct rows the main navigation's links sit on.
NAV_ROWS = "new Set([...document.querySelectorAll('nav.mainnav a')].map(a => a.getBoundingClientRect().top)).size"


@pytest.mark.parametrize("username", ["carol", "dave"])
def test_the_navigation_with_teams_stays_on_one_line_at_1440(new_page, username: str) -> None:
    page = new_page(username)
    page.set_viewport_size({"width": 1440, "height": 900})
    page.goto("/teams/")
    assert page.locator("nav.mainnav a", has_text="Teams").get_attribute("aria-current") == "page"
    assert page.evaluate(NAV_ROWS) == 1
    page.screenshot(path=f"/tmp/h13b-nav-{username}-1440.png")


# The role control of a member row: where its select and its Change button sit, and the row's width against its card.
ROLE_CONTROL = """() => {
  const row = document.querySelector('#member-alice');
  const select = row.querySelector('select[name=role]').getBoundingClientRect();
  const change = row.querySelector('.member-role button').getBoundingClientRect();
  const card = document.querySelector('#members').getBoundingClientRect();
  const add = [...document.querySelectorAll('#member-add input[type=text], #member-add select, #member-add button')]
    .map(el => el.getBoundingClientRect());
  return {sameLine: change.top < select.bottom && select.top < change.bottom, selectWidth: select.width,
          cardShare: card.width / document.querySelector('main').getBoundingClientRect().width,
          addInside: add.every(r => r.left >= card.left && r.right <= card.right)};
}"""


@pytest.mark.parametrize("width", [1440, 390])
def test_a_leads_role_control_sits_on_one_line(new_page, width: int) -> None:
    page = new_page("dave")
    page.set_viewport_size({"width": width, "height": 900})
    page.goto("/teams/vision/")
    layout = page.evaluate(ROLE_CONTROL)
    assert layout["sameLine"], "the Change button wrapped under the role select"
    assert layout["selectWidth"] >= 120 and layout["addInside"]
    if width == 1440:  # Quotas and Members share the row: no empty column beside them
        assert layout["cardShare"] > 0.45
    page.locator("#members").screenshot(path=f"/tmp/hux-members-{width}.png")
