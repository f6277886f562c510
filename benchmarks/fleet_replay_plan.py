"""The fleet replay's simulated month: the arrivals of every workload type and each one's utilization per hour
(seeded, so both scenarios replay the same month)."""

from __future__ import annotations

import math
import random
from dataclasses import dataclass, field
from datetime import UTC, datetime

START = datetime(2026, 10, 1, tzinfo=UTC)
TEAMS = ["vision", "nlp", "speech", "recsys", "robotics", "search", "ads", "health"]
# (workload type, share of arrivals, SLA tier, GPUs per replica choices, duration hours range)
MIX = [
    ("development", 0.45, "tier3_development", (1, 1, 1, 2), (24, 120)),
    ("batch_inference", 0.2, "tier2_batch", (1, 2), (4, 24)),
    ("realtime_inference", 0.15, "tier1_realtime", (1,), (72, 240)),
    ("training", 0.2, "tier2_batch", (2, 4, 8), (12, 96)),
]
IDLE_UTIL = 1.5  # % a notebook shows between sessions (the kernel alive, nobody computing)
INCOMPLETE_SHARE = 0.03  # notebook hours that a scrape gap leaves incomplete


@dataclass
class Planned:
    """One request of the replay: when it arrives, what it asks, and its utilization per hour of its life."""

    index: int
    team: str
    workload_type: str
    tier: str
    gpus: int
    arrive_hour: int
    duration_hours: int
    busy: list[float]  # utilization % per hour of life (index 0: its first hour running)
    incomplete: set[int] = field(default_factory=set)
    request_id: int | None = None

    @property
    def replicas(self) -> int:
        """Real-time inference runs two replicas (tier 1's availability needs them); the rest one."""
        return 2 if self.workload_type == "realtime_inference" else 1


def profile(rng: random.Random, workload_type: str, hours: int, start_hour: int) -> list[float]:
    """Utilization per hour by workload type."""
    if workload_type == "development":
        out, busy_left, idle_left = [], rng.randint(1, 4), 0
        for _ in range(hours):
            if busy_left:
                out.append(rng.uniform(25, 70))
                busy_left -= 1
                if not busy_left:
                    idle_left = rng.choice([1, 2, 3, 10, 14, 16, 20, 40])  # a break, a night, a weekend
            else:
                out.append(IDLE_UTIL)
                idle_left -= 1
                if not idle_left:
                    busy_left = rng.randint(2, 6)
        return out
    if workload_type == "batch_inference":
        return [rng.uniform(60, 95) if rng.random() < 0.7 else rng.uniform(8, 20) for _ in range(hours)]
    if workload_type == "realtime_inference":
        return [15 + 50 * max(0.0, math.sin(((start_hour + h) % 24 - 6) / 24 * 2 * math.pi)) for h in range(hours)]
    return [rng.uniform(85, 98) for _ in range(hours)]


def _draw(pick: float) -> tuple[str, str, tuple[int, ...], tuple[int, int]]:
    """The workload type (with its tier, GPU choices and duration range) a draw in [0, 1) falls on."""
    for workload_type, share, tier, gpu_choices, durations in MIX:
        if pick < share:
            return workload_type, tier, gpu_choices, durations
        pick -= share
    workload_type, _, tier, gpu_choices, durations = MIX[-1]
    return workload_type, tier, gpu_choices, durations


def plan(*, requests: int, days: int, seed: int) -> list[Planned]:
    rng = random.Random(seed)
    hours = days * 24
    out = []
    for index in range(requests):
        workload_type, tier, gpu_choices, (low, high) = _draw(rng.random())
        arrive = min(int(rng.random() * hours * 0.9), hours - 2)
        duration = rng.randint(low, high)
        item = Planned(
            index=index,
            team=TEAMS[index % len(TEAMS)],
            workload_type=workload_type,
            tier=tier,
            gpus=rng.choice(gpu_choices),
            arrive_hour=arrive,
            duration_hours=duration,
            busy=profile(rng, workload_type, duration + hours, arrive),
        )
        if workload_type == "development":
            item.incomplete = {h for h in range(duration + hours) if rng.random() < INCOMPLETE_SHARE}
        out.append(item)
    return sorted(out, key=lambda p: (p.arrive_hour, p.index))
