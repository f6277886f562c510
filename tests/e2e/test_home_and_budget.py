"""Home per role and the budget alert, in headless Chromium: each demo role lands on its own overview, at 1440 and
390 px wide with nothing scrolling sideways; a platform admin sets a team's money budget on its budget page, the hourly
check fires it to a real Teams Workflows webhook on loopback, and the team lead sees the budget spent and the alerts
sent. Screenshots go to /tmp/h13a-screens/ (README's to docs/)."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest

from tests.billing.chat_webhook import start_chat_webhook_server

pytestmark = [
    pytest.mark.integration,
    pytest.mark.e2e,
    pytest.mark.django_db(transaction=True),
]

SCREENSHOTS = Path("/tmp/h13a-screens")
# username: the section ids their home must show, and those it must not
ROLES = {
    "alice": ({"home-budget-vision"}, {"home-approvals", "home-fleet", "home-month-costs"}),
    "dave": ({"home-budget-vision"}, {"home-approvals", "home-month-costs"}),
    "carol": ({"home-approvals", "home-fleet", "home-month-costs"}, set()),
    "finance": ({"home-month-costs"}, {"home-approvals", "home-fleet", "home-budget-vision"}),
}


def _ids_present(page, ids: set[str]) -> set[str]:
    return {i for i in ids if page.locator(f"#{i}").count() > 0}


def _a_day_of_spend_for_vision() -> None:
    """Vision has held one dedicated H100 since a day ago (in this month where possible), so it has spent money."""
    from django.utils import timezone

    from allocations.models import NodePool, Team
    from tests.billing.cost_helpers import held_request

    now = timezone.now()
    start = max(now.replace(day=1, hour=0, minute=0, second=0, microsecond=0), now - timedelta(days=1))
    pool = NodePool.objects.filter(gpu_model__name="H100-80GB").first()
    held_request(team=Team.objects.get(slug="vision"), start=start - timedelta(hours=2), end=None, node_pool=pool)


@pytest.mark.parametrize("username", sorted(ROLES))
def test_each_role_lands_on_its_own_home_at_1440_and_390_px(new_page, username: str) -> None:
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    _a_day_of_spend_for_vision()
    expected, absent = ROLES[username]
    page = new_page(username)
    for width in (1440, 390):
        page.set_viewport_size({"width": width, "height": 900})
        page.goto("/")
        page.wait_for_load_state("networkidle")
        assert page.locator("text=You are not in a team yet").count() == 0
        assert _ids_present(page, expected) == expected
        assert _ids_present(page, absent) == set()
        overflow = page.evaluate("document.documentElement.scrollWidth - window.innerWidth")
        assert overflow <= 0, f"{username}'s home scrolls {overflow}px sideways at {width}px"
        page.screenshot(path=str(SCREENSHOTS / f"home-{username}-{width}.png"), full_page=True)
    if "home-budget-vision" in expected:
        budget = page.locator("#home-budget-vision")
        assert "spent this month" in budget.inner_text() or "budget" in budget.inner_text()


def test_a_budget_set_on_its_page_fires_to_the_teams_chat_and_shows_on_the_leads_pages(new_page, settings) -> None:
    from billing.costs.budget_alerts import team_budgets_check
    from billing.models import BudgetNotice

    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    _a_day_of_spend_for_vision()
    settings.CHAT_WEBHOOK_ALLOWED_HOSTS = ["127.0.0.1"]  # the webhook is on loopback, which the portal refuses
    chat, server = start_chat_webhook_server()
    try:
        admin = new_page("carol")
        admin.goto("/teams/vision/")
        admin.click("#team-budget-link")
        # The demo's budget for vision is edited down to 1.00 so the day's spend crosses every threshold.
        admin.fill("#id_monthly_amount", "1.00")
        admin.fill("#id_thresholds_pct", "50, 80, 100")
        admin.fill("#id_chat_webhook_url", chat.workflows_url())
        admin.click("#team-budget button[type=submit]")
        admin.wait_for_selector(".message")
        assert "1.00 USD" in admin.locator("#team-budget").inner_text()
        for width in (1440, 390):
            admin.set_viewport_size({"width": width, "height": 900})
            assert admin.evaluate("document.documentElement.scrollWidth - window.innerWidth") <= 0
            admin.screenshot(path=str(SCREENSHOTS / f"team-budget-page-carol-{width}.png"), full_page=True)

        result = team_budgets_check()  # what beat's hourly billing.check_team_budgets runs

        # The demo's other teams may cross thresholds of their own; only vision's budget has a chat URL.
        assert (result.chatted, result.failed) == (1, 0)
        vision_notices = BudgetNotice.objects.filter(team__slug="vision")
        assert sorted(vision_notices.values_list("threshold_pct", flat=True)) == [50, 80, 100]
        assert result.created == BudgetNotice.objects.count()
        assert len(chat.posts) == 1 and "crossing the 100 % threshold" in str(chat.posts[0]["body"])

        lead = new_page("dave")
        for width in (1440, 390):
            lead.set_viewport_size({"width": width, "height": 900})
            lead.goto("/")
            budget = lead.locator("#home-budget-vision .money-budget")
            assert budget.get_attribute("data-level") == "over"
            assert "Budget spent." in budget.inner_text()
            lead.screenshot(path=str(SCREENSHOTS / f"budget-home-dave-{width}.png"), full_page=True)
            lead.goto("/teams/vision/")
            notices = lead.locator(".budget-notices")
            assert "50 %" in notices.inner_text() and "100 %" in notices.inner_text()
            overflow = lead.evaluate("document.documentElement.scrollWidth - window.innerWidth")
            assert overflow <= 0, f"the team page scrolls {overflow}px sideways at {width}px"
            lead.locator("#month-to-date").screenshot(path=str(SCREENSHOTS / f"budget-team-dave-{width}.png"))
    finally:
        server.shutdown()
        server.server_close()
