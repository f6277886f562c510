"""Right-sizing advice for a request from its measured use: a smaller MIG slice, or more isolation. Pure.

Rules (issue #6 item 5): a dedicated GPU averaging under 30 % whose peak memory fits a MIG profile of its model is
better served by the smallest such profile, which is cheaper by (1 - n/7) of the GPU (n/4 on A30, gpucore.pricing);
a time-sliced share hitting memory pressure (guide 3.3: above 85 % for 2 minutes) has no memory isolation and should
move to a MIG slice whose memory holds its peak, or to a dedicated GPU. A profile "fits" when the peak stays at or
under 85 % of its memory, so the move does not itself raise the memory-pressure alert. Advice needs a day of
complete hours: a few hours of data say little about a workload.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from decimal import Decimal
from enum import StrEnum

from gpucore.alerts import MEMORY_PRESSURE_RATIO
from gpucore.pricing import HOURS_PER_MONTH

LOW_UTILIZATION_PCT = 30.0  # issue #6: a dedicated GPU averaging under 30 % is oversized
MIN_OBSERVED_HOURS = 24


class AdviceKind(StrEnum):
    SMALLER_MIG = "smaller_mig"
    ISOLATE_MIG = "isolate_mig"
    ISOLATE_DEDICATED = "isolate_dedicated"
    LARGER_MIG = "larger_mig"


@dataclass(frozen=True, slots=True)
class ProfileOption:
    """A MIG profile of the request's GPU model: its name, memory (GB as NVIDIA names it) and compute slices."""

    name: str
    memory_gb: float
    compute_slices: int


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
    avg_utilization_pct: float | None = None
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
        """Current minus suggested monthly cost (negative: the change costs more); None when unpriced."""
        if self.current_monthly is None or self.suggested_monthly is None:
            return None
        return self.current_monthly - self.suggested_monthly


def fits(peak_memory_gb: float, profile: ProfileOption) -> bool:
    """True when the peak stays at or under 85 % of the profile's memory."""
    return peak_memory_gb <= profile.memory_gb * MEMORY_PRESSURE_RATIO


def smallest_fitting(peak_memory_gb: float, profiles: Sequence[ProfileOption]) -> ProfileOption | None:
    """The smallest profile (by memory, then compute) whose memory holds the peak with headroom, if any."""
    for profile in sorted(profiles, key=lambda p: (p.memory_gb, p.compute_slices)):
        if fits(peak_memory_gb, profile):
            return profile
    return None


def _monthly(rate: Decimal | None, share: Decimal, units: int) -> Decimal | None:
    if rate is None:
        return None
    return rate * share * HOURS_PER_MONTH * Decimal(units)


def _current_share(use: MeasuredUse, gpu_slices: int) -> Decimal:
    if use.strategy == "mig" and use.mig_profile:
        return Decimal(int(use.mig_profile.split("g.", 1)[0])) / Decimal(gpu_slices)
    if use.strategy == "time-slicing" and use.time_slice_replicas:
        return Decimal(1) / Decimal(use.time_slice_replicas)
    return Decimal(1)


def right_size(
    use: MeasuredUse,
    *,
    profiles: Sequence[ProfileOption],
    gpu_compute_slices: int,
    gpu_hourly_rate: Decimal | None,
) -> list[Advice]:
    """Suggestions for one request (empty when it is well sized or too little was measured).

    ``profiles`` are the recommendable partial-GPU MIG profiles of its model (none: not MIG-capable);
    ``gpu_hourly_rate`` is the price of one whole GPU-hour (None: saving unknown).
    """
    if use.observed_hours < MIN_OBSERVED_HOURS or use.peak_memory_used_gb is None:
        return []
    current = _monthly(gpu_hourly_rate, _current_share(use, gpu_compute_slices), use.units)
    peak = use.peak_memory_used_gb
    advice: list[Advice] = []
    if use.strategy == "dedicated":
        low = use.avg_utilization_pct is not None and use.avg_utilization_pct < LOW_UTILIZATION_PCT
        # A multi-GPU replica needs whole GPUs (NVLink, one process over several devices): no MIG slice replaces it.
        profile = smallest_fitting(peak, profiles) if low and use.quantity_per_replica == 1 else None
        if profile is not None:
            share = Decimal(profile.compute_slices) / Decimal(gpu_compute_slices)
            advice.append(
                Advice(
                    kind=AdviceKind.SMALLER_MIG,
                    title=f"Use a MIG {profile.name} slice instead of a whole {use.gpu_model}",
                    reason=(
                        f"Averaged {use.avg_utilization_pct:.1f} % utilization (under {LOW_UTILIZATION_PCT:.0f} %) "
                        f"with a peak of {peak:.1f} GB, which fits {profile.name} "
                        f"({profile.memory_gb:g} GB) with headroom."
                    ),
                    suggested_strategy="mig",
                    suggested_profile=profile.name,
                    current_monthly=current,
                    suggested_monthly=_monthly(gpu_hourly_rate, share, use.units),
                )
            )
    elif use.strategy == "time-slicing" and use.memory_pressure_hours > 0:
        profile = smallest_fitting(peak, profiles)
        why = (
            f"Memory stayed above {MEMORY_PRESSURE_RATIO:.0%} for 2 minutes or more in {use.memory_pressure_hours} "
            f"hour(s); time-sliced shares have no memory isolation, so one tenant can push out the others."
        )
        if profile is not None:
            share = Decimal(profile.compute_slices) / Decimal(gpu_compute_slices)
            advice.append(
                Advice(
                    kind=AdviceKind.ISOLATE_MIG,
                    title=f"Move to a MIG {profile.name} slice",
                    reason=f"{why} A {profile.name} slice ({profile.memory_gb:g} GB) holds the {peak:.1f} GB peak.",
                    suggested_strategy="mig",
                    suggested_profile=profile.name,
                    current_monthly=current,
                    suggested_monthly=_monthly(gpu_hourly_rate, share, use.units),
                )
            )
        else:
            advice.append(
                Advice(
                    kind=AdviceKind.ISOLATE_DEDICATED,
                    title=f"Move to a dedicated {use.gpu_model}",
                    reason=f"{why} No MIG profile of this model holds the {peak:.1f} GB peak with headroom.",
                    suggested_strategy="dedicated",
                    suggested_profile=None,
                    current_monthly=current,
                    suggested_monthly=_monthly(gpu_hourly_rate, Decimal(1), use.units),
                )
            )
    elif use.strategy == "mig" and use.memory_pressure_hours > 0 and use.mig_profile:
        size = next((p for p in profiles if p.name == use.mig_profile), None)
        larger = [p for p in profiles if size is None or p.memory_gb > size.memory_gb]
        bigger = min(larger, key=lambda p: (p.memory_gb, p.compute_slices), default=None)
        share = Decimal(bigger.compute_slices) / Decimal(gpu_compute_slices) if bigger else Decimal(1)
        advice.append(
            Advice(
                kind=AdviceKind.LARGER_MIG if bigger else AdviceKind.ISOLATE_DEDICATED,
                title=f"Move to a MIG {bigger.name} slice" if bigger else f"Move to a dedicated {use.gpu_model}",
                reason=(
                    f"The {use.mig_profile} slice's memory stayed above {MEMORY_PRESSURE_RATIO:.0%} for 2 minutes "
                    f"or more in {use.memory_pressure_hours} hour(s)."
                ),
                suggested_strategy="mig" if bigger else "dedicated",
                suggested_profile=bigger.name if bigger else None,
                current_monthly=current,
                suggested_monthly=_monthly(gpu_hourly_rate, share, use.units),
            )
        )
    return advice
