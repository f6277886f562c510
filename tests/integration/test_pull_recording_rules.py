"""The utilization pull from recording rules against the real ``prometheus`` binary: the same rollups as the
subquery path for the same history, scrape gap, DCGM blank sentinel and MIG instance included.

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
import yaml

from gpucore.dcgm_synthetic import NOT_SUPPORTED
from gpucore.utilization_promql import RECORDED, recording_rule_group
from tests.integration.dcgm_exporter import FakeDevice, PrometheusServer, backfill, write_openmetrics_history
from tests.integration.test_prometheus_ingest import snapshot

pytestmark = [pytest.mark.integration, pytest.mark.prometheus, pytest.mark.django_db]

HOURS = 4
RULES_FROM_HOUR = 1  # the rules were installed here: hour 0 has raw series only
GAP_HOUR, GAP_MINUTES = 2, range(20, 27)  # the held GPU is not scraped for 7 minutes
SENTINEL_HOUR, SENTINEL_MINUTES = 3, range(30, 40)  # the second GPU reports DCGM's "not supported" utilization
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
    rule_file.write_text(yaml.safe_dump({"groups": [recording_rule_group()]}, sort_keys=False))
    prometheus = PrometheusServer()
    try:
        files = write_openmetrics_history(
            DEVICES, start=first_hour, end=end, out_dir=tmp_path_factory.mktemp("om"), readings=_readings(first_hour)
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
    assert f"SUCCESS: {len(RECORDED)} rules found" in checked.stdout


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
