"""GPU alert rules over hourly utilization rollups: overheating, memory pressure and idle (wasted) GPUs. Pure.

Thresholds are guide 000's (Part 3.1 "Critical Metrics to Monitor" and 3.3 "Alert Strategy"; see
docs/reference-sources.md#guides): ``DCGM_FI_DEV_GPU_TEMP > 83`` alerts immediately; ``DCGM_FI_DEV_FB_USED / total >
0.85`` alerts once it has held for 2 minutes; and a held GPU under 10 % utilization for an hour is waste. Hours are read
at one-minute points (billing.metering.services), so "for 2 minutes" is, as Prometheus evaluates ``for: 2m`` every
minute, three consecutive one-minute points above 85 % (the condition true at t-2m, t-1m and t: two minutes long), and
"for an hour" is all 60 minutes of a complete hour. An hour that is incomplete or has missing minutes is never read as
zero use: it cannot raise a waste alert (missing data is not idleness).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from enum import StrEnum

# Guide 3.3 GPUThermalThrottle: `DCGM_FI_DEV_GPU_TEMP > 83`, no `for:` ("Alert immediately at 83 °C", 3.1).
TEMPERATURE_LIMIT_C = 83.0
# Guide 3.3 GPUMemoryPressure: `DCGM_FI_DEV_FB_USED / DCGM_FI_DEV_FB_TOTAL > 0.85` with `for: 2m`.
MEMORY_PRESSURE_RATIO = 0.85
MEMORY_PRESSURE_FOR_MINUTES = 2
# A GPU held under 10 % utilization for an hour is waste: it could serve another team.
IDLE_UTILIZATION_PCT = 10.0
IDLE_FOR_MINUTES = 60
MINUTES_PER_HOUR = 60
HOUR = timedelta(hours=1)


class AlertKind(StrEnum):
    TEMPERATURE = "temperature"
    MEMORY_PRESSURE = "memory_pressure"
    IDLE = "idle"


class Severity(StrEnum):
    CRITICAL = "critical"
    WARNING = "warning"
    INFO = "info"


SEVERITY = {
    AlertKind.TEMPERATURE: Severity.CRITICAL,
    AlertKind.MEMORY_PRESSURE: Severity.WARNING,
    AlertKind.IDLE: Severity.INFO,
}
TITLES = {
    AlertKind.TEMPERATURE: f"GPU temperature above {TEMPERATURE_LIMIT_C:.0f} °C",
    AlertKind.MEMORY_PRESSURE: (
        f"GPU memory above {MEMORY_PRESSURE_RATIO:.0%} for {MEMORY_PRESSURE_FOR_MINUTES} minutes"
    ),
    AlertKind.IDLE: f"GPU under {IDLE_UTILIZATION_PCT:.0f} % utilization for an hour (waste)",
}


@dataclass(frozen=True, slots=True)
class DeviceHour:
    """One device's (GPU or MIG instance) hour for one owner, as an hourly rollup holds it."""

    hour: datetime
    cluster: str
    device: str  # GPU UUID, or "<UUID>/<GPU_I_ID>" for a MIG instance
    sample_count: int
    avg_utilization_pct: float | None = None
    max_temperature_c: float | None = None
    memory_pressure_minutes: int | None = None
    peak_memory_used_mib: float | None = None
    is_complete: bool = True
    team: str | None = None  # team slug; None: unallocated/other
    request_id: int | None = None
    hostname: str = ""
    gpu_model: str = ""


@dataclass(frozen=True, slots=True)
class Alert:
    """One rule breached by one device and owner over a run of consecutive hours (``hours`` of them)."""

    kind: AlertKind
    cluster: str
    device: str
    first_hour: datetime
    last_hour: datetime
    hours: int
    worst: float  # the hottest °C, the most pressure minutes in an hour, or the lowest utilization %
    team: str | None = None
    request_id: int | None = None
    hostname: str = ""
    gpu_model: str = ""

    @property
    def severity(self) -> Severity:
        return SEVERITY[self.kind]

    @property
    def title(self) -> str:
        return TITLES[self.kind]

    @property
    def until(self) -> datetime:
        """The end of the last hour of the run."""
        return self.last_hour + HOUR

    @property
    def detail(self) -> str:
        """A one-line description with the worst value seen."""
        span = f"{self.hours} h" if self.hours > 1 else "1 h"
        if self.kind is AlertKind.TEMPERATURE:
            return f"Reached {self.worst:.1f} °C ({span})."
        if self.kind is AlertKind.MEMORY_PRESSURE:
            return f"Up to {self.worst:.0f} minutes an hour above {MEMORY_PRESSURE_RATIO:.0%} of memory ({span})."
        return f"Averaged {self.worst:.1f} % utilization for {span} while held."


def is_overheated(max_temperature_c: float | None) -> bool:
    """True when the hottest minute was above 83 °C (83.0 itself is not)."""
    return max_temperature_c is not None and max_temperature_c > TEMPERATURE_LIMIT_C


def memory_pressure_minutes(used_ratios: Sequence[float | None]) -> int:
    """Minutes, of one-minute points, at which memory use had been above 85 % for the 2 minutes before.

    That is a point above 85 % whose two predecessors were too (a run of 3 points spans 2 minutes); it is what the
    rollup's ``memory_pressure_minutes`` stores, and one or more means the 2-minute rule fired. A missing point
    (None) breaks a run.
    """
    window = MEMORY_PRESSURE_FOR_MINUTES + 1
    count = 0
    run = 0
    for ratio in used_ratios:
        run = run + 1 if ratio is not None and ratio > MEMORY_PRESSURE_RATIO else 0
        if run >= window:
            count += 1
    return count


def has_memory_pressure(pressure_minutes: int | None) -> bool:
    """True when memory stayed above 85 % for 2 minutes at least once in the hour."""
    return bool(pressure_minutes)


def is_idle(hour: DeviceHour) -> bool:
    """True when a held device was under 10 % utilization through all 60 minutes of a complete hour.

    Unallocated devices are capacity, not waste; an incomplete hour or one with missing minutes is unknown use.
    """
    if hour.team is None or not hour.is_complete or hour.avg_utilization_pct is None:
        return False
    if hour.sample_count < IDLE_FOR_MINUTES:
        return False
    return hour.avg_utilization_pct < IDLE_UTILIZATION_PCT


def hour_findings(hour: DeviceHour) -> list[tuple[AlertKind, float]]:
    """The rules one device-hour breaches, each with the value that breached it."""
    found: list[tuple[AlertKind, float]] = []
    if is_overheated(hour.max_temperature_c):
        found.append((AlertKind.TEMPERATURE, float(hour.max_temperature_c or 0.0)))
    if has_memory_pressure(hour.memory_pressure_minutes):
        found.append((AlertKind.MEMORY_PRESSURE, float(hour.memory_pressure_minutes or 0)))
    if is_idle(hour):
        found.append((AlertKind.IDLE, float(hour.avg_utilization_pct or 0.0)))
    return found


def evaluate(hours: Iterable[DeviceHour]) -> list[Alert]:
    """Alerts over device-hours: consecutive breaching hours of one device, owner and rule become one alert.

    Sorted most severe first, then most recent first.
    """
    runs: dict[tuple, list[tuple[datetime, float, DeviceHour]]] = {}
    for hour in sorted(hours, key=lambda h: h.hour):
        for kind, value in hour_findings(hour):
            key = (kind, hour.cluster, hour.device, hour.team, hour.request_id)
            runs.setdefault(key, []).append((hour.hour, value, hour))
    alerts: list[Alert] = []
    for (kind, *_), items in runs.items():
        start = 0
        for index in range(1, len(items) + 1):
            if index == len(items) or items[index][0] - items[index - 1][0] > HOUR:
                alerts.append(_alert(kind, items[start:index]))
                start = index
    order = {Severity.CRITICAL: 0, Severity.WARNING: 1, Severity.INFO: 2}
    alerts.sort(key=lambda a: (order[a.severity], -a.last_hour.timestamp(), a.device))
    return alerts


def _alert(kind: AlertKind, items: list[tuple[datetime, float, DeviceHour]]) -> Alert:
    values = [value for _, value, _ in items]
    # Idle: the lowest utilization is the most telling; the others: the highest reading.
    worst = min(values) if kind is AlertKind.IDLE else max(values)
    first = items[0][2]
    return Alert(
        kind=kind,
        cluster=first.cluster,
        device=first.device,
        first_hour=items[0][0],
        last_hour=items[-1][0],
        hours=len({hour for hour, _, _ in items}),
        worst=worst,
        team=first.team,
        request_id=first.request_id,
        hostname=first.hostname,
        gpu_model=first.gpu_model,
    )


def count_by_kind(alerts: Iterable[Alert]) -> dict[str, int]:
    """How many alerts of each kind (every kind present, zero or more)."""
    counts = {kind.value: 0 for kind in AlertKind}
    for alert in alerts:
        counts[alert.kind.value] += 1
    return counts


def count_devices_by_kind(alerts: Iterable[Alert]) -> dict[str, int]:
    """On how many devices each kind of alert fired (every kind present): the unit the grouped lists show, one row
    per device and rule, however many runs each had."""
    devices: dict[str, set[tuple[str, str]]] = {kind.value: set() for kind in AlertKind}
    for alert in alerts:
        devices[alert.kind.value].add((alert.cluster, alert.device))
    return {kind: len(found) for kind, found in devices.items()}


@dataclass(frozen=True, slots=True)
class AlertGroup:
    """Every run of one rule on one device: first and last seen, how many runs and hours, the worst reading.

    One row per GPU and rule instead of one per run: a GPU idle every night is one group with a count, not 50 rows.
    """

    kind: AlertKind
    cluster: str
    device: str
    first_seen: datetime  # the start of the first hour
    last_seen: datetime  # the end of the last hour
    count: int  # runs of consecutive hours
    hours: int
    worst: float
    teams: tuple[str, ...] = ()
    request_ids: tuple[int, ...] = ()
    hostname: str = ""
    gpu_model: str = ""

    @property
    def severity(self) -> Severity:
        return SEVERITY[self.kind]

    @property
    def title(self) -> str:
        return TITLES[self.kind]

    @property
    def detail(self) -> str:
        """The worst reading over every run."""
        if self.kind is AlertKind.TEMPERATURE:
            return f"Hottest {self.worst:.1f} °C over {self.hours} h."
        if self.kind is AlertKind.MEMORY_PRESSURE:
            return (
                f"Up to {self.worst:.0f} minutes an hour above {MEMORY_PRESSURE_RATIO:.0%} of memory, {self.hours} h."
            )
        return f"As low as {self.worst:.1f} % utilization while held, {self.hours} h."


def group_alerts(alerts: Iterable[Alert]) -> list[AlertGroup]:
    """Alerts grouped by rule, cluster and device; most severe first, then most recently seen."""
    buckets: dict[tuple[AlertKind, str, str], list[Alert]] = {}
    for alert in alerts:
        buckets.setdefault((alert.kind, alert.cluster, alert.device), []).append(alert)
    groups = []
    for (kind, cluster, device), items in buckets.items():
        values = [a.worst for a in items]
        latest = max(items, key=lambda a: a.last_hour)
        groups.append(
            AlertGroup(
                kind=kind,
                cluster=cluster,
                device=device,
                first_seen=min(a.first_hour for a in items),
                last_seen=max(a.until for a in items),
                count=len(items),
                hours=sum(a.hours for a in items),
                worst=min(values) if kind is AlertKind.IDLE else max(values),
                teams=tuple(sorted({a.team for a in items if a.team})),
                request_ids=tuple(sorted({a.request_id for a in items if a.request_id is not None})),
                hostname=latest.hostname,
                gpu_model=latest.gpu_model,
            )
        )
    order = {Severity.CRITICAL: 0, Severity.WARNING: 1, Severity.INFO: 2}
    groups.sort(key=lambda g: (order[g.severity], -g.last_seen.timestamp(), g.device))
    return groups
