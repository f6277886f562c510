"""The cost dashboards in headless Chromium: every chart draws real traces from our own plotly.js."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

pytestmark = [
    pytest.mark.integration,
    pytest.mark.e2e,
    pytest.mark.django_db(transaction=True),
]

SCREENSHOT = Path(__file__).resolve().parents[2] / "var" / "screenshots" / "dashboards.png"
CHARTS = ["cost-over-time", "allocation-vs-utilization", "strategy-mix", "pool-heatmap", "cost-per-request"]


def _october_usage() -> None:
    """A price book, a month of mixed allocations (imported) and hourly rollups for the demo organisation."""
    from allocations.models import Cluster, GpuRequest, Team
    from billing.costs.services import price_book_load, usage_import
    from billing.metering.aggregates import refresh_usage_aggregates
    from billing.models import UtilizationRollup

    price_book_load(
        text="currency: USD\neffective_from: 2026-01-01\ngpu_models:\n"
        '  A100-40GB: {hourly: "2.10"}\n  H100-80GB: {hourly: "3.50"}\n  T4: {hourly: "0.52"}\n'
    )
    rows = [
        "vision,resnet-sweep,H100-80GB,dedicated,nvidia.com/gpu,4,,2026-10-01T00:00:00Z,2026-10-20T00:00:00Z,71",
        "vision,seg-serving,A100-40GB,mig,nvidia.com/mig-3g.20gb,2,,2026-10-01T00:00:00Z,2026-11-01T00:00:00Z,38",
        "vision,notebooks,T4,time-slicing,nvidia.com/gpu,3,4,2026-10-03T00:00:00Z,2026-10-28T00:00:00Z,12",
        "nlp,bert-train,H100-80GB,dedicated,nvidia.com/gpu,2,,2026-10-05T00:00:00Z,2026-10-25T00:00:00Z,83",
        "nlp,embed-batch,A100-40GB,mig,nvidia.com/mig-1g.5gb,4,,2026-10-01T00:00:00Z,2026-11-01T00:00:00Z,55",
    ]
    header = "team,request,gpu_model,strategy,resource_name,quantity,time_slice_replicas,start,end,avg_utilization_pct"
    usage_import(csv_text="\n".join([header, *rows]) + "\n")
    cluster = Cluster.objects.first()
    teams = {t.slug: t for t in Team.objects.all()}
    request = GpuRequest.objects.filter(team=teams["vision"]).first()
    start = datetime(2026, 10, 1, tzinfo=UTC)
    rollups = []
    for hour in range(24 * 7):
        at = start + timedelta(hours=hour)
        for gpu in range(4):
            util = float((hour * 7 + gpu * 13) % 100)
            rollups.append(
                UtilizationRollup(
                    cluster=cluster,
                    hour=at,
                    gpu_uuid=f"GPU-{gpu}",
                    namespace=teams["vision"].namespace if gpu < 3 else "",
                    pod=f"gpr-{request.pk}" if gpu < 3 else "",
                    team=teams["vision"] if gpu < 3 else None,
                    request=request if gpu < 3 else None,
                    gpu_model_name="NVIDIA H100 80GB HBM3",
                    sample_count=60,
                    avg_utilization_pct=util,
                    energy_kwh=0.4,
                    pulled_at=at,
                )
            )
    UtilizationRollup.objects.bulk_create(rollups)
    refresh_usage_aggregates(cluster_id=cluster.pk, start=start, end=start + timedelta(days=7))


def _trace_counts(page) -> dict[str, int]:
    return {
        chart: page.locator(f"#chart-{chart} .plot-container .trace, #chart-{chart} .plot-container .hm").count()
        for chart in CHARTS
    }


def test_dashboards_render_charts_with_data(new_page) -> None:
    _october_usage()
    page = new_page("carol")
    page.goto("/billing/dashboards/?month=2026-10")
    page.wait_for_selector("#chart-cost-over-time .plot-container")
    for chart in CHARTS:
        page.wait_for_selector(f"#chart-{chart} .main-svg")
    counts = _trace_counts(page)
    assert all(count > 0 for count in counts.values()), counts
    # Bars are drawn as SVG paths with a size, not an empty frame.
    assert page.locator("#chart-strategy-mix .bars path").count() >= 3
    assert page.locator("#chart-cost-per-request .bars path").count() >= 5
    assert "Saved vs all-dedicated" in page.inner_text("body")
    SCREENSHOT.parent.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SCREENSHOT), full_page=True)


def test_member_sees_only_their_team(new_page) -> None:
    _october_usage()
    page = new_page("bob")  # nlp
    page.goto("/billing/dashboards/?month=2026-10")
    page.wait_for_selector("#chart-cost-per-request .plot-container")
    table = page.text_content("#panel-cost-per-request table") or ""
    assert "bert-train" in table and "resnet-sweep" not in table
    assert "(idle capacity)" not in (page.text_content("#panel-cost-over-time table") or "")


def test_controls_filter_group_drill_down_and_narrow_screens(new_page) -> None:
    """Carol (approver) groups by strategy, filters to vision, turns idle on, clicks a bar; then 390 px wide."""
    from decimal import Decimal

    from allocations.models import Team
    from billing.models import TeamBudget

    _october_usage()
    TeamBudget.objects.update_or_create(
        team=Team.objects.get(slug="vision"), defaults={"monthly_amount": Decimal("3000")}
    )
    page = new_page("carol")
    page.set_viewport_size({"width": 1440, "height": 1000})
    page.goto("/billing/dashboards/?month=2026-10")
    page.wait_for_selector("#chart-cost-over-time .main-svg")
    # Controls: group by strategy, only vision, idle capacity on; the form submits as a GET.
    page.select_option("#id_group", "strategy")
    page.select_option("#id_filter_team", "vision")
    page.check("#id_idle")
    page.click("#dashboard-controls button[type=submit]")
    page.wait_for_url("**group=strategy**")
    page.wait_for_selector("#chart-cost-over-time .main-svg")
    legend = " ".join(page.locator("#chart-cost-over-time .legendtext").all_text_contents())
    assert "dedicated" in legend and "mig" in legend and "Idle capacity" in legend
    table = page.text_content("#panel-cost-per-request table") or ""
    assert "resnet-sweep" in table and "bert-train" not in table  # nlp filtered out
    assert "Monthly budget" in legend  # vision's spending budget as a line
    page.screenshot(path="/tmp/hdash/dashboards-1440.png", full_page=True)
    # A quarter: the range control switches inputs and the heading names the quarter.
    page.select_option("#id_period", "quarter")
    assert page.is_visible("#id_quarter") and not page.is_visible("#id_month")
    page.select_option("#id_quarter", "2026-Q4")
    page.click("#dashboard-controls button[type=submit]")
    page.wait_for_selector("h1:has-text('2026-Q4')")
    # Click-through: October's dedicated bar opens that month's dedicated requests.
    page.wait_for_selector("#chart-cost-over-time .bars path")
    page.locator("#chart-cost-over-time .trace.bars").first.locator("path").first.click(force=True)
    page.wait_for_url("**period=month**strategy=**")
    assert "month=2026-10" in page.url
    rows = page.text_content("#panel-cost-per-request table") or ""
    assert "resnet-sweep" in rows and "seg-serving" not in rows  # only the dedicated ones
    # An empty state, not a -1..1 axis: the speech team's first work is in October.
    page.goto("/billing/dashboards/?month=2026-08&team=speech&strategy=time-slicing")
    assert page.is_visible("[data-empty=cost-over-time]")
    assert "No GPU cost in August 2026 for these filters." in page.inner_text("#panel-cost-over-time")
    # 390 px: the controls stack and nothing scrolls sideways.
    page.set_viewport_size({"width": 390, "height": 844})
    page.goto("/billing/dashboards/?month=2026-10")
    page.wait_for_selector("#chart-cost-over-time .main-svg")
    assert page.evaluate("document.documentElement.scrollWidth - window.innerWidth") <= 0
    page.screenshot(path="/tmp/hdash/dashboards-390.png", full_page=True)


# On a phone: the heatmap's day labels (count, and whether two overlap) and the share of its chart the
# cost-per-request bars get once the request names have their margin.
NARROW_AXES = """() => {
  const boxes = [...document.querySelectorAll('#chart-pool-heatmap .xtick text')].map(t => t.getBoundingClientRect());
  const overlap = boxes.some((a, i) => boxes.slice(i + 1).some(b => a.left < b.right && b.left < a.right));
  const chart = document.querySelector('#chart-cost-per-request').getBoundingClientRect();
  const bars = document.querySelector('#chart-cost-per-request .nsewdrag').getBoundingClientRect();
  const labels = [...document.querySelectorAll('#chart-cost-per-request .ytick text')].map(t => t.textContent);
  return {dayTicks: boxes.length, overlap, barShare: bars.width / chart.width, labels};
}"""


def test_the_heatmap_and_cost_per_request_axes_thin_out_on_a_phone(new_page) -> None:
    _october_usage()
    page = new_page("carol")
    page.set_viewport_size({"width": 390, "height": 844})
    page.goto("/billing/dashboards/?month=2026-10")
    for chart in ("pool-heatmap", "cost-per-request"):
        page.wait_for_selector(f"#chart-{chart}[data-narrow=true] .main-svg")

    axes = page.evaluate(NARROW_AXES)

    assert 2 <= axes["dayTicks"] <= 5 and not axes["overlap"], axes
    # The 220 px label margin left the bars a quarter of the chart; labels sized to the short names leave them about
    # half (less with five-digit request numbers, as a long-lived database has).
    assert axes["barShare"] >= 0.45, axes
    # Names are cut short; the request number after them grows with the database's sequence, so it is not counted.
    names = [label.partition(" #")[0] for label in axes["labels"]]
    assert "resnet-sweep" in axes["labels"][-1] and all(len(name) <= 14 for name in names), axes
    for chart in ("pool-heatmap", "cost-per-request"):
        page.locator(f"#panel-{chart}").screenshot(path=f"/tmp/hux-{chart}-390.png")

    page.set_viewport_size({"width": 1440, "height": 900})  # a desktop keeps the full labels
    page.goto("/billing/dashboards/?month=2026-10")
    page.wait_for_selector("#chart-cost-per-request .main-svg")
    assert page.locator("#chart-cost-per-request[data-narrow]").count() == 0
    assert "Computer Vision · resnet-sweep" in page.inner_text("#chart-cost-per-request")
