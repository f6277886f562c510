"""Utilization you can see, in headless Chromium: a request's and a team's hourly chart of utilization, memory and
power drawn by our own plotly.js (the CSP allows nothing else), and alerts grouped by GPU and rule that a member
acknowledges from the team page. 1440 and 390 px, nothing scrolls sideways; screenshots in /tmp/h13a-screens/."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest

pytestmark = [
    pytest.mark.integration,
    pytest.mark.e2e,
    pytest.mark.django_db(transaction=True),
]

SCREENSHOTS = Path("/tmp/h13a-screens")


def _two_days_of_readings() -> int:
    """48 hours of rollups for vision's running training request, idle every sixth hour; returns the request id."""
    from django.utils import timezone

    from allocations.models import GpuRequest, RequestStatus
    from tests.billing.rollups import hours_back, rollup

    request = GpuRequest.objects.filter(team__slug="vision", status=RequestStatus.ACTIVE).order_by("pk").first()
    GpuRequest.objects.filter(pk=request.pk).update(activated_at=timezone.now() - timedelta(hours=50))
    for index, hour in enumerate(hours_back(timezone.now(), 48)):
        idle = index % 6 == 0
        rollup(
            cluster=request.cluster,
            hour=hour,
            team=request.team,
            request=request,
            gpu_uuid="GPU-E2E-0001",
            avg_utilization_pct=3.0 if idle else 55.0 + (index % 5) * 8,
            avg_memory_used_mib=4096.0 if idle else 30000.0 + index * 100,
            peak_memory_used_mib=36000.0,
            energy_kwh=0.08 if idle else 0.45,
        )
    return request.pk


def test_request_and_team_charts_draw_and_a_member_acknowledges_a_grouped_alert(new_page) -> None:
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    request_id = _two_days_of_readings()
    page = new_page("alice")
    for width in (1440, 390):
        page.set_viewport_size({"width": width, "height": 900})
        page.goto(f"/requests/{request_id}/")
        page.wait_for_selector("#request-series[data-rendered=true]")
        assert page.locator("#request-series .scatterlayer .trace").count() == 4
        assert page.evaluate("document.documentElement.scrollWidth - window.innerWidth") <= 0
        page.locator("#utilization").screenshot(path=str(SCREENSHOTS / f"request-series-{width}.png"))

        page.goto("/teams/vision/")
        page.wait_for_selector("#team-series[data-rendered=true]")
        assert page.evaluate("document.documentElement.scrollWidth - window.innerWidth") <= 0
        page.locator("#utilization").screenshot(path=str(SCREENSHOTS / f"team-series-{width}.png"))

    # Eight idle runs of one GPU are one row with a count; acknowledging it moves it out of "needs action".
    page.set_viewport_size({"width": 1440, "height": 900})
    row = page.locator('#utilization tr[data-alert-kind="idle"]')
    assert row.count() == 1
    assert row.locator(".alert-count").inner_text().startswith("8")
    assert row.get_attribute("data-needs-action") == "true"
    row.locator("button[value=acknowledge]").click()
    page.wait_for_selector(".message")
    assert page.url.endswith("/teams/vision/")  # back on the page it was acknowledged from
    row = page.locator('#utilization tr[data-alert-kind="idle"]')
    assert row.get_attribute("data-needs-action") == "false"
    assert "Acknowledged by alice" in row.inner_text()
    page.locator("#utilization").screenshot(path=str(SCREENSHOTS / "team-alerts-acknowledged-1440.png"))
