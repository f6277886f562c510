"""Right-sizing advice (gpucore.advice): oversized dedicated GPUs, and time-sliced shares under memory pressure."""

from __future__ import annotations

from decimal import Decimal

import pytest

from gpucore.advice import AdviceKind, MeasuredUse, ProfileOption, right_size, smallest_fitting

# The A100-40GB's recommendable partial profiles (catalog), 7 compute slices.
A100 = [
    ProfileOption("1g.5gb", 5, 1),
    ProfileOption("2g.10gb", 10, 2),
    ProfileOption("3g.20gb", 20, 3),
    ProfileOption("4g.20gb", 20, 4),
]
RATE = Decimal("2.00")


def use(**overrides: object) -> MeasuredUse:
    values: dict[str, object] = {
        "strategy": "dedicated",
        "gpu_model": "A100-40GB",
        "units": 1,
        "observed_hours": 48,
        "avg_utilization_pct": 12.0,
        "peak_memory_used_gb": 7.5,
    }
    values.update(overrides)
    return MeasuredUse(**values)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("peak", "profile"),
    [(4.25, "1g.5gb"), (4.26, "2g.10gb"), (8.5, "2g.10gb"), (17.0, "3g.20gb"), (17.1, None)],
)
def test_smallest_profile_holding_the_peak_under_85_percent(peak: float, profile: str | None) -> None:
    found = smallest_fitting(peak, A100)
    assert (found.name if found else None) == profile


def test_oversized_dedicated_gpu_gets_the_smallest_fitting_slice_with_the_saving() -> None:
    [advice] = right_size(use(), profiles=A100, gpu_compute_slices=7, gpu_hourly_rate=RATE)
    assert advice.kind is AdviceKind.SMALLER_MIG and advice.suggested_profile == "2g.10gb"
    assert advice.current_monthly == Decimal("1460.00")  # 2.00 x 730 h
    assert advice.suggested_monthly == Decimal("2.00") * 2 / 7 * 730
    assert advice.monthly_saving == Decimal("1460") - Decimal("2.00") * 2 / 7 * 730
    assert advice.monthly_saving > 0


@pytest.mark.parametrize(
    "overrides",
    [
        {"avg_utilization_pct": 30.0},  # not under 30 %
        {"avg_utilization_pct": None},
        {"peak_memory_used_gb": 30.0},  # fits no partial profile
        {"observed_hours": 23},  # too little measured
        {"quantity_per_replica": 2, "units": 2},  # a multi-GPU replica keeps whole GPUs
    ],
)
def test_no_mig_advice_when_a_rule_is_not_met(overrides: dict) -> None:
    assert right_size(use(**overrides), profiles=A100, gpu_compute_slices=7, gpu_hourly_rate=RATE) == []


def test_not_mig_capable_model_gets_no_slice_advice() -> None:
    assert right_size(use(gpu_model="T4"), profiles=[], gpu_compute_slices=7, gpu_hourly_rate=RATE) == []


def test_unpriced_model_still_advises_without_a_saving() -> None:
    [advice] = right_size(use(), profiles=A100, gpu_compute_slices=7, gpu_hourly_rate=None)
    assert advice.monthly_saving is None


def test_time_sliced_share_under_memory_pressure_moves_to_mig() -> None:
    share = use(strategy="time-slicing", time_slice_replicas=4, memory_pressure_hours=3, avg_utilization_pct=70.0)
    [advice] = right_size(share, profiles=A100, gpu_compute_slices=7, gpu_hourly_rate=RATE)
    assert advice.kind is AdviceKind.ISOLATE_MIG and advice.suggested_profile == "2g.10gb"
    assert advice.current_monthly == Decimal("2.00") / 4 * 730
    assert advice.monthly_saving < 0  # isolation costs more than a quarter of a GPU


def test_time_sliced_share_without_a_fitting_profile_moves_to_dedicated() -> None:
    share = use(gpu_model="T4", strategy="time-slicing", time_slice_replicas=4, memory_pressure_hours=1)
    [advice] = right_size(share, profiles=[], gpu_compute_slices=7, gpu_hourly_rate=Decimal("0.40"))
    assert advice.kind is AdviceKind.ISOLATE_DEDICATED and advice.suggested_strategy == "dedicated"
    assert advice.suggested_monthly == Decimal("0.40") * 730


def test_time_sliced_share_without_pressure_gets_no_advice() -> None:
    share = use(strategy="time-slicing", time_slice_replicas=4, memory_pressure_hours=0)
    assert right_size(share, profiles=A100, gpu_compute_slices=7, gpu_hourly_rate=RATE) == []


def test_mig_slice_under_pressure_moves_up_one_size() -> None:
    slice_use = use(strategy="mig", mig_profile="1g.5gb", memory_pressure_hours=2, peak_memory_used_gb=4.9)
    [advice] = right_size(slice_use, profiles=A100, gpu_compute_slices=7, gpu_hourly_rate=RATE)
    assert advice.kind is AdviceKind.LARGER_MIG and advice.suggested_profile == "2g.10gb"
