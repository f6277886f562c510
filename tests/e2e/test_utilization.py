"""The platform utilization page in Chromium: the capacity forecast chart draws with the demo month of usage."""

from __future__ import annotations

import pytest

pytestmark = [
    pytest.mark.integration,
    pytest.mark.e2e,
    pytest.mark.django_db(transaction=True),
]

SCREENSHOT = "/tmp/e2e-utilization.png"


def test_platform_page_draws_the_forecast_chart_with_data(new_page) -> None:
    from billing.metering.demo_usage import generate_demo_usage

    assert generate_demo_usage(days=8) >= 0  # seed_demo may already have written it: idempotent
    page = new_page("carol")  # the demo's platform admin
    page.goto("/billing/utilization/")
    chart = page.locator("#chart-allocation-forecast")
    chart.and_(page.locator("[data-rendered=true]")).wait_for()
    # plotly drew at least one line with points for a pool, beside the capacity line.
    assert page.locator("#chart-allocation-forecast .scatterlayer .trace").count() >= 2
    assert (
        page.locator(
            "#chart-allocation-forecast g.shapelayer path, #chart-allocation-forecast .shapelayer path"
        ).count()
        >= 1
    )
    assert page.locator("#chart-utilization-forecast .scatterlayer .trace").count() >= 1
    rows = page.locator("table.forecast-table tbody tr")
    assert rows.count() >= 3
    assert "h100-dedicated" in page.locator("table.forecast-table").inner_text()
    assert page.locator("tr[data-alert-kind]").count() >= 1
    page.screenshot(path=SCREENSHOT, full_page=True)


def test_members_cannot_open_the_platform_page(new_page) -> None:
    page = new_page("alice")
    response = page.goto("/billing/utilization/")
    assert response is not None and response.status == 403
