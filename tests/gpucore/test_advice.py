"""Right-sizing advice (gpucore.advice): oversized dedicated GPUs sized by memory AND compute, shares priced by the
GPU share, and time-sliced tenants told their readings are the whole GPU's."""

from __future__ import annotations

from decimal import Decimal

import pytest

from gpucore.advice import AdviceKind, MeasuredUse, ProfileOption, profile_share, right_size, smallest_fitting
from gpucore.catalog import BUILTIN_CATALOG
from gpucore.pricing import gpu_share

# The A100-40GB's recommendable partial profiles (catalog): 7 compute slices, 8 memory slices.
A100 = [
    ProfileOption("1g.5gb", 5, 1, 1),
    ProfileOption("2g.10gb", 10, 2, 2),
    ProfileOption("3g.20gb", 20, 3, 4),
    ProfileOption("4g.20gb", 20, 4, 4),
]
SLICES = {"gpu_compute_slices": 7, "gpu_memory_slices": 8}
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
    [advice] = right_size(use(), profiles=A100, gpu_hourly_rate=RATE, **SLICES)
    # 12 % busy: 2g.10gb gives 2/7 = 28.6 % of the compute, 12 / 28.6 = 42 % busy (<= 85 %); 7.5 GB of 10 GB (75 %).
    assert advice.kind is AdviceKind.SMALLER_MIG and advice.suggested_profile == "2g.10gb"
    assert advice.current_monthly == Decimal("1460.00")  # 2.00 x 730 h
    assert advice.suggested_monthly == Decimal("2.00") * 2 / 7 * 730  # share max(2/7, 2/8) = 2/7
    assert advice.monthly_saving == Decimal("1460") - Decimal("2.00") * 2 / 7 * 730
    assert advice.monthly_saving > 0


def test_a_gpu_29_percent_busy_is_not_told_to_move_to_a_seventh_of_it() -> None:
    # 29 % of a GPU needs a slice of at least 29 / 0.85 = 34 % of the compute: 3g (42.9 %), not 1g (14.3 %),
    # although 1g.5gb would hold the 4 GB peak.
    [advice] = right_size(
        use(avg_utilization_pct=29.0, peak_memory_used_gb=4.0), profiles=A100, gpu_hourly_rate=RATE, **SLICES
    )
    assert advice.suggested_profile == "3g.20gb"
    assert "68% of its 3/7 of the compute (at most 85%)" in advice.reason
    assert "20% of its 20 GB (at most 85%)" in advice.reason
    assert "15% headroom" in advice.reason
    # 3g.20gb bills max(3/7, 4/8) = 0.5 of the GPU.
    assert advice.suggested_monthly == Decimal("2.00") * Decimal("0.5") * 730


@pytest.mark.parametrize(
    ("busy", "profile"),
    [(12.0, "1g.5gb"), (12.15, "2g.10gb"), (24.2, "2g.10gb"), (24.3, "3g.20gb"), (29.9, "3g.20gb")],
)
def test_compute_headroom_boundaries(busy: float, profile: str) -> None:
    # 1g: 1/7 x 0.85 = 12.14 %; 2g: 2/7 x 0.85 = 24.29 % (a 1 GB peak fits every profile's memory).
    found = smallest_fitting(1.0, A100, busy_gpu_fraction=busy / 100, gpu_compute_slices=7)
    assert found is not None and found.name == profile


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
    assert right_size(use(**overrides), profiles=A100, gpu_hourly_rate=RATE, **SLICES) == []


def test_not_mig_capable_model_gets_no_slice_advice() -> None:
    assert right_size(use(gpu_model="T4"), profiles=[], gpu_compute_slices=7, gpu_hourly_rate=RATE) == []


def test_unpriced_model_still_advises_without_a_saving() -> None:
    [advice] = right_size(use(), profiles=A100, gpu_hourly_rate=None, **SLICES)
    assert advice.monthly_saving is None


def test_time_sliced_share_under_memory_pressure_claims_no_per_tenant_size_or_saving() -> None:
    share = use(strategy="time-slicing", time_slice_replicas=4, memory_pressure_hours=3, avg_utilization_pct=70.0)
    [advice] = right_size(share, profiles=A100, gpu_hourly_rate=RATE, **SLICES)
    assert advice.kind is AdviceKind.SHARED_READINGS
    assert advice.title == "Readings are the whole GPU's"
    assert "include your neighbours' work" in advice.reason
    assert "ask for a MIG slice or a dedicated GPU" in advice.reason
    assert advice.suggested_profile is None
    assert advice.monthly_saving is None  # no per-tenant saving claim


def test_time_sliced_share_without_mig_names_only_a_dedicated_gpu() -> None:
    share = use(gpu_model="T4", strategy="time-slicing", time_slice_replicas=4, memory_pressure_hours=1)
    [advice] = right_size(share, profiles=[], gpu_compute_slices=7, gpu_hourly_rate=Decimal("0.40"))
    assert "ask for a dedicated GPU" in advice.reason
    assert advice.monthly_saving is None


def test_time_sliced_share_without_pressure_only_gets_the_note() -> None:
    share = use(strategy="time-slicing", time_slice_replicas=4, memory_pressure_hours=0, avg_utilization_pct=5.0)
    [advice] = right_size(share, profiles=A100, gpu_hourly_rate=RATE, **SLICES)
    assert advice.kind is AdviceKind.SHARED_READINGS
    assert "memory stayed" not in advice.reason
    assert advice.monthly_saving is None


def test_mig_slice_under_pressure_moves_up_one_size() -> None:
    slice_use = use(strategy="mig", mig_profile="1g.5gb", memory_pressure_hours=2, peak_memory_used_gb=4.9)
    [advice] = right_size(slice_use, profiles=A100, gpu_hourly_rate=RATE, **SLICES)
    assert advice.kind is AdviceKind.LARGER_MIG and advice.suggested_profile == "2g.10gb"
    assert advice.current_monthly == Decimal("2.00") / 7 * 730  # 1g.5gb: max(1/7, 1/8)


@pytest.mark.parametrize("model", [m for m in BUILTIN_CATALOG.models if m.mig_capable], ids=lambda m: m.name)
def test_advice_prices_every_slice_at_the_gpu_share_bills_use(model) -> None:
    # One formula (gpucore.pricing): what advice says a slice costs is what the chargeback bills for it.
    for profile in model.recommendable_profiles():
        option = ProfileOption(profile.name, profile.memory_gb, profile.compute_slices, profile.memory_slices)
        billed = gpu_share("mig", model=model, mig_profile=profile.name)
        assert profile_share(option, model.mig_compute_slices, model.mig_memory_slices) == billed, profile.name
