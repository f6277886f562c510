"""Alerts are read from the hours that may breach a rule only: the same alerts as every hour read."""

from __future__ import annotations

import pytest
from django.utils import timezone

from billing.models import UtilizationRollup
from billing.utilization.selectors import alerts_for, device_hours
from gpucore import alerts as alert_rules
from tests.billing.rollups import hours_back, rollup
from tests.factories import DemoOrg, GpuRequestFactory

pytestmark = pytest.mark.django_db

LIMIT = alert_rules.TEMPERATURE_LIMIT_C
IDLE = alert_rules.IDLE_UTILIZATION_PCT


def test_the_alerts_equal_those_of_every_hour_at_each_rules_edges(demo_org: DemoOrg) -> None:
    held = GpuRequestFactory(team=demo_org.team)
    hours = hours_back(timezone.now(), 6)
    # Per device, six hours around one rule's edge: a breach, the value just inside, a breach again (two runs split
    # by a quiet hour), then hours that do not count (incomplete, missing minutes, unallocated).
    edges = {
        "GPU-HOT": [{"max_temperature_c": v} for v in (LIMIT + 0.1, LIMIT, LIMIT + 4, 90.0, LIMIT + 0.5, 40.0)],
        "GPU-MEM": [{"memory_pressure_minutes": v} for v in (1, 0, 7, None, 2, 3)],
        "GPU-IDLE": [
            {"avg_utilization_pct": IDLE - 0.01},
            {"avg_utilization_pct": IDLE},
            {"avg_utilization_pct": 0.0},
            {"avg_utilization_pct": 2.0, "is_complete": False},
            {"avg_utilization_pct": 2.0, "sample_count": alert_rules.IDLE_FOR_MINUTES - 1},
            {"avg_utilization_pct": None},
        ],
    }
    for device, values in edges.items():
        for hour, fields in zip(hours, values, strict=True):
            rollup(
                cluster=demo_org.cluster, hour=hour, gpu_uuid=device, team=demo_org.team, request=held,
                avg_utilization_pct=fields.pop("avg_utilization_pct", 50.0), **fields,
            )  # fmt: skip
    for hour in hours:  # an unallocated GPU idle all along is capacity, not waste
        rollup(cluster=demo_org.cluster, hour=hour, gpu_uuid="GPU-FREE", avg_utilization_pct=0.0)

    every_hour = alert_rules.evaluate(device_hours(UtilizationRollup.objects.all()))
    assert alerts_for(UtilizationRollup.objects.all()) == every_hour
    runs = {(a.device, a.kind.value, a.first_hour, a.hours) for a in every_hour}
    assert runs == {
        ("GPU-HOT", "temperature", hours[0], 1),
        ("GPU-HOT", "temperature", hours[2], 3),
        ("GPU-MEM", "memory_pressure", hours[0], 1),
        ("GPU-MEM", "memory_pressure", hours[2], 1),
        ("GPU-MEM", "memory_pressure", hours[4], 2),
        ("GPU-IDLE", "idle", hours[0], 1),
        ("GPU-IDLE", "idle", hours[2], 1),
    }
