"""Idle capacity in Chromium: a bar on the charges' axis whose link opens the GPU models and pools behind it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytestmark = [pytest.mark.integration, pytest.mark.e2e, pytest.mark.django_db(transaction=True)]

SCREENSHOTS = Path(__file__).resolve().parents[2] / "var" / "screenshots"


def test_idle_bar_opens_the_pools_behind_it(new_page) -> None:
    page = new_page("carol")
    page.goto("/billing/dashboards/?idle=1")
    figure = json.loads(json.loads(page.locator("script#cost-over-time").text_content()))
    [idle] = [trace for trace in figure["data"] if trace["name"].startswith("Idle capacity")]
    assert idle["type"] == "bar" and "yaxis" not in idle
    page.screenshot(path=str(SCREENSHOTS / "idle-dashboard-1440.png"), full_page=True)
    page.goto(idle["customdata"][-1])
    page.get_by_role("heading", name="Idle capacity", exact=False).first.wait_for()
    assert page.locator("section.card table").count() >= 1
    page.screenshot(path=str(SCREENSHOTS / "idle-breakdown-1440.png"), full_page=True)
    page.set_viewport_size({"width": 390, "height": 844})
    assert page.evaluate("document.documentElement.scrollWidth - window.innerWidth") <= 0
    page.screenshot(path=str(SCREENSHOTS / "idle-breakdown-390.png"), full_page=True)
    page.goto("/billing/dashboards/?idle=1")
    page.screenshot(path=str(SCREENSHOTS / "idle-dashboard-390.png"), full_page=True)
