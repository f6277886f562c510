"""The audit page in Chromium for a platform admin: a change made in the browser shows with its before/after values,
the filters narrow it, and the page at 1440 and 390 px wide (screenshots under var/screenshots/)."""

from __future__ import annotations

from pathlib import Path

import pytest

pytestmark = [
    pytest.mark.integration,
    pytest.mark.e2e,
    pytest.mark.django_db(transaction=True),
]

SCREENSHOTS = Path(__file__).resolve().parents[2] / "var" / "screenshots"


def test_a_rejection_in_the_browser_shows_on_the_audit_page(new_page) -> None:
    from django.contrib.auth.models import User

    from allocations.models import Team
    from allocations.requests.services import gpu_request_submit

    request = gpu_request_submit(
        command=["python", "main.py"],
        acting_user=User.objects.get(username="alice"),
        team=Team.objects.get(slug="vision"),
        name="audited",
        profile_data={"workload_type": "training", "gpu_memory_gb": 40, "sla_tier": "tier2_batch"},
    )
    carol = new_page("carol")
    carol.goto(f"/requests/{request.pk}/")
    carol.locator("#review-comment").fill("Not this week.")
    carol.click("button[value=reject]")

    carol.goto("/audit/")
    carol.fill("input[name=actor]", "carol")
    carol.select_option("select[name=object_type]", "allocations.gpurequest")
    carol.get_by_role("button", name="Filter").click()
    table = carol.locator("#audit-table").inner_text()
    assert "pending_approval" in table and "rejected" in table and "Not this week." in table
    assert "Browser" in table and f"#{request.pk}" in table
    assert "format=csv" in carol.locator("#audit-csv").get_attribute("href")

    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    for width, height in ((1440, 900), (390, 844)):
        carol.set_viewport_size({"width": width, "height": height})
        carol.screenshot(path=str(SCREENSHOTS / f"audit-{width}.png"), full_page=True)
        assert carol.evaluate("document.querySelector('main').scrollWidth") <= width
