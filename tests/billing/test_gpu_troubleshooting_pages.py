"""The hardware-vs-software tree on the request and cluster pages, from ingested XID, driver and temperature rows."""

from __future__ import annotations

from datetime import datetime, timedelta

import pytest
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from allocations.models import GpuRequest, RequestStatus
from billing.models import GpuHealthHour
from billing.utilization.troubleshooting import cluster_drivers
from tests.billing.rollups import hours_back, rollup
from tests.factories import ClusterFactory, DemoOrg, GpuRequestFactory

pytestmark = pytest.mark.django_db


def health(org: DemoOrg, hour: datetime, uuid: str, *, host: str = "gpu-node-1", driver: str = "535.129.03", **xid):
    return GpuHealthHour.objects.create(
        cluster=org.cluster,
        hour=hour,
        gpu_uuid=uuid,
        hostname=host,
        gpu_index=0,
        gpu_model_name="NVIDIA H100 80GB HBM3",
        driver_version=driver,
        reported_minutes=60,
        pulled_at=timezone.now(),
        **xid,
    )


def client_for(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


@pytest.fixture
def faulty(demo_org: DemoOrg):
    """A vision request on GPU-F for the last 3 hours; GPU-F reported XID 79 while held, XID 31 an hour before."""
    org = demo_org
    request = GpuRequestFactory(team=org.team, status=RequestStatus.ACTIVE, node_pool=org.pool, cluster=org.cluster)
    hours = hours_back(timezone.now(), 4)
    for hour in hours[1:]:
        rollup(cluster=org.cluster, hour=hour, team=org.team, request=request, gpu_uuid="GPU-F", max_temperature_c=70)
    health(org, hours[0], "GPU-F", xid_codes=[31], last_xid=31, xid_events=1, xid_minutes=2)  # before the request
    health(org, hours[2], "GPU-F", xid_codes=[79], last_xid=79, xid_events=1, xid_minutes=3)
    for hour in hours:
        health(org, hour, "GPU-OTHER", host="gpu-node-2", driver="550.54.15")
    return org, request, hours


def test_the_request_page_shows_only_the_branches_its_gpus_answer(faulty) -> None:
    org, request, hours = faulty
    html = client_for(org.member).get(reverse("allocations:request-detail", args=[request.pk])).content.decode()
    assert 'id="gpu-troubleshooting"' in html
    assert 'id="triage-xid" data-verdict="hardware"' in html
    assert 'data-xid="79"' in html and "GPU has fallen off the bus" in html
    assert 'data-xid="31"' not in html  # reported before the request held the GPU
    assert f"the last in the hour of {hours[2]:%Y-%m-%d %H:00} UTC" in html
    # The cluster's nodes run two drivers: a pod may land on either.
    assert 'id="triage-driver"' in html and "535.129.03 on gpu-node-1; 550.54.15 on gpu-node-2" in html
    assert 'id="triage-temperature"' not in html and 'id="triage-cuda"' not in html


def test_temperature_and_cuda_errors_of_a_failed_request(faulty) -> None:
    org, request, hours = faulty
    GpuHealthHour.objects.filter(gpu_uuid="GPU-OTHER").delete()
    GpuHealthHour.objects.filter(gpu_uuid="GPU-F").update(xid_codes=[], last_xid=None, xid_events=0)
    rollup(cluster=org.cluster, hour=hours[0], team=org.team, request=request, gpu_uuid="GPU-H", max_temperature_c=88)
    GpuRequest.objects.filter(pk=request.pk).update(
        status=RequestStatus.FAILED, status_detail="Back-off\nRuntimeError: CUDA error: device-side assert triggered"
    )
    html = client_for(org.member).get(reverse("allocations:request-detail", args=[request.pk])).content.decode()
    assert 'id="triage-xid"' not in html and 'id="triage-driver"' not in html
    assert 'id="triage-temperature" data-verdict="hardware"' in html
    assert f"GPU 0 on gpu-node-1 reached 88 °C (hour of {hours[0]:%Y-%m-%d %H:00} UTC)" in html  # from its rollup
    assert 'id="triage-cuda" data-verdict="software"' in html
    assert f"Request #{request.pk}: RuntimeError: CUDA error: device-side assert triggered" in html
    assert 'id="triage-runtime"' not in html  # another branch explains it


def test_a_request_with_healthy_readings_says_so_and_one_with_none_shows_nothing(faulty) -> None:
    org, request, _ = faulty
    GpuHealthHour.objects.all().update(xid_codes=[], last_xid=None, xid_events=0, driver_version="535.129.03")
    html = client_for(org.member).get(reverse("allocations:request-detail", args=[request.pk])).content.decode()
    assert 'id="triage-clear"' in html
    pending = GpuRequestFactory(team=org.team, status=RequestStatus.PENDING_APPROVAL)
    html = client_for(org.member).get(reverse("allocations:request-detail", args=[pending.pk])).content.decode()
    assert 'id="gpu-troubleshooting"' not in html


def test_the_cluster_page_reads_every_gpu_of_the_last_day(faulty) -> None:
    org, request, _ = faulty
    GpuRequest.objects.filter(pk=request.pk).update(
        status_detail="Failed to initialize NVML: Driver/library version mismatch"
    )
    url = reverse("allocations:cluster-detail", args=[org.cluster.name])
    html = client_for(org.platform_admin).get(url).content.decode()
    assert 'id="triage-xid"' in html and 'data-xid="31"' in html and 'data-xid="79"' in html
    assert "2 GPUs read" in html
    assert 'id="triage-driver"' in html and "Driver/library version mismatch" in html
    assert client_for(org.member).get(url).status_code in (403, 404)


def test_hot_gpus_known_only_from_utilization_count_as_read(demo_org: DemoOrg) -> None:
    # No health rows (XID, driver) came in, but the rollups show two GPUs above 83 °C: the count names both.
    for hour in hours_back(timezone.now(), 2):
        for uuid in ("GPU-HOT-1", "GPU-HOT-2"):
            rollup(cluster=demo_org.cluster, hour=hour, team=None, gpu_uuid=uuid, max_temperature_c=89)
    url = reverse("allocations:cluster-detail", args=[demo_org.cluster.name])
    html = client_for(demo_org.platform_admin).get(url).content.decode()
    assert "2 GPUs read" in html and "0 GPUs read" not in html


def test_a_cluster_without_readings_does_not_claim_health(demo_org: DemoOrg) -> None:
    url = reverse("allocations:cluster-detail", args=[demo_org.cluster.name])
    html = client_for(demo_org.platform_admin).get(url).content.decode()
    assert 'id="triage-no-readings"' in html and 'id="triage-clear"' not in html


def test_cluster_drivers_are_each_nodes_latest_reported_version_in_the_window(demo_org: DemoOrg) -> None:
    """Each node's latest version in the window, blank versions skipped, other clusters' nodes not read."""
    hours = hours_back(timezone.now(), 5)
    health(demo_org, hours[0], "GPU-1", host="node-a", driver="470.57.02")  # before the window
    health(demo_org, hours[1], "GPU-1", host="node-a", driver="535.129.03")
    health(demo_org, hours[3], "GPU-1", host="node-a", driver="550.54.15")  # upgraded: the latest counts
    health(demo_org, hours[4], "GPU-1", host="node-a", driver="")  # not reported: skipped
    health(demo_org, hours[2], "GPU-2", host="node-b", driver="535.129.03")
    other = ClusterFactory()
    GpuHealthHour.objects.filter(hostname="node-b").update(cluster=other)
    health(demo_org, hours[1], "GPU-3", host="node-c", driver="535.104.05")
    start, end = hours[1], hours[4] + timedelta(hours=1)

    assert cluster_drivers(cluster_ids={demo_org.cluster.pk}, start=start, end=end) == {
        "node-a": "550.54.15",
        "node-c": "535.104.05",
    }
    assert cluster_drivers(cluster_ids={other.pk}, start=start, end=end) == {"node-b": "535.129.03"}
    assert cluster_drivers(cluster_ids={demo_org.cluster.pk, other.pk}, start=start, end=end) == {
        "node-a": "550.54.15",
        "node-b": "535.129.03",
        "node-c": "535.104.05",
    }
    assert cluster_drivers(cluster_ids=set(), start=start, end=end) == {}
