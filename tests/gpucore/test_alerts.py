"""The alert rules (gpucore.alerts): the guide's thresholds at their boundaries, and incomplete hours."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from gpucore.alerts import (
    AlertKind,
    DeviceHour,
    Severity,
    count_by_kind,
    count_devices_by_kind,
    evaluate,
    group_alerts,
    has_memory_pressure,
    hour_findings,
    is_overheated,
    memory_pressure_minutes,
)

H0 = datetime(2026, 10, 5, 10, tzinfo=UTC)


def hour(offset: int = 0, **overrides: object) -> DeviceHour:
    values: dict[str, object] = {
        "hour": H0 + timedelta(hours=offset),
        "cluster": "demo",
        "device": "GPU-1",
        "sample_count": 60,
        "avg_utilization_pct": 55.0,
        "team": "vision",
        "request_id": 7,
    }
    values.update(overrides)
    return DeviceHour(**values)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("temperature", "alerts"),
    [(None, False), (70.0, False), (83.0, False), (83.05, True), (83.1, True), (91.0, True)],
)
def test_temperature_alerts_immediately_above_83(temperature: float | None, alerts: bool) -> None:
    assert is_overheated(temperature) is alerts
    kinds = [kind for kind, _ in hour_findings(hour(max_temperature_c=temperature))]
    assert (AlertKind.TEMPERATURE in kinds) is alerts


@pytest.mark.parametrize(
    ("ratios", "minutes"),
    [
        ([], 0),
        ([0.9], 0),  # above 85 % at one point: not yet
        ([0.9, 0.9], 0),  # two points are one minute of pressure: not yet (the rule says "for 2 minutes")
        ([0.9, 0.9, 0.9], 1),  # three points span two minutes: fires
        ([0.85, 0.85, 0.85, 0.85], 0),  # 85 % itself is not above
        ([0.851, 0.86, 0.87], 1),
        ([0.9, 0.9, 0.5, 0.9, 0.9], 0),  # never two minutes in a row
        ([0.9, 0.9, None, 0.9], 0),  # a missing minute breaks the run
        ([0.9, 0.9, 0.9, 0.9], 2),
    ],
)
def test_memory_pressure_needs_two_minutes_above_85(ratios: list[float | None], minutes: int) -> None:
    assert memory_pressure_minutes(ratios) == minutes
    assert has_memory_pressure(minutes) is (minutes >= 1)


@pytest.mark.parametrize(("pressure", "alerts"), [(None, False), (0, False), (1, True), (30, True)])
def test_memory_pressure_rule_on_rollups(pressure: int | None, alerts: bool) -> None:
    kinds = [kind for kind, _ in hour_findings(hour(memory_pressure_minutes=pressure))]
    assert (AlertKind.MEMORY_PRESSURE in kinds) is alerts


@pytest.mark.parametrize(
    ("overrides", "idle"),
    [
        ({"avg_utilization_pct": 9.9}, True),
        ({"avg_utilization_pct": 0.0}, True),
        ({"avg_utilization_pct": 10.0}, False),  # 10 % is not under 10 %
        ({"avg_utilization_pct": 9.9, "sample_count": 59}, False),  # 59 minutes is not an hour
        ({"avg_utilization_pct": 9.9, "sample_count": 60}, True),
        ({"avg_utilization_pct": 0.0, "is_complete": False}, False),  # an hour still being read: unknown
        ({"avg_utilization_pct": None}, False),  # no utilization reading: unknown, never zero
        ({"avg_utilization_pct": 0.0, "team": None, "request_id": None}, False),  # unallocated capacity, not waste
    ],
)
def test_idle_waste_needs_a_full_complete_hour_under_10_percent(overrides: dict, idle: bool) -> None:
    kinds = [kind for kind, _ in hour_findings(hour(**overrides))]
    assert (AlertKind.IDLE in kinds) is idle


def test_missing_hours_raise_no_waste_alert() -> None:
    # Nothing at all was read for the hours between: no rollup, so nothing to alert on.
    assert evaluate([]) == []


def test_consecutive_hours_merge_and_a_gap_splits() -> None:
    hours = [hour(i, avg_utilization_pct=2.0 + i) for i in (0, 1, 2, 5)]
    alerts = evaluate(hours)
    idle = sorted((a for a in alerts if a.kind is AlertKind.IDLE), key=lambda a: a.first_hour)
    assert [(a.first_hour, a.last_hour, a.hours) for a in idle] == [
        (H0, H0 + timedelta(hours=2), 3),
        (H0 + timedelta(hours=5), H0 + timedelta(hours=5), 1),
    ]
    assert idle[0].worst == 2.0  # the lowest utilization of the run
    assert idle[0].until == H0 + timedelta(hours=3)


def test_alerts_are_ordered_by_severity_and_carry_their_owner() -> None:
    alerts = evaluate(
        [
            hour(0, avg_utilization_pct=1.0),
            hour(1, device="GPU-2", memory_pressure_minutes=4),
            hour(2, device="GPU-3", max_temperature_c=88.5),
        ]
    )
    assert [a.severity for a in alerts] == [Severity.CRITICAL, Severity.WARNING, Severity.INFO]
    assert alerts[0].worst == 88.5 and "88.5" in alerts[0].detail
    assert all(a.team == "vision" and a.request_id == 7 for a in alerts)
    assert count_by_kind(alerts) == {"temperature": 1, "memory_pressure": 1, "idle": 1}


def test_alerts_are_counted_by_gpu_as_the_lists_show_them_and_by_run() -> None:
    # GPU-1 hot in three separate runs, GPU-2 in one: two GPUs listed, four runs.
    hot = [hour(i, max_temperature_c=88.0) for i in (0, 3, 6)] + [hour(0, device="GPU-2", max_temperature_c=86.0)]
    alerts = evaluate(hot)

    assert count_by_kind(alerts)["temperature"] == 4
    assert count_devices_by_kind(alerts) == {"temperature": 2, "memory_pressure": 0, "idle": 0}
    assert len([g for g in group_alerts(alerts) if g.kind is AlertKind.TEMPERATURE]) == 2


def test_separate_owners_of_one_device_are_separate_alerts() -> None:
    alerts = evaluate([hour(0, max_temperature_c=90.0), hour(1, max_temperature_c=90.0, request_id=8)])
    assert len(alerts) == 2


def test_runs_of_one_rule_on_one_gpu_are_one_group_with_first_and_last_seen_and_a_count() -> None:
    # Idle two hours every night for five nights on GPU-1; one hot hour on GPU-2.
    idle_nights = [hour(day * 24 + h, avg_utilization_pct=2.0 + day) for day in range(5) for h in range(2)]
    hot = [hour(0, device="GPU-2", avg_utilization_pct=90.0, max_temperature_c=91.0, team="nlp", request_id=None)]

    alerts = evaluate([*idle_nights, *hot])
    groups = group_alerts(alerts)

    assert len([a for a in alerts if a.kind is AlertKind.IDLE]) == 5  # five nights: five runs, five rows before
    assert [(g.kind, g.device) for g in groups] == [(AlertKind.TEMPERATURE, "GPU-2"), (AlertKind.IDLE, "GPU-1")]
    idle = groups[1]
    assert (idle.count, idle.hours) == (5, 10)
    assert idle.first_seen == H0 and idle.last_seen == H0 + timedelta(days=4, hours=2)
    assert idle.worst == 2.0  # the lowest utilization of any night
    assert idle.teams == ("vision",) and idle.request_ids == (7,)
