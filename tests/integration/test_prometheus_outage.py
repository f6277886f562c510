"""Scrape gaps and a Prometheus outage against the real ``prometheus`` binary.

History (30 hours, backfilled with promtool) holds what a Prometheus that was itself down from hour 26 minute 5
to hour 27 minute 5 kept: 5 minutes of hour 26 and 55 of hour 27. Queried naively, the lookback delta (5 min)
carries the last sample of hour 26 forward and the hour reads as 10 minutes and complete. One exporter (the idle
GPU's) also misses 30 minutes of hour 3, and the held GPU reports DCGM's "not supported" for 10 minutes of hour 1:
a blank is a scrape, not a gap.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

import pytest

from gpucore.dcgm_synthetic import NOT_SUPPORTED
from tests.integration.dcgm_exporter import FakeDevice, PrometheusServer, prometheus_with_history

pytestmark = [pytest.mark.integration, pytest.mark.prometheus, pytest.mark.django_db]

HOURS = 30
OUTAGE_HOUR = 26  # Prometheus down from OUTAGE_HOUR:05 to (OUTAGE_HOUR + 1):05
EXPORTER_GAP_HOUR = 3  # the idle GPU's exporter not scraped at minutes 10..39
BLANK_HOUR = 1  # the held GPU reports "not supported" utilization at minutes 0..9
REQUEST_ID = 7301
HELD = FakeDevice(
    uuid="GPU-00000000-0000-0000-0000-0000000b0001",
    gpu=0,
    namespace="team-vision",
    pod=f"gpr-{REQUEST_ID}-abcde",
    util_pct=80,
    fb_used_mib=40960,
    power_w=500,
)
IDLE = FakeDevice(uuid="GPU-00000000-0000-0000-0000-0000000b0002", gpu=1, host="gpu-node-2", power_w=60)
MIG = FakeDevice(
    uuid="GPU-00000000-0000-0000-0000-0000000b0003",
    gpu=2,
    model_name="NVIDIA A100-SXM4-40GB",
    fb_total_mib=4864,
    mig_profile="1g.5gb",
    mig_id="7",
    namespace="team-vision",
    pod=f"gpr-{REQUEST_ID}-mig-0",
    util_pct=25,
    fb_used_mib=3072,
)
DEVICES = [HELD, IDLE, MIG]
INCOMPLETE = [EXPORTER_GAP_HOUR, OUTAGE_HOUR, OUTAGE_HOUR + 1]


@dataclass
class Rig:
    prometheus: PrometheusServer
    first_hour: datetime

    def hour(self, n: int) -> datetime:
        return self.first_hour + timedelta(hours=n)

    def number(self, hour: datetime) -> int:
        """The hour's number in the history (0 = first)."""
        return int((hour - self.first_hour) / timedelta(hours=1))

    @property
    def now(self) -> datetime:
        """A clock at which every hour of the history has ended."""
        return self.hour(HOURS) + timedelta(minutes=10)


@pytest.fixture(scope="module")
def rig(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Rig]:
    first_hour = datetime.now(UTC).replace(hour=0, minute=0, second=0, microsecond=0) - timedelta(days=2)
    down_from = first_hour + timedelta(hours=OUTAGE_HOUR, minutes=5)
    outage = (down_from, down_from + timedelta(hours=1))
    gap_hour = first_hour + timedelta(hours=EXPORTER_GAP_HOUR)
    blank_hour = first_hour + timedelta(hours=BLANK_HOUR)

    def readings(device: FakeDevice, at: datetime) -> dict[str, float]:
        if outage[0] <= at < outage[1]:
            return {}  # Prometheus itself was down: nothing was stored for any device
        if device is IDLE and gap_hour + timedelta(minutes=10) <= at < gap_hour + timedelta(minutes=40):
            return {}
        values = device.readings()
        if device is HELD and blank_hour <= at < blank_hour + timedelta(minutes=10):
            values["DCGM_FI_DEV_GPU_UTIL"] = float(NOT_SUPPORTED)
        return values

    with prometheus_with_history(
        DEVICES,
        start=first_hour,
        end=first_hour + timedelta(hours=HOURS),
        out_dir=tmp_path_factory.mktemp("openmetrics-outage"),
        readings=readings,
    ) as (prometheus, _files):
        yield Rig(prometheus, first_hour)


@pytest.fixture
def org(rig: Rig):
    from tests.factories import ClusterFactory, GpuRequestFactory, TeamFactory

    vision = TeamFactory(slug="vision")
    cluster = ClusterFactory(name="gpu-west", prometheus_url=rig.prometheus.url)
    GpuRequestFactory(id=REQUEST_ID, team=vision)
    return type("Org", (), {"vision": vision, "cluster": cluster})


def statuses(cluster) -> dict[datetime, str]:
    from billing.models import UtilizationIngestHour

    return dict(UtilizationIngestHour.objects.filter(cluster=cluster).values_list("hour", "status"))


def minutes(cluster, hour: datetime) -> dict[str, tuple[int, bool]]:
    from billing.models import UtilizationRollup

    rows = UtilizationRollup.objects.filter(cluster=cluster, hour=hour)
    return {row.gpu_uuid: (row.sample_count, row.is_complete) for row in rows}


def test_an_hour_with_55_of_60_minutes_of_scrapes_missing_is_incomplete(rig: Rig, org) -> None:
    from billing.metering.selectors import team_usage
    from billing.metering.services import utilization_pull
    from billing.models import IngestStatus, UtilizationIngestHour, UtilizationRollup

    result = utilization_pull(cluster=org.cluster, start=rig.hour(0), end=rig.hour(HOURS), now=rig.now)
    outage = minutes(org.cluster, rig.hour(OUTAGE_HOUR))
    after = minutes(org.cluster, rig.hour(OUTAGE_HOUR + 1))
    gap = minutes(org.cluster, rig.hour(EXPORTER_GAP_HOUR))
    logged = statuses(org.cluster)
    print(
        f"\nminutes measured, complete per device: hour {OUTAGE_HOUR} (5 of 60 scraped) {list(outage.values())}, "
        f"hour {OUTAGE_HOUR + 1} (55 of 60) {list(after.values())}, hour {EXPORTER_GAP_HOUR} (one exporter 30 "
        f"minutes down) {list(gap.values())}; hours logged incomplete: "
        f"{[(h, logged[rig.hour(h)]) for h in range(HOURS) if logged[rig.hour(h)] != IngestStatus.COMPLETE]}"
    )
    # Measured minutes only: the lookback delta would have carried hour 26's last sample to 10 minutes.
    assert outage == {device.uuid: (5, False) for device in DEVICES}
    assert after == {device.uuid: (55, False) for device in DEVICES}
    assert gap == {HELD.uuid: (60, True), IDLE.uuid: (30, False), MIG.uuid: (60, True)}
    # A blank reading is a scrape: the hour is covered, its utilization minutes are not counted.
    assert minutes(org.cluster, rig.hour(BLANK_HOUR)) == {d.uuid: (50 if d is HELD else 60, True) for d in DEVICES}

    assert {hour for hour, status in logged.items() if status != IngestStatus.COMPLETE} == {
        rig.hour(h) for h in INCOMPLETE
    }
    assert all(logged[rig.hour(h)] == IngestStatus.PARTIAL for h in INCOMPLETE)
    note = UtilizationIngestHour.objects.get(cluster=org.cluster, hour=rig.hour(EXPORTER_GAP_HOUR)).error
    assert IDLE.uuid in note and HELD.uuid not in note and "fewest: 30" in note
    # Read as far as Prometheus holds: nothing to gain by reading a partial hour again.
    assert result.watermark == rig.hour(HOURS - 1)

    held = UtilizationRollup.objects.get(cluster=org.cluster, hour=rig.hour(OUTAGE_HOUR), gpu_uuid=HELD.uuid)
    assert held.energy_kwh == pytest.approx(0.5 * 5 / 60)  # 500 W for the 5 minutes measured
    usage = team_usage(team=org.vision, start=rig.hour(0), end=rig.hour(HOURS))
    assert usage["complete"] is False
    assert [row["hour"] for row in usage["incomplete_hours"]] == [rig.hour(h) for h in INCOMPLETE]
    # Two vision devices: 28 whole hours and 5 + 55 minutes each, less the 10 blank minutes; never zero.
    assert usage["gpu_hours"] == pytest.approx(2 * 29 - 10 / 60, abs=1e-3)


def test_prometheus_down_in_the_middle_of_a_pull_window_then_catch_up(rig: Rig, org, settings) -> None:
    from billing.metering.prometheus import PrometheusUnavailable
    from billing.metering.selectors import team_usage
    from billing.metering.services import utilization_pull
    from billing.models import IngestStatus, UtilizationRollup, UtilizationWatermark

    settings.BILLING_PROMETHEUS_RETRIES = 1
    settings.BILLING_PROMETHEUS_BACKOFF_SECONDS = 0.01
    rollups = UtilizationRollup.objects.filter(cluster=org.cluster)
    chunks = []

    def stop_after_first_chunk(hours: int) -> None:
        chunks.append(hours)
        if len(chunks) == 1:
            rig.prometheus.stop()  # the server goes away between the two chunks of one pull

    try:
        with pytest.raises(PrometheusUnavailable):
            utilization_pull(cluster=org.cluster, now=rig.now, start=rig.hour(0), progress=stop_after_first_chunk)
        read = chunks[0]
        failed = sorted(hour for hour, status in statuses(org.cluster).items() if status == IngestStatus.FAILED)
        before = rollups.count()
        usage = team_usage(team=org.vision, start=rig.hour(0), end=rig.hour(HOURS))
        print(
            f"\noutage: {read} hours read before Prometheus stopped; {len(failed)} hours marked failed "
            f"(hours {rig.number(failed[0])}..{rig.number(failed[-1])}); rollups {before}; "
            f"incomplete hours listed by the usage API: {len(usage['incomplete_hours'])}"
        )
        assert failed == [rig.hour(h) for h in range(read, HOURS)]
        assert not rollups.filter(hour__gte=rig.hour(read)).exists()  # unknown, never zero rows
        assert before == read * len(DEVICES)
        assert UtilizationWatermark.objects.get(cluster=org.cluster).last_complete_hour == rig.hour(read - 1)
        assert usage["complete"] is False
        assert {row["hour"] for row in usage["incomplete_hours"]} >= set(failed)
    finally:
        rig.prometheus.start()  # recovery (also leaves the rig running for the other tests)

    result = utilization_pull(cluster=org.cluster, now=rig.now)
    after = rollups.count()
    logged = statuses(org.cluster)
    incomplete = sorted(hour for hour, status in logged.items() if status != IngestStatus.COMPLETE)
    print(
        f"catch-up: {result.hours} hours read, {result.rows} rollups written; rollups {before} -> {after}; "
        f"hours still incomplete (scrapes missing): {[rig.number(h) for h in incomplete]}"
    )
    assert (result.hours, result.watermark) == (HOURS - read, rig.hour(HOURS - 1))
    assert IngestStatus.FAILED not in logged.values()
    assert sorted(logged) == [rig.hour(h) for h in range(HOURS)]
    assert incomplete == [rig.hour(h) for h in INCOMPLETE]
    assert sorted(set(rollups.values_list("hour", flat=True))) == [rig.hour(h) for h in range(HOURS)]  # no gap
    keys = set(rollups.values_list("hour", "gpu_uuid", "mig_instance", "namespace", "pod"))
    assert after == len(keys) == HOURS * len(DEVICES)  # no duplicate

    again = utilization_pull(cluster=org.cluster, now=rig.now)
    utilization_pull(cluster=org.cluster, start=rig.hour(read - 2), end=rig.hour(HOURS), now=rig.now)
    assert again.hours == 0 and rollups.count() == after  # a second catch-up and a re-read change nothing
    usage = team_usage(team=org.vision, start=rig.hour(0), end=rig.hour(HOURS))
    assert usage["gpu_hours"] == pytest.approx(2 * 29 - 10 / 60, abs=1e-3)
