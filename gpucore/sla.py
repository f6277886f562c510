"""SLA tiers as the decision framework sees them: pure data, no Django.

From Part 4.3 of the allocation guides ("SLA-driven resource planning"): a tier is a floor on isolation.
``tier1_realtime`` means a dedicated GPU, ``tier2_batch`` hardware isolation at least (MIG or dedicated),
``tier3_development`` anything, time-slicing 4x by default. The ``SlaTier`` table is seeded from
``DEFAULT_TIERS`` and admins may edit it; a selector turns rows back into ``SlaTierSpec``.
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal

from gpucore.vocabulary import IsolationFloor


@dataclass(frozen=True, slots=True)
class SlaTierSpec:
    """An SLA tier: its targets, its isolation floor and what it costs relative to the base rate."""

    slug: str
    name: str
    isolation_floor: IsolationFloor
    priority_class_name: str
    priority_value: int
    price_multiplier: Decimal = Decimal("1")
    latency_p99_ms: Decimal | None = None
    availability_pct: Decimal | None = None
    preemptible: bool = False
    default_time_slice_replicas: int | None = None
    description: str = ""


DEFAULT_TIERS: tuple[SlaTierSpec, ...] = (
    SlaTierSpec(
        slug="tier1_realtime",
        name="Tier 1 - real-time",
        isolation_floor=IsolationFloor.DEDICATED,
        priority_class_name="gpu-portal-tier1-realtime",
        priority_value=1_000_000,
        price_multiplier=Decimal("1.5"),
        latency_p99_ms=Decimal("10"),
        availability_pct=Decimal("99.99"),
        description="p99 10 ms, 99.99 % availability: dedicated GPUs only.",
    ),
    SlaTierSpec(
        slug="tier2_batch",
        name="Tier 2 - batch",
        isolation_floor=IsolationFloor.HARDWARE,
        priority_class_name="gpu-portal-tier2-batch",
        priority_value=100_000,
        price_multiplier=Decimal("1.0"),
        availability_pct=Decimal("99.9"),
        description="99.9 % availability, throughput SLAs: hardware isolation at least (MIG or dedicated).",
    ),
    SlaTierSpec(
        slug="tier3_development",
        name="Tier 3 - development",
        isolation_floor=IsolationFloor.NONE,
        priority_class_name="gpu-portal-tier3-development",
        priority_value=1_000,
        price_multiplier=Decimal("0.8"),
        preemptible=True,
        default_time_slice_replicas=4,
        description="Best effort: any strategy, time-slicing 4x by default; may be preempted.",
    ),
)

DEFAULT_TIERS_BY_SLUG: dict[str, SlaTierSpec] = {tier.slug: tier for tier in DEFAULT_TIERS}
