"""The idle reclaim policy: each rule with a case that breaks without it."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from gpucore.idle_reclaim import (
    DEFAULT_THRESHOLDS,
    DeviceReading,
    ReclaimAction,
    ReclaimThresholds,
    decide,
    hour_verdict,
    thresholds_for,
)

T = ReclaimThresholds(utilization_pct=5, memory_mib=2048, window_hours=8, warn_hours=2)
NOW = datetime(2026, 11, 10, 12, 10, tzinfo=UTC)
LAST_HOUR = datetime(2026, 11, 10, 11, tzinfo=UTC)
SINCE = datetime(2026, 11, 9, tzinfo=UTC)


def idle(hour: datetime, device: str = "GPU-a", **overrides: object) -> DeviceReading:
    values: dict[str, object] = {
        "hour": hour,
        "device": device,
        "sample_count": 60,
        "avg_utilization_pct": 1.0,
        "peak_memory_used_mib": 500.0,
        "is_complete": True,
    }
    values.update(overrides)
    return DeviceReading(**values)  # type: ignore[arg-type]


def hours_back(count: int) -> list[datetime]:
    return [LAST_HOUR - timedelta(hours=n) for n in range(count)]


def run(readings: list[DeviceReading], *, workload: str = "development", warned_at: datetime | None = None, **kw):
    return decide(
        workload_type=workload,
        readings=readings,
        thresholds=kw.get("thresholds", T),
        now=kw.get("now", NOW),
        since=kw.get("since", SINCE),
        warned_at=warned_at,
    )


def test_idle_for_the_window_minus_the_notice_is_warned_with_its_readings() -> None:
    decision = run([idle(h) for h in hours_back(6)])
    assert decision.action is ReclaimAction.WARN
    assert decision.idle_hours == 6
    assert [v.hour for v in decision.readings] == sorted(hours_back(6))
    assert all(v.idle and v.max_utilization_pct == 1.0 for v in decision.readings)


def test_a_shorter_idle_run_does_nothing() -> None:
    assert run([idle(h) for h in hours_back(5)]).action is ReclaimAction.NOTHING


def test_never_suspended_without_a_warning_of_this_run() -> None:
    assert run([idle(h) for h in hours_back(8)]).action is ReclaimAction.WARN
    # A warning of an earlier run (before this run began) does not count.
    old = LAST_HOUR - timedelta(hours=20)
    assert run([idle(h) for h in hours_back(8)], warned_at=old).action is ReclaimAction.WARN


def test_suspended_after_the_window_and_the_notice() -> None:
    warned = NOW - timedelta(hours=2)
    decision = run([idle(h) for h in hours_back(8)], warned_at=warned)
    assert decision.action is ReclaimAction.SUSPEND
    assert len(decision.readings) == 8


def test_not_suspended_before_the_notice_has_run_out() -> None:
    warned = NOW - timedelta(hours=1)
    assert run([idle(h) for h in hours_back(8)], warned_at=warned).action is ReclaimAction.NOTHING


def test_an_incomplete_hour_is_not_idle() -> None:
    readings = [idle(h) for h in hours_back(8)]
    readings[3] = idle(hours_back(8)[3], is_complete=False)
    decision = run(readings, warned_at=NOW - timedelta(hours=3))
    assert decision.action is ReclaimAction.NOTHING
    assert decision.idle_hours == 3
    assert hour_verdict(LAST_HOUR, [idle(LAST_HOUR, is_complete=False)], T).reason == "incomplete hour"


def test_a_missing_hour_or_missing_minutes_are_not_idle() -> None:
    hours = hours_back(8)
    gap = [idle(h) for h in hours if h != hours[2]]
    assert run(gap, warned_at=NOW - timedelta(hours=3)).action is ReclaimAction.NOTHING
    short = [idle(h, sample_count=59) if h == hours[0] else idle(h) for h in hours]
    assert run(short, warned_at=NOW - timedelta(hours=3)).action is ReclaimAction.NOTHING
    no_memory = [idle(h, peak_memory_used_mib=None) if h == hours[0] else idle(h) for h in hours]
    assert run(no_memory, warned_at=NOW - timedelta(hours=3)).action is ReclaimAction.NOTHING


def test_one_busy_device_or_memory_in_use_breaks_the_run() -> None:
    hours = hours_back(8)
    busy = [idle(h) for h in hours] + [idle(hours[0], device="GPU-b", avg_utilization_pct=40.0)]
    assert run(busy, warned_at=NOW - timedelta(hours=3)).action is ReclaimAction.NOTHING
    memory = [idle(h, peak_memory_used_mib=4096.0) if h == hours[1] else idle(h) for h in hours]
    assert run(memory, warned_at=NOW - timedelta(hours=3)).idle_hours == 1


def test_hours_before_since_do_not_count() -> None:
    since = LAST_HOUR - timedelta(hours=2)  # resumed (or kept) two hours ago
    assert run([idle(h) for h in hours_back(8)], since=since).idle_hours == 3
    assert run([idle(h) for h in hours_back(8)], since=since).action is ReclaimAction.NOTHING


@pytest.mark.parametrize("workload", ["training", "batch_inference", "realtime_inference", "hpc_simulation"])
def test_training_batch_and_inference_are_never_suspended(workload: str) -> None:
    decision = run([idle(h) for h in hours_back(8)], workload=workload, warned_at=NOW - timedelta(hours=5))
    assert decision.action is ReclaimAction.NOTHING
    assert decision.readings == ()


def test_the_off_switch_and_per_tier_defaults() -> None:
    off = ReclaimThresholds(enabled=False)
    assert run([idle(h) for h in hours_back(8)], thresholds=off, warned_at=NOW - timedelta(hours=5)).action == "nothing"
    assert not thresholds_for("tier1_realtime", DEFAULT_THRESHOLDS).enabled
    assert thresholds_for("tier3_development", DEFAULT_THRESHOLDS).window_hours == 8
    assert thresholds_for(None, DEFAULT_THRESHOLDS) == DEFAULT_THRESHOLDS["default"]
    assert thresholds_for("unknown", {}) == DEFAULT_THRESHOLDS["default"]


def test_thresholds_refuse_nonsense() -> None:
    with pytest.raises(ValueError, match="warn_hours"):
        ReclaimThresholds(window_hours=2, warn_hours=3)
    with pytest.raises(ValueError, match="window_hours"):
        ReclaimThresholds(window_hours=0, warn_hours=0)
