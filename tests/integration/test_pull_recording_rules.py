"""The pulls from recording rules against the real ``prometheus`` binary: the same rollups, alert inputs and GPU
health hours as the subquery path for the same history, scrape gap, DCGM blank sentinel and MIG instance included.

The recorded series are produced as a cluster's Prometheus would produce them, by the rules themselves: backfilled
over the history with ``promtool tsdb create-blocks-from rules`` (which evaluates them at the group's own
evaluation offset, as a running Prometheus does), then served beside the raw series.
"""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
import requests
import yaml

from gpucore.dcgm_synthetic import NOT_SUPPORTED
from gpucore.utilization_promql import HEALTH_RECORDED, RECORDED, rule_groups
from tests.integration import dcgm_exporter
from tests.integration.dcgm_exporter import FakeDevice, PrometheusServer, backfill, write_openmetrics_history
from tests.integration.test_prometheus_ingest import snapshot

pytestmark = [pytest.mark.integration, pytest.mark.prometheus, pytest.mark.django_db]

HOURS = 4
RULES_FROM_HOUR = 1  # the rules were installed here: hour 0 has raw series only
GAP_HOUR, GAP_MINUTES = 2, range(20, 27)  # the held GPU is not scraped for 7 minutes
SENTINEL_HOUR, SENTINEL_MINUTES = 3, range(30, 40)  # the second GPU reports DCGM's "not supported" utilization
PRESSURE_HOUR, PRESSURE_MINUTES = 1, range(10, 21)  # the second GPU's memory above 85 %
XID_HOUR, XID_MINUTES = 3, range(5, 8)  # the idle GPU shows XID 13
REQUEST = 9020
A100 = FakeDevice(uuid="GPU-3bc239e1-4cc8-97e4-e817-5a36dfd2885e", gpu=0, model_name="NVIDIA A100-SXM4-40GB")
DEVICES = [
    FakeDevice(
        uuid="GPU-00000000-0000-0000-0000-00000000b001",
        gpu=0,
        namespace="team-vision",
        pod=f"gpr-{REQUEST}-abcde",
        fb_used_mib=40960,
        power_w=500,
    ),
    FakeDevice(uuid="GPU-00000000-0000-0000-0000-00000000b002", gpu=1, namespace="team-nlp", pod="gpr-77", power_w=300),
    replace(
        A100, mig_profile="1g.5gb", mig_id="7", namespace="team-vision", pod=f"gpr-{REQUEST}-mig", fb_used_mib=3072
    ),
    FakeDevice(uuid="GPU-00000000-0000-0000-0000-00000000b003", gpu=2, host="gpu-node-2", power_w=60),
]


@dataclass
class Rig:
    prometheus: PrometheusServer
    first_hour: datetime
    rule_file: Path

    def hour(self, n: int) -> datetime:
        return self.first_hour + timedelta(hours=n)


def _readings(first_hour: datetime):
    def readings(device: FakeDevice, at: datetime) -> dict[str, float]:
        hour, minute = divmod(int((at - first_hour).total_seconds() // 60), 60)
        if device is DEVICES[0] and hour == GAP_HOUR and minute in GAP_MINUTES:
            return {}  # no scrape at all
        values = device.readings()
        # Values that change by the minute, so averages and peaks depend on which minutes count.
        if device.is_mig:
            values["DCGM_FI_PROF_GR_ENGINE_ACTIVE"] = (minute % 10) / 10
        else:
            values["DCGM_FI_DEV_GPU_UTIL"] = (minute * 7 + device.gpu * 13) % 101
            values["DCGM_FI_DEV_POWER_USAGE"] = device.power_w + minute
        values["DCGM_FI_DEV_FB_USED"] = device.fb_used_mib + 10 * minute
        if device is DEVICES[1] and hour == SENTINEL_HOUR and minute in SENTINEL_MINUTES:
            values["DCGM_FI_DEV_GPU_UTIL"] = float(NOT_SUPPORTED)
        if not device.is_mig:
            values["DCGM_FI_DEV_GPU_TEMP"] = 60.0 + (minute * 3 + device.gpu) % 30
        if device is DEVICES[1] and hour == PRESSURE_HOUR and minute in PRESSURE_MINUTES:
            values["DCGM_FI_DEV_FB_USED"] = 0.9 * device.fb_total_mib
            values["DCGM_FI_DEV_FB_FREE"] = 0.1 * device.fb_total_mib
        if device is DEVICES[3] and hour == XID_HOUR and minute in XID_MINUTES:
            values["DCGM_FI_DEV_XID_ERRORS"] = 13.0
        return values

    return readings


def _backfill_rules(prometheus: PrometheusServer, rule_file: Path, start: datetime, end: datetime) -> None:
    """Evaluate the rules over [start, end] against the running server, then serve their blocks beside the raw ones."""
    out = prometheus.root / "rule-blocks"
    subprocess.run(
        ["promtool", "tsdb", "create-blocks-from", "rules", f"--start={start.isoformat()}", f"--end={end.isoformat()}",
         f"--url={prometheus.url}", f"--output-dir={out}", str(rule_file)],
        check=True, capture_output=True, timeout=300,
    )  # fmt: skip
    prometheus.stop()
    for block in out.iterdir():
        shutil.move(str(block), prometheus.data_dir / block.name)
    prometheus.start()


@pytest.fixture(scope="module")
def rig(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Rig]:
    first_hour = datetime.now(UTC).replace(minute=0, second=0, microsecond=0) - timedelta(hours=HOURS + 2)
    end = first_hour + timedelta(hours=HOURS)
    rule_file = tmp_path_factory.mktemp("rules") / "gpu-portal.rules.yml"
    rule_file.write_text(yaml.safe_dump({"groups": rule_groups()}, sort_keys=False))
    # The admin API deletes raw series, to show what a pull reads from the recorded ones alone.
    prometheus = PrometheusServer(extra_args=["--web.enable-admin-api"])
    try:
        with pytest.MonkeyPatch.context() as patch:
            patch.setitem(dcgm_exporter.HELP, "DCGM_FI_DEV_GPU_TEMP", "GPU temperature (in C).")
            files = write_openmetrics_history(
                DEVICES,
                start=first_hour,
                end=end,
                out_dir=tmp_path_factory.mktemp("om"),
                readings=_readings(first_hour),
            )
        backfill(files, prometheus.data_dir)
        prometheus.start()
        _backfill_rules(prometheus, rule_file, first_hour + timedelta(hours=RULES_FROM_HOUR), end)
        yield Rig(prometheus, first_hour, rule_file)
    finally:
        prometheus.cleanup()


@pytest.fixture
def cluster(rig: Rig):
    from tests.factories import ClusterFactory, GpuRequestFactory, TeamFactory

    vision = TeamFactory(slug="vision")
    TeamFactory(slug="nlp")
    GpuRequestFactory(id=REQUEST, team=vision)
    return ClusterFactory(name="gpu-east", prometheus_url=rig.prometheus.url)


def test_the_rule_file_passes_promtool(rig: Rig) -> None:
    checked = subprocess.run(["promtool", "check", "rules", str(rig.rule_file)], capture_output=True, text=True)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert f"SUCCESS: {len(RECORDED) + len(HEALTH_RECORDED)} rules found" in checked.stdout


def test_recorded_minutes_give_the_same_rollups_as_subqueries(rig: Rig, cluster) -> None:
    from billing.metering.services import utilization_pull
    from billing.models import UtilizationRollup

    now = rig.hour(HOURS) + timedelta(minutes=10)
    by_subqueries = utilization_pull(cluster=cluster, start=rig.hour(0), end=rig.hour(HOURS), now=now)
    assert by_subqueries.recorded_hours == 0
    expected = snapshot(cluster)
    assert len(expected) == HOURS * len(DEVICES)

    UtilizationRollup.objects.filter(cluster=cluster).delete()
    cluster.prometheus_recording_rules = True
    cluster.save(update_fields=["prometheus_recording_rules"])
    # Hour by hour, as the steady pull reads: hour 0 predates the rules and is read by subqueries instead.
    for hour in range(HOURS):
        pulled = utilization_pull(cluster=cluster, start=rig.hour(hour), end=rig.hour(hour + 1), now=now)
        assert pulled.recorded_hours == (0 if hour < RULES_FROM_HOUR else 1)
    assert snapshot(cluster) == expected

    rows = UtilizationRollup.objects.filter(cluster=cluster)
    gap = rows.get(hour=rig.hour(GAP_HOUR), gpu_uuid=DEVICES[0].uuid)
    assert (gap.sample_count, gap.is_complete) == (60 - len(GAP_MINUTES), False)  # the gap is not carried over
    blank = rows.get(hour=rig.hour(SENTINEL_HOUR), gpu_uuid=DEVICES[1].uuid)
    assert (blank.sample_count, blank.is_complete) == (60 - len(SENTINEL_MINUTES), True)  # scraped, not measured
    mig = rows.get(hour=rig.hour(1), gpu_uuid=A100.uuid, mig_instance="7")
    assert (mig.avg_utilization_pct, mig.peak_utilization_pct, mig.energy_kwh) == (45.0, 90.0, None)
    whole = rows.get(hour=rig.hour(1), gpu_uuid=DEVICES[0].uuid)
    assert whole.energy_kwh == pytest.approx((500 + 29.5) / 1000)

    # A catch-up reads several recorded hours in one chunk.
    UtilizationRollup.objects.filter(cluster=cluster).delete()
    caught_up = utilization_pull(cluster=cluster, start=rig.hour(RULES_FROM_HOUR), end=rig.hour(HOURS), now=now)
    assert caught_up.recorded_hours == HOURS - RULES_FROM_HOUR
    assert snapshot(cluster) == [row for row in expected if row[0] >= rig.hour(RULES_FROM_HOUR)]


def _delete_raw(rig: Rig, metrics: tuple[str, ...], start: datetime, end: datetime) -> None:
    params = [("match[]", metric) for metric in metrics] + [("start", start.isoformat()), ("end", end.isoformat())]
    requests.post(f"{rig.prometheus.url}/api/v1/admin/tsdb/delete_series", params=params, timeout=30).raise_for_status()


# Last in the module: it deletes raw series the tests above read.
def test_the_health_pulls_read_the_same_from_recorded_minutes(rig: Rig, cluster) -> None:
    from billing.metering.alert_inputs import utilization_health_pull
    from billing.metering.gpu_health import gpu_health_pull
    from billing.metering.services import utilization_pull
    from billing.models import GpuHealthHour, UtilizationRollup

    now = rig.hour(HOURS) + timedelta(minutes=10)
    first, end = rig.hour(RULES_FROM_HOUR), rig.hour(HOURS)
    health = GpuHealthHour.objects.filter(cluster=cluster)
    rollups = UtilizationRollup.objects.filter(cluster=cluster)

    def read() -> tuple[list[tuple], list[tuple]]:
        gpu_health_pull(cluster=cluster, start=first, end=end, now=now)
        utilization_health_pull(cluster=cluster, start=first, end=end)
        fields = ("hour", "gpu_uuid", "reported_minutes", "driver_version", "xid_codes", "xid_events", "xid_minutes")
        inputs = ("hour", "gpu_uuid", "mig_instance", "max_temperature_c", "memory_pressure_minutes")
        return sorted(health.values_list(*fields)), sorted(rollups.values_list(*inputs))

    utilization_pull(cluster=cluster, start=first, end=end, now=now)
    by_subqueries = read()
    gap = (rig.hour(GAP_HOUR), DEVICES[0].uuid)
    pressed = rollups.get(hour=rig.hour(PRESSURE_HOUR), gpu_uuid=DEVICES[1].uuid)
    assert pressed.memory_pressure_minutes == len(PRESSURE_MINUTES) - 2  # above 85 % for 2 minutes
    assert pressed.max_temperature_c == 88.0  # 60 + (3 x minute + 1) % 30 at most
    xid = health.get(hour=rig.hour(XID_HOUR), gpu_uuid=DEVICES[3].uuid)
    assert (xid.xid_codes, xid.xid_events, xid.xid_minutes, xid.reported_minutes) == ([13], 1, 3, 60)

    # Only the recorded minutes are left of what the health pulls read over subqueries: the temperature and memory
    # of every hour, and the XID gauge of the hours without an XID (the XID minutes are read from the raw gauge).
    _delete_raw(rig, ("DCGM_FI_DEV_GPU_TEMP", "DCGM_FI_DEV_FB_USED", "DCGM_FI_DEV_FB_FREE"), rig.hour(0), end)
    _delete_raw(rig, ("DCGM_FI_DEV_XID_ERRORS",), first, rig.hour(XID_HOUR) - timedelta(minutes=2))
    cluster.prometheus_recording_rules = True
    cluster.save(update_fields=["prometheus_recording_rules"])
    health.delete()
    rollups.update(max_temperature_c=None, memory_pressure_minutes=None)
    recorded = read()
    assert recorded[1] == by_subqueries[1]
    # A scrape gap: both count the minutes a sample was carried over (no freshness test here), and a subquery's
    # minute on the grid reaches a sample exactly 5 minutes old where a recorded one, a few seconds later, does not.
    assert [row for row in recorded[0] if row[:2] != gap] == [row for row in by_subqueries[0] if row[:2] != gap]
    [(*_, recorded_minutes)] = [row[:3] for row in recorded[0] if row[:2] == gap]
    [(*_, subquery_minutes)] = [row[:3] for row in by_subqueries[0] if row[:2] == gap]
    assert 0 <= subquery_minutes - recorded_minutes <= 1
