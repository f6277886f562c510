"""The platform utilization page (approvers only), the request and team partials, and the pool forecast reads."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.db import connection
from django.template import Context, Template
from django.template.loader import render_to_string
from django.test import Client, RequestFactory
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from allocations.models import Cluster, GpuRequest, RequestEvent, RequestStatus
from billing.models import IngestStatus, UtilizationIngestHour, UtilizationRollup, UtilizationWatermark
from billing.utilization.request_utilization import request_coverage, request_utilization_context
from billing.utilization.selectors import (
    ingest_coverage,
    platform_utilization,
    pool_forecasts,
    team_utilization_context,
    window,
)
from gpucore.formatting import format_money
from tests.billing.rollups import hours_back, rollup
from tests.factories import ClusterFactory, DemoOrg, GpuRequestFactory, dedicated_spec

pytestmark = pytest.mark.django_db
URL = "/billing/utilization/"


def _hold(request, *, since) -> None:
    """The request was approved, provisioned and activated ``since`` (it holds GPUs from its activation on)."""
    previous = ""
    for to_status in ("approved", "provisioning", "active"):
        event = RequestEvent.objects.create(
            request=request, actor_label="test", from_status=previous, to_status=to_status
        )
        RequestEvent.objects.filter(pk=event.pk).update(at=since)  # history: the event happened back then
        previous = to_status
    GpuRequest.objects.filter(pk=request.pk).update(activated_at=since)


@pytest.fixture
def busy_org(demo_org: DemoOrg) -> DemoOrg:
    """Three requests on the H100 pool, activated 6, 4 and 2 days ago, and a day of rollups with every alert."""
    now = timezone.now()
    for days in (6, 4, 2):
        req = GpuRequestFactory(
            team=demo_org.team, status=RequestStatus.ACTIVE, node_pool=demo_org.pool, resource_units=2
        )
        _hold(req, since=now - timedelta(days=days))
    idle_req = GpuRequestFactory(team=demo_org.team, status=RequestStatus.ACTIVE, node_pool=demo_org.pool)
    hours = hours_back(now, 30)
    for hour in hours:
        rollup(cluster=demo_org.cluster, hour=hour, team=demo_org.team, request=idle_req, avg_utilization_pct=3.0)
    rollup(cluster=demo_org.cluster, hour=hours[-1], gpu_uuid="GPU-HOT", max_temperature_c=87.5, team=demo_org.team)
    rollup(cluster=demo_org.cluster, hour=hours[-1], gpu_uuid="GPU-MEM", memory_pressure_minutes=5, team=demo_org.team)
    rollup(cluster=demo_org.cluster, hour=hours[-1], gpu_uuid="GPU-IDLE", avg_utilization_pct=0.0)  # unallocated
    return demo_org


@pytest.mark.parametrize(
    ("role", "status"),
    [("platform_admin", 200), ("approver", 200), ("team_lead", 403), ("member", 403), ("outsider", 403)],
)
def test_platform_page_is_for_approvers(client: Client, demo_org: DemoOrg, role: str, status: int) -> None:
    client.force_login(demo_org.user(role))
    assert client.get(URL).status_code == status


def test_platform_page_needs_login(client: Client) -> None:
    response = client.get(URL)
    assert response.status_code == 302 and "/accounts/login/" in response["Location"]


def test_platform_page_shows_alerts_unallocated_use_and_forecast(client: Client, busy_org: DemoOrg) -> None:
    client.force_login(busy_org.approver)
    response = client.get(URL)
    html = response.content.decode()
    assert 'data-alert-kind="temperature"' in html and "87.5" in html
    assert 'data-alert-kind="memory_pressure"' in html
    assert 'data-alert-kind="idle"' in html
    assert "idle (no pod)" in html  # the unallocated GPU is capacity, listed as such, not a waste alert
    assert 'id="figure-allocation-forecast"' in html
    assert "plotly-cartesian.min.js" in html
    context = response.context
    assert context["alert_counts"] == {"temperature": 1, "memory_pressure": 1, "idle": 1}


def test_pool_forecast_from_request_events(busy_org: DemoOrg) -> None:
    [row] = [f for f in pool_forecasts() if f.pool == busy_org.pool]
    assert row.capacity == 16 and row.allocated_now == 6
    assert row.allocation.trend is not None and row.allocation.trend.slope_per_day > 0
    assert row.allocation.run_out_at is not None
    assert row.utilization.history  # the idle request's hours map to the pool


def test_platform_context_refuses_non_approvers(demo_org: DemoOrg) -> None:
    with pytest.raises(PermissionError):
        platform_utilization(user=demo_org.member)


def test_incomplete_hours_never_raise_waste(demo_org: DemoOrg) -> None:
    req = GpuRequestFactory(team=demo_org.team, status=RequestStatus.ACTIVE)
    hour = hours_back(timezone.now(), 1)[0]
    rollup(
        cluster=demo_org.cluster, hour=hour, team=demo_org.team, request=req, avg_utilization_pct=0, is_complete=False
    )
    context = request_utilization_context(user=demo_org.member, request=req)["utilization"]
    assert context["alert_groups"] == []


def test_request_partial_suggests_a_mig_slice_with_the_saving(demo_org: DemoOrg) -> None:
    req = GpuRequestFactory(team=demo_org.team, status=RequestStatus.ACTIVE, spec=dedicated_spec("A100-40GB"))
    for hour in hours_back(timezone.now(), 30):
        rollup(
            cluster=demo_org.cluster,
            hour=hour,
            team=demo_org.team,
            request=req,
            avg_utilization_pct=12.0,
            peak_memory_used_mib=7.5 * 1024,
            gpu_model_name="NVIDIA A100-SXM4-40GB",
        )
    context = request_utilization_context(user=demo_org.member, request=req)
    [advice] = context["utilization"]["advice"]
    assert advice["advice"].suggested_profile == "2g.10gb"
    html = render_to_string("billing/_request_utilization.html", context)
    assert "Use a MIG 2g.10gb slice" in html
    if advice["monthly_saving"] is not None:
        assert f"Saves {format_money(advice['monthly_saving'], advice['currency'])} a month" in html


def test_request_partial_is_empty_for_other_teams(demo_org: DemoOrg) -> None:
    req = GpuRequestFactory(team=demo_org.team, status=RequestStatus.ACTIVE)
    context = request_utilization_context(user=demo_org.outsider, request=req)
    assert context == {"utilization": None}
    assert render_to_string("billing/_request_utilization.html", context).strip() == ""


def test_request_panels_trust_only_the_object_the_page_read_as_visible(demo_org: DemoOrg) -> None:
    """The request page's panels skip their visibility read for the object its view read through the scoping
    selector (``visible_request``); another object of the same row vouches for nothing."""
    req = GpuRequestFactory(team=demo_org.team, status=RequestStatus.ACTIVE)
    rollup(cluster=demo_org.cluster, hour=hours_back(timezone.now(), 1)[0], team=demo_org.team, request=req)
    http_request = RequestFactory().get("/")
    http_request.user = demo_org.outsider
    panels = Template(
        "{% load billing_panels %}"
        "{% request_utilization_panel gpu_request %}{% request_troubleshooting_panel gpu_request %}"
    )

    copy = GpuRequest.objects.get(pk=req.pk)
    html = panels.render(Context({"request": http_request, "gpu_request": req, "visible_request": copy}))
    assert 'id="utilization"' not in html and 'id="gpu-troubleshooting"' not in html

    http_request.user = demo_org.member
    html = panels.render(Context({"request": http_request, "gpu_request": req, "visible_request": req}))
    assert 'id="utilization"' in html and 'id="gpu-troubleshooting"' in html


def _request_page(user, req) -> tuple[str, list[str]]:
    client = Client()
    client.force_login(user)
    with CaptureQueriesContext(connection) as captured:
        response = client.get(f"/requests/{req.pk}/")
    assert response.status_code == 200
    return response.content.decode(), [query["sql"] for query in captured]


def test_a_request_page_without_rollups_in_the_window_reads_them_once(demo_org: DemoOrg) -> None:
    """No rollups of the request in the last 30 days (the panel's one aggregate says so): its life inside that window
    is not read again for the chart, nor its last 7 days for the troubleshooting tree, nor the cluster's drivers."""
    req = GpuRequestFactory(team=demo_org.team, status=RequestStatus.RELEASED, cluster=demo_org.cluster)
    now = timezone.now()
    GpuRequest.objects.filter(pk=req.pk).update(activated_at=now - timedelta(days=3), ended_at=now - timedelta(days=1))

    html, queries = _request_page(demo_org.member, req)

    assert "No utilization measured for this request" in html and "No hourly readings to chart yet" in html
    assert 'id="gpu-troubleshooting"' not in html
    assert sum('FROM "billing_utilizationrollup"' in sql for sql in queries) == 1
    assert not any('"billing_gpuhealthhour"' in sql for sql in queries)


def test_a_request_page_still_charts_a_life_older_than_the_window(demo_org: DemoOrg) -> None:
    """Rollups only before the 30-day window: the allocation's life (up to 90 days) is read for the chart."""
    req = GpuRequestFactory(team=demo_org.team, status=RequestStatus.RELEASED, cluster=demo_org.cluster)
    now = timezone.now()
    life = {"activated_at": now - timedelta(days=45), "ended_at": now - timedelta(days=35)}
    GpuRequest.objects.filter(pk=req.pk).update(**life)
    rollup(cluster=demo_org.cluster, hour=hours_back(now - timedelta(days=40), 1)[0], team=demo_org.team, request=req)

    html, _ = _request_page(demo_org.member, req)

    assert "No utilization measured for this request" in html
    assert 'id="request-series"' in html and "No hourly readings to chart yet" not in html


def test_the_request_summary_counts_only_its_own_rollups_in_the_window(demo_org: DemoOrg) -> None:
    """The panel's summary and alerts are of the request's own rollups in [start, end): another request's hours and
    hours outside the window are not in them."""
    busy, other, idle = (GpuRequestFactory(team=demo_org.team, status=RequestStatus.ACTIVE) for _ in range(3))
    now = timezone.now()
    hours = hours_back(now, 6)
    for n, hour in enumerate(hours):
        rollup(
            cluster=demo_org.cluster,
            hour=hour,
            team=demo_org.team,
            request=busy,
            sample_count=60,
            avg_utilization_pct=None if n == 2 else 10.0 * n,
            memory_pressure_minutes=n % 2,
            max_temperature_c=60.0 + n,
            is_complete=n != 4,
            energy_kwh=0.1 * n,
        )
    rollup(cluster=demo_org.cluster, hour=hours[0], team=demo_org.team, request=other, sample_count=7)
    rollup(cluster=demo_org.cluster, hour=hours_back(now - timedelta(days=31), 1)[0], team=demo_org.team, request=idle)

    def panel(req, days: int = 30) -> dict:
        return request_utilization_context(user=demo_org.member, request=req, now=now, days=days)["utilization"]

    found = panel(busy)
    assert found["rollups_in_window"] == 6 and found["has_data"]
    assert found["summary"]["memory_pressure_hours"] == 3
    assert panel(other)["rollups_in_window"] == 1
    idle_panel = panel(idle)
    assert idle_panel["rollups_in_window"] == 0 and not idle_panel["has_data"] and idle_panel["alert_groups"] == []
    assert panel(idle, days=32)["rollups_in_window"] == 1


def test_the_request_coverage_is_the_cluster_coverage_of_its_one_cluster(demo_org: DemoOrg) -> None:
    """The request page's coverage of its one cluster agrees with ``ingest_coverage`` of that cluster."""
    now = timezone.now()
    start, end = window(days=30, now=now)
    other = ClusterFactory()
    cluster = demo_org.cluster
    UtilizationWatermark.objects.filter(cluster=cluster).delete()
    for when, status, on in (
        (start - timedelta(hours=1), IngestStatus.FAILED, cluster),  # before the window
        (start, IngestStatus.PARTIAL, cluster),
        (start + timedelta(hours=5), IngestStatus.NO_DATA, cluster),
        (start + timedelta(hours=6), IngestStatus.COMPLETE, cluster),
        (start + timedelta(hours=7), IngestStatus.FAILED, other),
    ):
        UtilizationIngestHour.objects.create(cluster=on, hour=when, status=status, updated_at=now)

    def both() -> tuple[dict, dict]:
        expected = ingest_coverage(start=start, end=end, clusters=Cluster.objects.filter(pk=cluster.pk))
        return request_coverage(start=start, end=end, cluster_id=cluster.pk), expected

    found, expected = both()
    assert found == expected and found["incomplete_hours"] == 2 and found["ingested_through"] is None
    UtilizationWatermark.objects.create(cluster=cluster, last_complete_hour=end - timedelta(hours=1), updated_at=now)
    found, expected = both()
    assert found == expected and found["ingested_through"] == end
    UtilizationIngestHour.objects.filter(cluster=cluster).delete()
    found, expected = both()
    assert found == expected and found["complete"] and found["incomplete_hours"] == 0


def test_team_partial_counts_alerts_per_request(busy_org: DemoOrg) -> None:
    context = team_utilization_context(user=busy_org.team_lead, team=busy_org.team)
    data = context["team_utilization"]
    assert data["alert_counts"] == {"temperature": 1, "memory_pressure": 1, "idle": 1}
    assert [r["alerts"] for r in data["requests"]] == [1]
    html = render_to_string("billing/_team_utilization.html", context)
    assert "Idle (waste) alerts" in html and "GPU temperature above 83 °C" in html
    assert '<span class="alert-count">1 GPU</span>' in html  # counted in the unit listed: GPUs, not runs
    assert data["alert_runs"] == {"temperature": 1, "memory_pressure": 1, "idle": 1}
    assert team_utilization_context(user=busy_org.outsider, team=busy_org.team) == {"team_utilization": None}


def test_busy_gpus_are_summed_per_pool_from_the_requests_pool_or_the_clusters_model(demo_org: DemoOrg) -> None:
    # A rollup counts for its request's pool; without one (no request, or a request with no pool) for the pool of
    # its cluster running its GPU model; never for a pool of an inactive cluster. Incomplete hours never count.
    from allocations.models import GpuModel, NodePool
    from billing.utilization.selectors import busy_gpus_by_pool

    a100 = GpuModel.objects.get(name="A100-40GB")
    a100_name = a100.dcgm_model_names[0]
    a100_pool = NodePool.objects.create(cluster=demo_org.cluster, name="a100", gpu_model=a100, node_count=1)
    retired = ClusterFactory(is_active=False)
    retired_pool = NodePool.objects.create(cluster=retired, name="old", gpu_model=a100, node_count=1)
    on_h100 = GpuRequestFactory(team=demo_org.team, status=RequestStatus.ACTIVE, node_pool=demo_org.pool)
    no_pool = GpuRequestFactory(team=demo_org.team, status=RequestStatus.ACTIVE, node_pool=None)
    on_retired = GpuRequestFactory(team=demo_org.team, status=RequestStatus.ACTIVE, node_pool=retired_pool)
    first, second = hours_back(timezone.now(), 2)
    for gpu in ("GPU-A", "GPU-B"):  # two devices of one request, the same hour: 2 x 50 % of an hour
        rollup(cluster=demo_org.cluster, hour=first, gpu_uuid=gpu, request=on_h100, team=demo_org.team)
    rollup(cluster=demo_org.cluster, hour=second, gpu_uuid="GPU-A", request=on_h100, avg_utilization_pct=25.0)
    rollup(cluster=demo_org.cluster, hour=first, gpu_uuid="GPU-C", gpu_model_name=a100_name, avg_utilization_pct=30.0)
    rollup(
        cluster=demo_org.cluster, hour=first, gpu_uuid="GPU-D", gpu_model_name=a100_name, request=no_pool,
        avg_utilization_pct=20.0, sample_count=30,
    )  # fmt: skip
    rollup(cluster=retired, hour=first, gpu_uuid="GPU-E", gpu_model_name=a100_name, request=on_retired)
    rollup(cluster=demo_org.cluster, hour=second, gpu_uuid="GPU-F", request=on_h100, is_complete=False)

    busy = busy_gpus_by_pool(start=first, end=second + timedelta(hours=1))
    assert set(busy) == {demo_org.pool.pk, a100_pool.pk}
    assert busy[demo_org.pool.pk] == [(first, pytest.approx(1.0)), (second, pytest.approx(0.25))]
    assert busy[a100_pool.pk] == [(first, pytest.approx(0.3 + 0.1))]  # 30 % of an hour, 20 % of half an hour


def test_the_platform_page_keeps_what_it_derives_from_rollups_until_one_is_written(
    client: Client, demo_org: DemoOrg
) -> None:
    # The week's alerts and busy GPUs per pool are kept per process under the rollups' version token, beside the
    # approver's home's day (neither evicts the other); a rollup written is read on the next view.
    hour = hours_back(timezone.now(), 2)[0]
    rollup(cluster=demo_org.cluster, hour=hour, gpu_uuid="GPU-COOL", team=demo_org.team)
    client.force_login(demo_org.approver)
    assert "GPU-HOT" not in client.get(URL).content.decode()
    client.get("/")  # the home's own window
    with CaptureQueriesContext(connection) as kept:
        client.get(URL)
    derived = [
        q["sql"] for q in kept.captured_queries if '"max_temperature_c" >' in q["sql"] or "node_pool_id" in q["sql"]
    ]
    assert not [sql for sql in derived if "billing_utilizationrollup" in sql]

    rollup(cluster=demo_org.cluster, hour=hour, gpu_uuid="GPU-HOT", max_temperature_c=90.0, team=demo_org.team)
    html = client.get(URL).content.decode()
    assert 'data-alert-kind="temperature"' in html and "GPU-HOT" in html


def test_the_platform_summary_summed_from_its_clusters_equals_the_aggregate_of_every_rollup(demo_org: DemoOrg) -> None:
    from billing.utilization.selectors import (
        combined_aggregates,
        summary_from,
        usage_rows_by_cluster,
        usage_summary,
    )

    other = ClusterFactory(name="second")
    third = ClusterFactory(name="third")
    hours = hours_back(timezone.now(), 3)
    # Clusters with unequal sums, a missing utilization, no energy, memory pressure and the hottest GPU elsewhere.
    for n, hour in enumerate(hours):
        rollup(cluster=demo_org.cluster, hour=hour, gpu_uuid="GPU-a", avg_utilization_pct=30.0 + n, energy_kwh=0.5)
        rollup(cluster=other, hour=hour, gpu_uuid="GPU-b", sample_count=45, avg_utilization_pct=None, energy_kwh=None)
        rollup(
            cluster=third,
            hour=hour,
            gpu_uuid="GPU-c",
            is_complete=n != 1,
            memory_pressure_minutes=n,
            max_temperature_c=80.0 + n,
            peak_memory_used_mib=70000.0 - n,
        )
    start, end = hours[0], hours[-1] + timedelta(hours=1)
    qs = UtilizationRollup.objects.filter(hour__gte=start, hour__lt=end)
    assert len(usage_rows_by_cluster(qs)) == 3
    assert summary_from(combined_aggregates(usage_rows_by_cluster(qs))) == usage_summary(qs)
    # Only what one cluster has, and nothing at all.
    just_other = qs.filter(cluster=other)
    assert summary_from(combined_aggregates(usage_rows_by_cluster(just_other))) == usage_summary(just_other)
    nothing = qs.none()
    assert summary_from(combined_aggregates(usage_rows_by_cluster(nothing))) == usage_summary(nothing)
    assert platform_utilization(user=demo_org.approver)["summary"] == usage_summary(
        UtilizationRollup.objects.filter(hour__gte=window(days=7)[0], hour__lt=window(days=7)[1])
    )
