"""Utilization ingest against the real ``prometheus`` binary: backfilled DCGM history plus a live in-process exporter.

History (two UTC days, one OpenMetrics file each, turned into blocks by promtool) is stored as a ServiceMonitor
scrape stores it: workload labels renamed to ``exported_*`` for most devices, plain for one. The live exporter is
scraped with ``honor_labels: false`` to prove the renaming itself.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta

import pytest

from gpucore.dcgm_synthetic import NOT_SUPPORTED
from tests.integration.dcgm_exporter import (
    DcgmExporter,
    FakeDevice,
    PrometheusServer,
    free_port,
    prometheus_with_history,
)

# The `prometheus` marker is not registered in pyproject.toml yet (--strict-markers would reject it), so this module
# applies the same gate as tests/conftest.py itself: skip on a laptop, fail under REQUIRE_SERVICES=1.
pytestmark = [pytest.mark.integration, pytest.mark.prometheus, pytest.mark.django_db]

HOURS = 26
VISION_REQUEST, NLP_REQUEST = 9012, 9013
A100 = FakeDevice(
    uuid="GPU-3bc239e1-4cc8-97e4-e817-5a36dfd2885e",
    gpu=0,
    model_name="NVIDIA A100-SXM4-40GB",
    host="gpu-node-2",
    fb_total_mib=4864,
)
DEVICES = [
    # Whole H100 held by a vision request pod; stored with exported_* labels.
    FakeDevice(
        uuid="GPU-00000000-0000-0000-0000-00000000a001",
        gpu=0,
        namespace="team-vision",
        pod=f"gpr-{VISION_REQUEST}-abcde",
        util_pct=80,
        fb_used_mib=40960,
        power_w=500,
    ),
    # Whole H100 with the newer lower-case hostname and plain labels (no conflicting target labels).
    FakeDevice(
        uuid="GPU-00000000-0000-0000-0000-00000000a002",
        gpu=1,
        host_label="hostname",
        namespace="team-nlp",
        pod=f"gpr-{NLP_REQUEST}",
        spelling="plain",
        util_pct=30,
        fb_used_mib=10240,
        power_w=200,
    ),
    # gpr-90123 is not request 9012: the team's, no request's.
    FakeDevice(
        uuid="GPU-00000000-0000-0000-0000-00000000a003",
        gpu=2,
        namespace="team-vision",
        pod="gpr-90123-zz",
        util_pct=50,
        fb_used_mib=2048,
        power_w=300,
    ),
    # MIG instances: one held by the vision request, one idle, one in a namespace no team owns.
    replace(
        A100,
        mig_profile="1g.5gb",
        mig_id="7",
        namespace="team-vision",
        pod=f"gpr-{VISION_REQUEST}-mig-0",
        util_pct=25,
        fb_used_mib=3072,
    ),
    replace(A100, mig_profile="1g.5gb", mig_id="8"),
    replace(A100, mig_profile="1g.5gb", mig_id="9", namespace="research", pod=f"gpr-{VISION_REQUEST}-q", util_pct=50),
    # An idle whole GPU on a node whose driver was upgraded apart from the others (a driver mismatch).
    FakeDevice(
        uuid="GPU-00000000-0000-0000-0000-00000000a004",
        gpu=3,
        host="gpu-node-3",
        driver_version="550.54.15",
        power_w=60,
    ),
]
SENTINEL_HOUR = 2  # the first device reports DCGM's "not supported" utilization for 10 minutes of this hour
# DCGM_FI_DEV_XID_ERRORS of DEVICES[2] (a gauge: the last code, 0 for none), as minute -> code from hour 3 on:
# XID 13 for three minutes, again after a gap, then 79 across the hour boundary into hour 4.
XID_HOUR = 3
XID_MINUTES = {10: 13, 11: 13, 12: 13, 20: 13, 58: 79, 59: 79, 60: 79, 61: 79}


@dataclass
class Rig:
    prometheus: PrometheusServer
    exporter: DcgmExporter
    first_hour: datetime

    def hour(self, n: int) -> datetime:
        return self.first_hour + timedelta(hours=n)

    @property
    def now(self) -> datetime:
        """A clock at which the whole history is complete."""
        return self.hour(HOURS) + timedelta(minutes=10)


@pytest.fixture(scope="module")
def rig(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Rig]:
    # History starts on a UTC midnight so the 26 hours span two day files; it ends well before now (no overlap
    # with what the live exporter adds).
    now = datetime.now(UTC)
    first_hour = now.replace(hour=0, minute=0, second=0, microsecond=0) - timedelta(days=2)
    sentinel_start = first_hour + timedelta(hours=SENTINEL_HOUR)

    def readings(device: FakeDevice, at: datetime) -> dict[str, float]:
        values = device.readings()
        if device is DEVICES[0] and sentinel_start <= at < sentinel_start + timedelta(minutes=10):
            values["DCGM_FI_DEV_GPU_UTIL"] = float(NOT_SUPPORTED)
        if device is DEVICES[2]:
            minute = int((at - first_hour - timedelta(hours=XID_HOUR)).total_seconds() // 60)
            values["DCGM_FI_DEV_XID_ERRORS"] = float(XID_MINUTES.get(minute, 0))
        return values

    exporter = DcgmExporter(DEVICES)
    port = exporter.start()
    try:
        with prometheus_with_history(
            DEVICES,
            start=first_hour,
            end=first_hour + timedelta(hours=HOURS),
            out_dir=tmp_path_factory.mktemp("openmetrics"),
            readings=readings,
            scrape_targets=[f"127.0.0.1:{port}"],
        ) as (prometheus, files):
            assert len(files) == 2
            yield Rig(prometheus, exporter, first_hour)
    finally:
        exporter.stop()


@pytest.fixture
def org(rig: Rig):
    from tests.factories import ClusterFactory, GpuRequestFactory, TeamFactory

    vision = TeamFactory(slug="vision")
    nlp = TeamFactory(slug="nlp")
    cluster = ClusterFactory(name="gpu-east", prometheus_url=rig.prometheus.url)
    vision_request = GpuRequestFactory(id=VISION_REQUEST, team=vision)
    nlp_request = GpuRequestFactory(id=NLP_REQUEST, team=nlp)
    return type("Org", (), {"vision": vision, "nlp": nlp, "cluster": cluster, "vr": vision_request, "nr": nlp_request})


def snapshot(cluster) -> list[tuple]:
    from billing.models import UtilizationRollup

    return list(
        UtilizationRollup.objects.filter(cluster=cluster)
        .order_by("hour", "gpu_uuid", "mig_instance", "namespace", "pod")
        .values_list(
            "hour",
            "gpu_uuid",
            "mig_instance",
            "namespace",
            "pod",
            "team__slug",
            "request_id",
            "sample_count",
            "avg_utilization_pct",
            "peak_utilization_pct",
            "avg_memory_used_mib",
            "peak_memory_used_mib",
            "energy_kwh",
            "is_complete",
        )
    )


def test_utilization_lands_on_the_right_team_and_request(rig: Rig, org) -> None:
    from billing.metering.selectors import team_usage
    from billing.metering.services import utilization_pull
    from billing.models import UtilizationRollup

    result = utilization_pull(cluster=org.cluster, start=rig.hour(0), end=rig.hour(24), now=rig.now)
    assert (result.hours, result.rows) == (24, 24 * len(DEVICES))
    assert result.watermark == rig.hour(23)

    rows = UtilizationRollup.objects.filter(cluster=org.cluster)
    first = rows.get(hour=rig.hour(0), gpu_uuid=DEVICES[0].uuid)
    assert (first.team, first.request, first.namespace, first.pod) == (
        org.vision,
        org.vr,
        "team-vision",
        f"gpr-{VISION_REQUEST}-abcde",
    )
    assert (first.sample_count, first.avg_utilization_pct, first.peak_memory_used_mib) == (60, 80.0, 40960.0)
    assert first.energy_kwh == pytest.approx(0.5)  # 500 W for an hour
    assert (first.gpu_model_name, first.hostname, first.is_complete) == ("NVIDIA H100 80GB HBM3", "gpu-node-1", True)

    nlp = rows.get(hour=rig.hour(0), gpu_uuid=DEVICES[1].uuid)
    assert (nlp.team, nlp.request, nlp.hostname) == (org.nlp, org.nr, "gpu-node-1")  # plain labels, lower-case host
    not_ours = rows.get(hour=rig.hour(0), gpu_uuid=DEVICES[2].uuid)
    assert (not_ours.team, not_ours.request) == (org.vision, None)  # gpr-90123 is not request 9012

    mig = {r.mig_instance: r for r in rows.filter(hour=rig.hour(5), gpu_uuid=A100.uuid)}
    assert set(mig) == {"7", "8", "9"}
    assert (mig["7"].team, mig["7"].request, mig["7"].mig_profile) == (org.vision, org.vr, "1g.5gb")
    assert mig["7"].avg_utilization_pct == pytest.approx(25.0)  # GR_ENGINE_ACTIVE 0.25 x 100
    assert mig["7"].energy_kwh is None  # no per-instance power
    assert (mig["8"].team, mig["8"].request, mig["8"].pod) == (None, None, "nvidia-dcgm-exporter-x7k2p")
    assert (mig["9"].team, mig["9"].request, mig["9"].namespace) == (None, None, "research")

    sentinel = rows.get(hour=rig.hour(SENTINEL_HOUR), gpu_uuid=DEVICES[0].uuid)
    assert (sentinel.sample_count, sentinel.avg_utilization_pct, sentinel.peak_utilization_pct) == (50, 80.0, 80.0)

    usage = team_usage(team=org.vision, start=rig.hour(0), end=rig.hour(24))
    # Three vision devices x 24 h, less the 10 sentinel minutes.
    assert usage["gpu_hours"] == pytest.approx(72 - 10 / 60, abs=1e-3)
    assert usage["peak_memory_used_gb"] == 40.0
    assert usage["energy_kwh"] == pytest.approx(24 * (0.5 + 0.3), abs=1e-3)
    [by_request] = usage["by_request"]
    assert by_request["request"] == VISION_REQUEST
    assert by_request["gpu_hours"] == pytest.approx(48 - 10 / 60, abs=1e-3)
    assert by_request["avg_utilization_pct"] == pytest.approx((80 * 1430 + 25 * 1440) / 2870, abs=0.05)
    assert usage["incomplete_hours"] == [] and usage["complete"] is True


def test_xid_errors_and_driver_versions_land_per_gpu_and_hour(rig: Rig, org) -> None:
    from billing.metering.gpu_health import gpu_health_pull
    from billing.models import GpuHealthHour

    whole_gpus = [device for device in DEVICES if not device.is_mig]  # MIG instances report no XID field
    written = gpu_health_pull(cluster=org.cluster, start=rig.hour(2), end=rig.hour(6), now=rig.now)
    assert written == 4 * len(whole_gpus)
    rows = {(row.hour, row.gpu_uuid): row for row in GpuHealthHour.objects.filter(cluster=org.cluster)}

    def xid(hour: int, device: FakeDevice = DEVICES[2]) -> tuple:
        row = rows[(rig.hour(hour), device.uuid)]
        return row.xid_codes, row.last_xid, row.xid_events, row.xid_minutes

    # Hour 3: 13 for 3 minutes, 13 again (a second event), 79 for the last 2 minutes (a third).
    assert xid(XID_HOUR) == ([13, 79], 79, 3, 6)
    # Hour 4: 79 still showing for 2 minutes: the same event, not a new one.
    assert xid(XID_HOUR + 1) == ([79], 79, 0, 2)
    assert xid(XID_HOUR + 2) == xid(2) == ([], None, 0, 0)
    assert xid(XID_HOUR, DEVICES[0]) == ([], None, 0, 0)
    quiet = rows[(rig.hour(XID_HOUR), DEVICES[0].uuid)]
    assert (quiet.reported_minutes, quiet.hostname, quiet.gpu_index) == (60, "gpu-node-1", 0)
    assert quiet.gpu_model_name == "NVIDIA H100 80GB HBM3"
    drivers = {row.hostname: row.driver_version for row in rows.values()}
    assert drivers == {"gpu-node-1": "535.129.03", "gpu-node-3": "550.54.15"}

    # A pull that starts at hour 4 still sees that 79 was showing the minute before: no event either.
    gpu_health_pull(cluster=org.cluster, start=rig.hour(4), end=rig.hour(5), now=rig.now)
    again = GpuHealthHour.objects.get(cluster=org.cluster, hour=rig.hour(4), gpu_uuid=DEVICES[2].uuid)
    assert (again.xid_codes, again.xid_events, again.xid_minutes) == ([79], 0, 2)
    assert GpuHealthHour.objects.filter(cluster=org.cluster).count() == written  # replaced, never doubled


def test_gpu_health_catches_up_on_hours_a_failed_pull_left_out(rig: Rig, org) -> None:
    from billing.metering.gpu_health import gpu_health_catch_up, gpu_health_pull
    from billing.models import GpuHealthHour

    whole_gpus = len([device for device in DEVICES if not device.is_mig])
    assert gpu_health_catch_up(cluster=org.cluster, through=rig.hour(9)) == 0  # no rows, nothing just read
    gpu_health_pull(cluster=org.cluster, start=rig.hour(2), end=rig.hour(4), now=rig.now)
    # A retried task's utilization pull read nothing new: the catch-up resumes after the newest row.
    assert gpu_health_catch_up(cluster=org.cluster, through=rig.hour(7)) == 3 * whole_gpus
    hours = sorted(set(GpuHealthHour.objects.filter(cluster=org.cluster).values_list("hour", flat=True)))
    assert hours == [rig.hour(h) for h in range(2, 7)]
    # Hours just re-read before the newest row are read again too; nothing is doubled.
    assert gpu_health_catch_up(cluster=org.cluster, through=rig.hour(7), read_from=rig.hour(3)) == 4 * whole_gpus
    assert GpuHealthHour.objects.filter(cluster=org.cluster).count() == 5 * whole_gpus


def test_alert_inputs_catch_up_on_hours_a_failed_pull_left_out(rig: Rig, org) -> None:
    from billing.metering.alert_inputs import utilization_health_catch_up, utilization_health_pull
    from billing.metering.services import utilization_pull
    from billing.models import UtilizationRollup

    rows = UtilizationRollup.objects.filter(cluster=org.cluster)

    def hours_read() -> list[datetime]:
        return sorted(set(rows.filter(memory_pressure_minutes__isnull=False).values_list("hour", flat=True)))

    def alert_inputs() -> list[tuple]:
        return sorted(
            rows.values_list("hour", "gpu_uuid", "mig_instance", "max_temperature_c", "memory_pressure_minutes")
        )

    # A task's utilization pull read hours 2-6, then its health pull failed: rollups without their alert inputs.
    utilization_pull(cluster=org.cluster, start=rig.hour(2), end=rig.hour(7), now=rig.now)
    assert hours_read() == []
    assert utilization_health_catch_up(cluster=org.cluster, through=rig.hour(7)) == 0  # none read, none just read
    utilization_health_pull(cluster=org.cluster, start=rig.hour(2), end=rig.hour(4))
    assert hours_read() == [rig.hour(2), rig.hour(3)]

    # The retried task's utilization pull read nothing new: the catch-up resumes after the newest hour read.
    assert utilization_health_catch_up(cluster=org.cluster, through=rig.hour(7)) == 3 * len(DEVICES)
    assert hours_read() == [rig.hour(h) for h in range(2, 7)]
    caught_up = alert_inputs()
    assert utilization_health_catch_up(cluster=org.cluster, through=rig.hour(7)) == 0  # nothing left out
    # Hours a utilization pull just re-read (their alert inputs reset) are read again; the same values as one pull.
    utilization_pull(cluster=org.cluster, start=rig.hour(5), end=rig.hour(7), now=rig.now)
    assert hours_read() == [rig.hour(h) for h in range(2, 5)]
    assert utilization_health_catch_up(cluster=org.cluster, through=rig.hour(7), read_from=rig.hour(5)) == 2 * len(
        DEVICES
    )
    assert alert_inputs() == caught_up
    utilization_health_pull(cluster=org.cluster, start=rig.hour(2), end=rig.hour(7))
    assert alert_inputs() == caught_up


def test_pulling_twice_gives_the_same_rows(rig: Rig, org) -> None:
    from billing.metering.services import utilization_pull

    utilization_pull(cluster=org.cluster, start=rig.hour(3), end=rig.hour(9), now=rig.now)
    once = snapshot(org.cluster)
    utilization_pull(cluster=org.cluster, start=rig.hour(3), end=rig.hour(9), now=rig.now)
    utilization_pull(cluster=org.cluster, start=rig.hour(5), end=rig.hour(7), now=rig.now)
    assert [row[:-1] for row in snapshot(org.cluster)] == [row[:-1] for row in once]
    assert len(once) == 6 * len(DEVICES)


def test_catch_up_after_an_outage_fills_the_gap(rig: Rig, org, settings) -> None:
    from billing.metering.prometheus import PrometheusUnavailable
    from billing.metering.selectors import team_usage
    from billing.metering.services import utilization_pull
    from billing.models import IngestStatus, UtilizationIngestHour, UtilizationRollup, UtilizationWatermark

    settings.BILLING_PROMETHEUS_RETRIES = 1
    settings.BILLING_PROMETHEUS_BACKOFF_SECONDS = 0.01
    utilization_pull(cluster=org.cluster, start=rig.hour(0), end=rig.hour(20), now=rig.now)
    assert UtilizationWatermark.objects.get(cluster=org.cluster).last_complete_hour == rig.hour(19)

    org.cluster.prometheus_url = f"http://127.0.0.1:{free_port()}"  # Prometheus is down
    with pytest.raises(PrometheusUnavailable):
        utilization_pull(cluster=org.cluster, now=rig.now)
    failed = UtilizationIngestHour.objects.filter(cluster=org.cluster, status=IngestStatus.FAILED)
    assert sorted(failed.values_list("hour", flat=True)) == [rig.hour(h) for h in range(20, HOURS)]
    assert UtilizationWatermark.objects.get(cluster=org.cluster).last_complete_hour == rig.hour(19)
    usage = team_usage(team=org.vision, start=rig.hour(0), end=rig.hour(HOURS))
    assert usage["complete"] is False
    assert [h["hour"] for h in usage["incomplete_hours"]] == [rig.hour(h) for h in range(20, HOURS)]

    org.cluster.prometheus_url = rig.prometheus.url  # back up: the next scheduled pull catches up
    result = utilization_pull(cluster=org.cluster, now=rig.now)
    assert (result.hours, result.watermark) == (HOURS - 20, rig.hour(HOURS - 1))
    assert not UtilizationIngestHour.objects.filter(cluster=org.cluster).exclude(status=IngestStatus.COMPLETE).exists()
    hours = sorted(set(UtilizationRollup.objects.filter(cluster=org.cluster).values_list("hour", flat=True)))
    assert hours == [rig.hour(h) for h in range(HOURS)]  # no gap
    assert UtilizationRollup.objects.filter(cluster=org.cluster).count() == HOURS * len(DEVICES)  # no duplicate
    usage = team_usage(team=org.vision, start=rig.hour(0), end=rig.hour(HOURS))
    assert usage["incomplete_hours"] == []
    assert usage["gpu_hours"] == pytest.approx(3 * HOURS - 10 / 60, abs=1e-3)


def test_a_bad_query_is_permanent(rig: Rig) -> None:
    from billing.metering.prometheus import PrometheusClient, PrometheusQueryError

    with pytest.raises(PrometheusQueryError) as info:
        PrometheusClient(rig.prometheus.url).query("sum(")
    assert not info.value.transient and info.value.status == 400


def test_live_scrape_renames_workload_labels_and_attribution_reads_them(rig: Rig) -> None:
    from billing.metering.prometheus import PrometheusClient
    from gpucore.attribution import gpu_identity, owner_from_labels

    client = PrometheusClient(rig.prometheus.url)
    deadline = time.monotonic() + 30
    series = []
    while time.monotonic() < deadline and len(series) < 3:
        series = client.query('DCGM_FI_PROF_GR_ENGINE_ACTIVE{job="dcgm-exporter"}')
        time.sleep(0.2)
    by_instance = {s.labels["GPU_I_ID"]: s.labels for s in series}
    assert set(by_instance) == {"7", "8", "9"}, "the exporter was not scraped within 30 s"
    held = by_instance["7"]
    assert (held["namespace"], held["exported_namespace"]) == ("gpu-operator", "team-vision")
    owner = owner_from_labels(held, team_by_namespace={"team-vision": 1}, request_team={VISION_REQUEST: 1})
    assert (owner.team, owner.request_id) == (1, VISION_REQUEST)
    idle = owner_from_labels(by_instance["8"], team_by_namespace={"team-vision": 1})
    assert idle.is_unallocated and "exported_pod" not in by_instance["8"]
    assert gpu_identity(held, cluster="c").mig_profile == "1g.5gb"


def test_tasks_pull_every_cluster_with_prometheus(rig: Rig, org) -> None:
    from billing.models import UtilizationWatermark
    from billing.tasks import pull_utilization, pull_utilization_all
    from tests.factories import ClusterFactory

    ClusterFactory(name="no-prometheus", prometheus_url="")
    UtilizationWatermark.objects.create(cluster=org.cluster, last_complete_hour=rig.hour(22), updated_at=rig.now)
    assert pull_utilization_all.delay().get() == [org.cluster.pk]  # eager: runs the per-cluster task too
    mark = UtilizationWatermark.objects.get(cluster=org.cluster).last_complete_hour
    assert mark >= rig.hour(HOURS - 1)  # caught up to the real clock's last complete hour
    from billing.models import GpuHealthHour

    # The task also reads the XID and driver signals of the same hours.
    whole_gpus = [device for device in DEVICES if not device.is_mig]
    assert GpuHealthHour.objects.filter(cluster=org.cluster, hour=rig.hour(HOURS - 1)).count() == len(whole_gpus)
    assert pull_utilization.delay(10**9).get()["skipped"]


def test_the_task_reads_the_alert_inputs_a_failed_try_left_out(rig: Rig, org) -> None:
    from billing.metering.alert_inputs import utilization_health_pull
    from billing.metering.services import utilization_pull
    from billing.models import UtilizationRollup
    from billing.tasks import pull_utilization

    # An earlier try read the rollups through the last hour of history, and their alert inputs only through hour 21.
    utilization_pull(cluster=org.cluster, start=rig.hour(20), end=rig.hour(HOURS), now=rig.now)
    utilization_health_pull(cluster=org.cluster, start=rig.hour(20), end=rig.hour(22))
    unread = UtilizationRollup.objects.filter(cluster=org.cluster, memory_pressure_minutes__isnull=True)
    assert unread.count() == (HOURS - 22) * len(DEVICES)

    pull_utilization.delay(org.cluster.pk).get()  # eager; its utilization pull reads only the (empty) hours since

    assert not unread.exists()


def test_pull_utilization_command(rig: Rig, org) -> None:
    from io import StringIO

    from django.core.management import call_command
    from django.core.management.base import CommandError

    from billing.models import UtilizationRollup

    out = StringIO()
    start, end = rig.hour(1).isoformat(), rig.hour(4).strftime("%Y-%m-%dT%H:%M:%S")  # no offset: read as UTC
    call_command("pull_utilization", cluster="gpu-east", start=start, end=end, stdout=out, stderr=StringIO())
    assert "3 hours" in out.getvalue()
    assert UtilizationRollup.objects.filter(cluster=org.cluster).count() == 3 * len(DEVICES)
    # A backfill also reads the alert inputs and the GPU faults of those hours.
    from billing.models import GpuHealthHour

    health = GpuHealthHour.objects.filter(cluster=org.cluster)
    assert sorted(set(health.values_list("hour", flat=True))) == [rig.hour(h) for h in (1, 2, 3)]
    assert not UtilizationRollup.objects.filter(cluster=org.cluster, memory_pressure_minutes__isnull=True).exists()
    with pytest.raises(CommandError, match="No cluster"):
        call_command("pull_utilization", cluster="nowhere", stdout=StringIO())
