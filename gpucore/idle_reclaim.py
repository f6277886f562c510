"""The idle reclaim policy: whether an idle development workload is warned, suspended, or left alone. Pure.

A workload is idle for an hour when every one of its devices reported all 60 one-minute points of a complete hour
with utilization under the threshold and peak memory under the memory threshold. An hour that is incomplete, has
missing minutes, or has no reading at all is *not* idle: missing data never reclaims anything. The idle run is the
unbroken stretch of idle hours ending with the last hour that has ended; it never reaches back before ``since``
(the workload's start, its last resume, or its owner's last "keep").

Only ``development`` workloads are ever suspended: batch and training Jobs are never killed for being idle, and
real-time inference is never suspended by this policy (its waste is right-sizing advice). The owner is always warned
first: once the run reaches ``window_hours - warn_hours``, and suspension comes only after the run spans the whole
window *and* ``warn_hours`` have passed since the warning of this run.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from enum import StrEnum

from gpucore.vocabulary import WorkloadType

HOUR = timedelta(hours=1)
MINUTES_PER_HOUR = 60
# Only these workload types are ever suspended for being idle (DESIGN.md "Idle reclaim").
RECLAIMABLE_WORKLOADS = frozenset({WorkloadType.DEVELOPMENT})


class ReclaimAction(StrEnum):
    NOTHING = "nothing"
    WARN = "warn"
    SUSPEND = "suspend"


@dataclass(frozen=True, slots=True)
class ReclaimThresholds:
    """When a workload of one SLA tier counts as idle, and how long before it is warned and suspended."""

    enabled: bool = True
    utilization_pct: float = 5.0
    memory_mib: float = 2048.0
    window_hours: int = 8
    warn_hours: int = 2

    def __post_init__(self) -> None:
        if self.window_hours < 1:
            raise ValueError("window_hours must be at least 1.")
        if not 0 < self.warn_hours <= self.window_hours:
            raise ValueError("warn_hours must be between 1 and window_hours.")
        if self.utilization_pct < 0 or self.memory_mib < 0:
            raise ValueError("Idle thresholds cannot be negative.")


# Per SLA tier; "default" for a request without a tier (or with a tier not listed). Tier 1 is never reclaimed.
DEFAULT_THRESHOLDS: Mapping[str, ReclaimThresholds] = {
    "tier1_realtime": ReclaimThresholds(enabled=False),
    "tier2_batch": ReclaimThresholds(window_hours=24, warn_hours=4),
    "tier3_development": ReclaimThresholds(window_hours=8, warn_hours=2),
    "default": ReclaimThresholds(window_hours=24, warn_hours=4),
}


def thresholds_for(tier_slug: str | None, table: Mapping[str, ReclaimThresholds]) -> ReclaimThresholds:
    """The thresholds of ``tier_slug`` in ``table``, else its ``default`` entry, else the built-in default."""
    if tier_slug and tier_slug in table:
        return table[tier_slug]
    return table.get("default", DEFAULT_THRESHOLDS["default"])


@dataclass(frozen=True, slots=True)
class DeviceReading:
    """One device's hour for the workload, as its hourly rollup holds it."""

    hour: datetime
    device: str
    sample_count: int
    avg_utilization_pct: float | None
    peak_memory_used_mib: float | None
    is_complete: bool


@dataclass(frozen=True, slots=True)
class HourVerdict:
    """One hour of the workload: idle or not, and why, with the busiest device's figures."""

    hour: datetime
    idle: bool
    reason: str
    devices: int
    max_utilization_pct: float | None
    max_memory_mib: float | None

    def as_dict(self) -> dict[str, object]:
        return {
            "hour": self.hour.isoformat(),
            "idle": self.idle,
            "reason": self.reason,
            "devices": self.devices,
            "max_utilization_pct": self.max_utilization_pct,
            "max_memory_mib": self.max_memory_mib,
        }


@dataclass(frozen=True, slots=True)
class ReclaimDecision:
    """What to do, why, and the hours (oldest first) that justify it."""

    action: ReclaimAction
    reason: str
    idle_hours: int = 0
    readings: tuple[HourVerdict, ...] = ()


def hour_verdict(hour: datetime, readings: Iterable[DeviceReading], thresholds: ReclaimThresholds) -> HourVerdict:
    """Whether the workload was idle during ``hour``: every device complete, all minutes read, under both
    thresholds. No reading, an incomplete hour or a missing minute is not idle."""
    items = list(readings)
    utils = [r.avg_utilization_pct for r in items if r.avg_utilization_pct is not None]
    mems = [r.peak_memory_used_mib for r in items if r.peak_memory_used_mib is not None]
    top_util = max(utils) if utils else None
    top_mem = max(mems) if mems else None

    def verdict(idle: bool, reason: str) -> HourVerdict:
        return HourVerdict(hour, idle, reason, len(items), top_util, top_mem)

    if not items:
        return verdict(False, "no reading")
    if any(not r.is_complete for r in items):
        return verdict(False, "incomplete hour")
    if any(r.sample_count < MINUTES_PER_HOUR or r.avg_utilization_pct is None for r in items):
        return verdict(False, "missing minutes")
    if any(r.peak_memory_used_mib is None for r in items):
        return verdict(False, "no memory reading")
    if top_util is not None and top_util >= thresholds.utilization_pct:
        return verdict(False, "busy")
    if top_mem is not None and top_mem >= thresholds.memory_mib:
        return verdict(False, "memory in use")
    return verdict(True, "idle")


def _floor_hour(moment: datetime) -> datetime:
    return moment.replace(minute=0, second=0, microsecond=0)


def idle_run(
    *, readings: Iterable[DeviceReading], thresholds: ReclaimThresholds, now: datetime, since: datetime
) -> list[HourVerdict]:
    """The unbroken run of idle hours ending with the last hour ended by ``now``, oldest first; hours starting
    before ``since`` are never counted (a partial first hour is not a full idle hour)."""
    by_hour: dict[datetime, list[DeviceReading]] = {}
    for reading in readings:
        by_hour.setdefault(reading.hour, []).append(reading)
    run: list[HourVerdict] = []
    hour = _floor_hour(now) - HOUR
    while hour >= since and len(run) < thresholds.window_hours:
        verdict = hour_verdict(hour, by_hour.get(hour, ()), thresholds)
        if not verdict.idle:
            break
        run.append(verdict)
        hour -= HOUR
    run.reverse()
    return run


def decide(
    *,
    workload_type: str,
    readings: Iterable[DeviceReading],
    thresholds: ReclaimThresholds,
    now: datetime,
    since: datetime,
    warned_at: datetime | None,
) -> ReclaimDecision:
    """Warn, suspend or do nothing for one running workload (see the module's docstring for the rule)."""
    if workload_type not in RECLAIMABLE_WORKLOADS:
        return ReclaimDecision(ReclaimAction.NOTHING, f"{workload_type} workloads are never suspended for idling.")
    if not thresholds.enabled:
        return ReclaimDecision(ReclaimAction.NOTHING, "Idle reclaim is off for this tier.")
    run = idle_run(readings=readings, thresholds=thresholds, now=now, since=since)
    hours = len(run)
    if not run:
        return ReclaimDecision(ReclaimAction.NOTHING, "Not idle in the last hour (or no complete reading).")
    run_start = run[0].hour
    warned_this_run = warned_at is not None and warned_at >= run_start
    if (
        hours >= thresholds.window_hours
        and warned_this_run
        and now >= warned_at + timedelta(hours=thresholds.warn_hours)
    ):
        return ReclaimDecision(
            ReclaimAction.SUSPEND,
            f"Idle for {hours} h (under {thresholds.utilization_pct:g} % utilization and "
            f"{thresholds.memory_mib:g} MiB memory), warned {thresholds.warn_hours} h before.",
            hours,
            tuple(run),
        )
    if hours >= thresholds.window_hours - thresholds.warn_hours and not warned_this_run:
        return ReclaimDecision(
            ReclaimAction.WARN,
            f"Idle for {hours} h: it will be suspended after {thresholds.window_hours} h idle, "
            f"no sooner than {thresholds.warn_hours} h from now.",
            hours,
            tuple(run),
        )
    return ReclaimDecision(ReclaimAction.NOTHING, f"Idle for {hours} h, under the window.", hours, tuple(run))
