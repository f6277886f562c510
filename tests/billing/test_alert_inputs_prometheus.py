"""``utilization_health_pull`` against the real ``prometheus`` binary: hottest minute and memory-pressure minutes."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import pytest

from tests.integration import dcgm_exporter
from tests.integration.dcgm_exporter import FakeDevice, PrometheusServer, prometheus_with_history

pytestmark = [pytest.mark.integration, pytest.mark.prometheus, pytest.mark.django_db]

HOT = FakeDevice(
    uuid="GPU-00000000-0000-0000-0000-0000000000b1",
    gpu=0,
    namespace="team-vision",
    pod="gpr-1-a",
    util_pct=90,
    fb_used_mib=20000,
    power_w=600,
)
FULL = FakeDevice(
    uuid="GPU-00000000-0000-0000-0000-0000000000b2",
    gpu=1,
    namespace="team-vision",
    pod="gpr-1-b",
    util_pct=50,
    fb_used_mib=20000,
    power_w=300,
)
PRESSED = 0.9 * 81559.0


@pytest.fixture(scope="module")
def prometheus(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[PrometheusServer, datetime]]:
    first = datetime.now(UTC).replace(minute=0, second=0, microsecond=0) - timedelta(hours=8)

    def readings(device: FakeDevice, at: datetime) -> dict[str, float]:
        values = device.readings()
        minute = int((at - first).total_seconds() // 60)
        values["DCGM_FI_DEV_GPU_TEMP"] = 70.0
        if device is HOT and minute == 90:  # hour 1: one minute at 85 °C is enough
            values["DCGM_FI_DEV_GPU_TEMP"] = 85.0
        if device is HOT and minute == 150:  # hour 2: 83 °C is not above 83
            values["DCGM_FI_DEV_GPU_TEMP"] = 83.0
        # Memory above 85 %: hour 0 two points, one minute long (no alert); hour 2 three points, two minutes (alert).
        if device is FULL and minute in (10, 11, 130, 131, 132):
            values["DCGM_FI_DEV_FB_USED"] = PRESSED
            values["DCGM_FI_DEV_FB_FREE"] = 81559.0 - PRESSED
        return values

    with pytest.MonkeyPatch.context() as patch:
        patch.setitem(dcgm_exporter.HELP, "DCGM_FI_DEV_GPU_TEMP", "GPU temperature (in C).")
        with prometheus_with_history(
            [HOT, FULL],
            start=first,
            end=first + timedelta(hours=3),
            out_dir=tmp_path_factory.mktemp("om-health"),
            readings=readings,
        ) as (server, _files):
            yield server, first


def test_temperature_and_memory_pressure_land_on_the_rollups(prometheus) -> None:
    from billing.metering.alert_inputs import utilization_health_pull
    from billing.metering.services import utilization_pull
    from billing.models import UtilizationRollup
    from billing.utilization.selectors import alerts_for, fleet_alerts_needing_action
    from gpucore.alerts import AlertKind
    from tests.factories import ClusterFactory, GpuRequestFactory, TeamFactory, UserFactory

    server, first = prometheus
    team = TeamFactory(slug="vision")
    GpuRequestFactory(id=1, team=team)
    cluster = ClusterFactory(name="gpu-health", prometheus_url=server.url)
    end = first + timedelta(hours=3)
    utilization_pull(cluster=cluster, start=first, end=end, now=end + timedelta(minutes=10))
    approver = UserFactory(username="fleet-approver", is_staff=True)
    assert fleet_alerts_needing_action(user=approver)["count"] == 0  # no temperature or pressure read yet
    assert utilization_health_pull(cluster=cluster, start=first, end=end) == 6
    # The approver's home keeps the fleet's alerts per process: the health pull's bulk update replaces them.
    assert fleet_alerts_needing_action(user=approver)["count"] == 2

    def row(device: FakeDevice, hour: int) -> UtilizationRollup:
        return UtilizationRollup.objects.get(cluster=cluster, gpu_uuid=device.uuid, hour=first + timedelta(hours=hour))

    assert [row(HOT, h).max_temperature_c for h in range(3)] == [70.0, 85.0, 83.0]
    assert [row(FULL, h).memory_pressure_minutes for h in range(3)] == [0, 0, 1]
    alerts = alerts_for(UtilizationRollup.objects.filter(cluster=cluster))
    assert {(a.kind, a.device, a.first_hour) for a in alerts} == {
        (AlertKind.TEMPERATURE, HOT.uuid, first + timedelta(hours=1)),
        (AlertKind.MEMORY_PRESSURE, FULL.uuid, first + timedelta(hours=2)),
    }
