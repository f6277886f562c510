"""Hourly series of a request's and a team's use (utilization, memory, power) and the charts drawn from them."""

from __future__ import annotations

import json
from datetime import timedelta
from decimal import Decimal

import pytest
from django.template.loader import render_to_string
from django.test import Client
from django.utils import timezone

from billing.utilization.series import request_series, team_series
from billing.utilization_charts import utilization_timeseries_figure, utilization_timeseries_figure_by_plotly
from tests.billing.rollups import hours_back, rollup
from tests.factories import DemoOrg, GpuRequestFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def two_gpu_request(demo_org: DemoOrg):
    """A request on two GPUs for the last 5 hours: GPU-A at 80 %, GPU-B at 20 % (B read for 30 minutes only)."""
    now = timezone.now()
    request = GpuRequestFactory(
        team=demo_org.team, cluster=demo_org.cluster, node_pool=demo_org.pool, activated_at=now - timedelta(hours=6)
    )
    for hour in hours_back(now, 5):
        common = {"cluster": demo_org.cluster, "hour": hour, "team": demo_org.team, "request": request}
        rollup(**common, gpu_uuid="GPU-A", avg_utilization_pct=80.0, avg_memory_used_mib=10240.0,
               peak_memory_used_mib=20480.0, energy_kwh=0.5)  # fmt: skip
        rollup(**common, gpu_uuid="GPU-B", sample_count=30, avg_utilization_pct=20.0, avg_memory_used_mib=5120.0,
               peak_memory_used_mib=6144.0, energy_kwh=0.2)  # fmt: skip
    return request


def test_each_hour_weights_utilization_by_minutes_and_sums_memory_and_power(two_gpu_request) -> None:
    points = request_series(two_gpu_request)

    assert len(points) == 5
    point = points[-1]
    assert point["utilization_pct"] == 60.0  # (80 x 60 + 20 x 30) / 90 minutes
    assert point["memory_gb"] == 15.0  # 10 GB + 5 GB in use on the two GPUs
    assert point["peak_memory_gb"] == 20.0  # the larger single GPU's peak
    assert point["power_w"] == 700.0  # 0.7 kWh in one hour: 700 W on average
    assert [p["hour"] for p in points] == sorted(p["hour"] for p in points)


def test_the_figure_has_three_panels_on_one_time_axis_and_none_without_points(two_gpu_request) -> None:
    figure = utilization_timeseries_figure(request_series(two_gpu_request), title="t")

    names = [trace["name"] for trace in figure["data"]]
    assert names == ["GPU utilization", "GPU memory used", "Power", "Peak memory (one GPU)"]
    assert figure["data"][0]["y"][-1] == 60.0
    assert {trace["xaxis"] for trace in figure["data"]} == {"x", "x2", "x3"}
    assert figure["layout"]["xaxis"]["matches"] == "x3" or figure["layout"]["xaxis2"]["matches"] == "x3"
    assert utilization_timeseries_figure([], title="t") is None


def test_the_figure_is_what_plotly_builds_from_the_same_points(two_gpu_request) -> None:
    """The fast path (a skeleton plotly built once, filled per call) answers plotly's own figure, gaps included."""
    points = request_series(two_gpu_request)
    points[1] = {**points[1], "utilization_pct": None, "power_w": Decimal("512.5")}  # a gap; a Decimal as float

    for title, shown in (("first", points), ("second", points[:2])):  # a second call starts from a clean skeleton
        figure = json.loads(json.dumps(utilization_timeseries_figure(shown, title=title)))
        assert figure == utilization_timeseries_figure_by_plotly(shown, title=title)


def test_the_chart_embeds_its_figure_as_json_that_cannot_close_the_script(two_gpu_request) -> None:
    title = "R&D <GPU> \"team\" 'é' → ✓ </script><script>alert(1)</script>"
    figure = utilization_timeseries_figure(request_series(two_gpu_request), title=title)
    html = render_to_string(
        "billing/_series_chart.html", {"figure": figure, "chart_id": "c", "figure_id": "c-figure", "label": "L"}
    )
    assert "</script><script>" not in html
    embedded = html.partition('<script id="c-figure" type="application/json">')[2].partition("</script>")[0]
    assert json.loads(embedded)["layout"]["meta"]["title"] == title
    assert json.loads(embedded)["data"][0]["y"] == figure["data"][0]["y"]


def test_the_request_and_team_pages_embed_the_chart_and_load_only_our_plotly(
    client: Client, demo_org: DemoOrg, two_gpu_request
) -> None:
    client.force_login(demo_org.member)
    for url, chart in ((f"/requests/{two_gpu_request.pk}/", "request-series"), ("/teams/vision/", "team-series")):
        html = client.get(url).content.decode()
        assert f'id="{chart}"' in html, url
        figure = json.loads(
            html.partition(f'id="{chart}-figure" type="application/json">')[2].partition("</script>")[0]
        )
        assert figure["data"][0]["y"][-1] == 60.0
        assert 'data-plotly-src="/static/js/plotly-cartesian.min.js"' in html
        assert "<script>" not in html  # no inline script: the CSP allows only our static files
    assert len(team_series(demo_org.team.pk)) == 5


def test_another_teams_request_shows_no_chart(client: Client, demo_org: DemoOrg, two_gpu_request) -> None:
    client.force_login(demo_org.outsider)
    assert client.get(f"/requests/{two_gpu_request.pk}/").status_code == 404
    assert client.get("/teams/vision/").status_code == 404
