"""The new-request page in Chromium: the 48-hour cost beside the monthly rate, the team's budget and the what-if."""

from __future__ import annotations

import pytest

pytestmark = [
    pytest.mark.integration,
    pytest.mark.e2e,
    pytest.mark.django_db(transaction=True),
]


@pytest.mark.parametrize("width", [1440, 390])
def test_the_preview_prices_the_duration_and_compares_every_option(new_page, width) -> None:
    page = new_page("alice")
    page.set_viewport_size({"width": width, "height": 1000})
    page.goto("/requests/new/")
    page.select_option("#id_workload_type", "training")
    page.fill("#id_gpu_memory_gb", "60")
    page.fill("#id_duration_hours", "48")
    page.fill("#what-if-reference-hours", "10")
    page.select_option("#what-if-reference-model", "A100-40GB")
    page.locator("#preview dt", has_text="Cost for 48 h").wait_for()
    rows = page.locator("#what-if table.what-if-table tbody tr")
    rows.first.wait_for()
    text = page.locator("#what-if").inner_text()
    assert "Team this month so far" in text
    assert "This request this month" in text
    assert "Prices:" in text
    assert rows.count() >= 2
    assert "estimates: the reference hours scaled" in text  # a per-run estimate against the reference model
    page.screenshot(path=f"/tmp/h14-what-if-{width}.png", full_page=True)
