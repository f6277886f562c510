"""Right-sizing advice for a request from its measured use: a smaller MIG slice, or more isolation. Pure.

Rules: a dedicated GPU averaging under 30 % busy is oversized when a MIG profile of its model holds both its peak
memory and its compute with headroom, and the smallest such profile is suggested. Memory headroom: the peak stays at
or under 85 % of the profile's memory (the memory-pressure line, guide 3.3), so the move does not itself raise the
alert. Compute headroom: the observed busy fraction of the current allocation's compute stays at or under 85 % of
the profile's compute fraction (so a GPU kept 29 % busy needs at least 29 / 0.85 = 34 % of a GPU: 3g of 7 slices,
not 1g). Savings are priced on the GPU share (``max(compute/C, memory/M)``, docs/cost-model.md), never on compute alone.

Time-sliced tenants get no sizing claim: under time-slicing DCGM reports the whole GPU's utilization and memory to
every tenant, so readings include the neighbours; the advice says so, and under memory pressure names the isolated
options without pricing a per-tenant saving. A MIG slice under memory pressure moves up one size. Advice needs a day
of complete hours: a few hours of data say little about a workload.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from decimal import Decimal
from enum import StrEnum
from fractions import Fraction

from gpucore.alerts import MEMORY_PRESSURE_RATIO
from gpucore.pricing import HOURS_PER_MONTH, fraction_to_decimal, slice_weight

LOW_UTILIZATION_PCT = 30.0  # a dedicated GPU averaging under 30 % is oversized
MIN_OBSERVED_HOURS = 24


class AdviceKind(StrEnum):
    SMALLER_MIG = "smaller_mig"
    SHARED_READINGS = "shared_readings"
    LARGER_MIG = "larger_mig"
    ISOLATE_DEDICATED = "isolate_dedicated"


# The same 85 % line for compute as for memory: a slice kept busier than that has no room for bursts.
COMPUTE_HEADROOM_RATIO = MEMORY_PRESSURE_RATIO


@dataclass(frozen=True, slots=True)
class ProfileOption:
    """A MIG profile of the request's GPU model: its name, memory (GB as NVIDIA names it), compute and memory slices."""

    name: str
    memory_gb: float
    compute_slices: int
    memory_slices: int = 0  # 0: unknown, the share is then its compute fraction alone


@dataclass(frozen=True, slots=True)
class MeasuredUse:
    """A request's allocation and what it used over the observed window, per device (one GPU, slice or share)."""

    strategy: str  # dedicated | mig | time-slicing
    gpu_model: str
    units: int  # devices held: quantity per replica x replicas
    quantity_per_replica: int = 1
    mig_profile: str | None = None
    time_slice_replicas: int | None = None
    observed_hours: float = 0.0  # complete device-hours measured
    avg_utilization_pct: float | None = None  # busy fraction of the device held, 0-100
    peak_memory_used_gb: float | None = None
    memory_pressure_hours: int = 0


@dataclass(frozen=True, slots=True)
class Advice:
    """One suggestion: what to change to, why, and the monthly cost change (positive saving = cheaper)."""

    kind: AdviceKind
    title: str
    reason: str
    suggested_strategy: str
    suggested_profile: str | None
    current_monthly: Decimal | None
    suggested_monthly: Decimal | None

    @property
    def monthly_saving(self) -> Decimal | None:
        """Current minus suggested monthly cost (negative: the change costs more); None when unpriced or not claimed."""
        if self.current_monthly is None or self.suggested_monthly is None:
            return None
        return self.current_monthly - self.suggested_monthly


def fits(peak_memory_gb: float, profile: ProfileOption) -> bool:
    """True when the peak stays at or under 85 % of the profile's memory."""
    return peak_memory_gb <= profile.memory_gb * MEMORY_PRESSURE_RATIO


def holds_compute(busy_gpu_fraction: float, profile: ProfileOption, gpu_compute_slices: int) -> bool:
    """True when a busy fraction of one GPU stays at or under 85 % of the profile's compute fraction."""
    return busy_gpu_fraction <= profile.compute_slices / gpu_compute_slices * COMPUTE_HEADROOM_RATIO


def smallest_fitting(
    peak_memory_gb: float,
    profiles: Sequence[ProfileOption],
    *,
    busy_gpu_fraction: float = 0.0,
    gpu_compute_slices: int = 7,
) -> ProfileOption | None:
    """The smallest profile (by memory, then compute) holding the peak memory and the busy compute with headroom."""
    for profile in sorted(profiles, key=lambda p: (p.memory_gb, p.compute_slices)):
        if fits(peak_memory_gb, profile) and holds_compute(busy_gpu_fraction, profile, gpu_compute_slices):
            return profile
    return None


def profile_share(profile: ProfileOption, gpu_compute_slices: int, gpu_memory_slices: int) -> Decimal:
    """The profile's GPU share as bills count it (``gpucore.pricing.slice_weight``: the larger of its compute and
    memory fractions); its compute fraction alone when the memory geometry is unknown."""
    if not gpu_memory_slices or not profile.memory_slices:
        return fraction_to_decimal(Fraction(profile.compute_slices, gpu_compute_slices))
    weight = slice_weight(
        profile.compute_slices,
        profile.memory_slices,
        gpu_compute_slices=gpu_compute_slices,
        gpu_memory_slices=gpu_memory_slices,
    )
    return fraction_to_decimal(weight)


def _monthly(rate: Decimal | None, share: Decimal, units: int) -> Decimal | None:
    if rate is None:
        return None
    return rate * share * HOURS_PER_MONTH * Decimal(units)


def right_size(
    use: MeasuredUse,
    *,
    profiles: Sequence[ProfileOption],
    gpu_compute_slices: int,
    gpu_hourly_rate: Decimal | None,
    gpu_memory_slices: int = 0,
) -> list[Advice]:
    """Suggestions for one request (empty when it is well sized or too little was measured).

    ``profiles`` are the recommendable partial-GPU MIG profiles of its model (none: not MIG-capable), with the
    model's compute and memory slices; ``gpu_hourly_rate`` is the price of one whole GPU-hour (None: saving unknown).
    """
    if use.observed_hours < MIN_OBSERVED_HOURS or use.peak_memory_used_gb is None:
        return []
    peak = use.peak_memory_used_gb
    by_name = {p.name: p for p in profiles}
    if use.strategy == "dedicated":
        return _oversized_dedicated(use, profiles, gpu_compute_slices, gpu_memory_slices, gpu_hourly_rate)
    if use.strategy == "time-slicing":
        return [_shared_readings(use, profiles)]
    if use.strategy == "mig" and use.memory_pressure_hours > 0 and use.mig_profile:
        size = by_name.get(use.mig_profile)
        current = (
            _monthly(gpu_hourly_rate, profile_share(size, gpu_compute_slices, gpu_memory_slices), use.units)
            if size is not None
            else None
        )
        larger = [p for p in profiles if size is None or p.memory_gb > size.memory_gb]
        bigger = min(larger, key=lambda p: (p.memory_gb, p.compute_slices), default=None)
        share = profile_share(bigger, gpu_compute_slices, gpu_memory_slices) if bigger else Decimal(1)
        return [
            Advice(
                kind=AdviceKind.LARGER_MIG if bigger else AdviceKind.ISOLATE_DEDICATED,
                title=f"Move to a MIG {bigger.name} slice" if bigger else f"Move to a dedicated {use.gpu_model}",
                reason=(
                    f"The {use.mig_profile} slice's memory stayed above {MEMORY_PRESSURE_RATIO:.0%} for 2 minutes "
                    f"or more in {use.memory_pressure_hours} hour(s) (peak {peak:.1f} GB)."
                ),
                suggested_strategy="mig" if bigger else "dedicated",
                suggested_profile=bigger.name if bigger else None,
                current_monthly=current,
                suggested_monthly=_monthly(gpu_hourly_rate, share, use.units),
            )
        ]
    return []


def _oversized_dedicated(
    use: MeasuredUse,
    profiles: Sequence[ProfileOption],
    gpu_compute_slices: int,
    gpu_memory_slices: int,
    gpu_hourly_rate: Decimal | None,
) -> list[Advice]:
    busy = use.avg_utilization_pct
    # A multi-GPU replica needs whole GPUs (NVLink, one process over several devices): no MIG slice replaces it.
    if busy is None or busy >= LOW_UTILIZATION_PCT or use.quantity_per_replica != 1 or not gpu_compute_slices:
        return []
    peak = use.peak_memory_used_gb or 0.0
    busy_fraction = busy / 100
    profile = smallest_fitting(peak, profiles, busy_gpu_fraction=busy_fraction, gpu_compute_slices=gpu_compute_slices)
    if profile is None:
        return []
    compute_pct = profile.compute_slices / gpu_compute_slices * 100
    share = profile_share(profile, gpu_compute_slices, gpu_memory_slices)
    return [
        Advice(
            kind=AdviceKind.SMALLER_MIG,
            title=f"Use a MIG {profile.name} slice instead of a whole {use.gpu_model}",
            reason=(
                f"Averaged {busy:.1f} % busy (under {LOW_UTILIZATION_PCT:.0f} %) with a peak of {peak:.1f} GB. "
                f"{profile.name} is the smallest slice that holds both with {1 - MEMORY_PRESSURE_RATIO:.0%} headroom: "
                f"the peak is {peak / profile.memory_gb:.0%} of its {profile.memory_gb:g} GB (at most "
                f"{MEMORY_PRESSURE_RATIO:.0%}), and {busy:.1f} % of a GPU is {busy / compute_pct:.0%} of its "
                f"{profile.compute_slices}/{gpu_compute_slices} of the compute (at most {COMPUTE_HEADROOM_RATIO:.0%}). "
                f"It bills a GPU share of {share.quantize(Decimal('0.001'))}."
            ),
            suggested_strategy="mig",
            suggested_profile=profile.name,
            current_monthly=_monthly(gpu_hourly_rate, Decimal(1), use.units),
            suggested_monthly=_monthly(gpu_hourly_rate, share, use.units),
        )
    ]


def _shared_readings(use: MeasuredUse, profiles: Sequence[ProfileOption]) -> Advice:
    """A time-sliced tenant: its readings are the whole GPU's, so no per-tenant size or saving is claimed."""
    reason = (
        "Under time-slicing, DCGM reports the whole GPU's utilization and memory to every tenant, so these figures "
        "include your neighbours' work: they cannot size your share, and no saving is claimed from them."
    )
    if use.memory_pressure_hours > 0:
        options = "a MIG slice or a dedicated GPU" if profiles else "a dedicated GPU"
        reason += (
            f" The GPU's memory stayed above {MEMORY_PRESSURE_RATIO:.0%} for 2 minutes or more in "
            f"{use.memory_pressure_hours} hour(s); time-slicing has no memory isolation, so if your workload needs "
            f"its memory guaranteed, ask for {options}, sized from your own measurements."
        )
    return Advice(
        kind=AdviceKind.SHARED_READINGS,
        title="Readings are the whole GPU's",
        reason=reason,
        suggested_strategy="time-slicing",
        suggested_profile=None,
        current_monthly=None,
        suggested_monthly=None,
    )
