"""recommend(offered=...): the framework chooses only among options a node pool serves, and says so."""

from decimal import Decimal

import pytest

from gpucore.decision import BUILTIN_CATALOG, ProfileError, WorkloadProfile, recommend

# The demo cluster: an A100-40GB MIG pool (balanced layout), an H100 dedicated pool, a T4 time-slicing pool.
DEMO = {
    ("A100-40GB", "mig", "1g.5gb"),
    ("A100-40GB", "mig", "2g.10gb"),
    ("A100-40GB", "mig", "3g.20gb"),
    ("H100-80GB", "dedicated", None),
    ("T4", "time-slicing", None),
}


def demo_offers(model: str, strategy: str, mig_profile: str | None) -> bool:
    return (model, strategy, mig_profile) in DEMO


def rec(offered=demo_offers, rates=None, **fields):
    catalog = BUILTIN_CATALOG.restricted_to(["A100-40GB", "H100-80GB", "T4"])
    return recommend(WorkloadProfile.from_mapping(fields), catalog, offered=offered, rates=rates)


def test_without_a_filter_the_cheapest_mig_slice_may_be_one_no_pool_has() -> None:
    # With H100s at 2.00/h, an H100 1g.10gb (1/7 of 2.00) undercuts an A100-40GB 2g.10gb (2/7 of 2.7447).
    cheap_h100 = {"H100-80GB": Decimal("2.00")}
    unfiltered = rec(offered=None, rates=cheap_h100, workload_type="realtime_inference", gpu_memory_gb=8)
    assert (unfiltered.gpu_model, unfiltered.mig_profile) == ("H100-80GB", "1g.10gb")


def test_the_choice_is_an_offered_option() -> None:
    chosen = rec(workload_type="realtime_inference", gpu_memory_gb=8)
    assert (chosen.gpu_model, chosen.strategy, chosen.mig_profile) == ("A100-40GB", "mig", "2g.10gb")
    for alternative in chosen.alternatives:
        if alternative.permitted:
            assert (alternative.gpu_model, alternative.strategy, alternative.mig_profile) in DEMO


def test_not_offered_alternatives_are_shown_as_not_permitted_with_the_reason() -> None:
    chosen = rec(workload_type="realtime_inference", gpu_memory_gb=8)
    dedicated_a100 = next(a for a in chosen.alternatives if a.gpu_model == "A100-40GB" and a.strategy == "dedicated")
    assert not dedicated_a100.permitted
    assert "No node pool here offers nvidia.com/gpu on A100-40GB" in dedicated_a100.reason


def test_a_named_model_falls_back_to_what_its_pools_offer_and_says_why() -> None:
    chosen = rec(workload_type="development", gpu_memory_gb=6, gpu_model="H100-80GB")
    assert chosen.strategy == "dedicated"
    assert any("No node pool offers nvidia.com/gpu on H100-80GB" in line for line in chosen.rationale)


def test_nothing_offered_is_a_cluster_error_not_a_memory_error() -> None:
    with pytest.raises(ProfileError) as excinfo:
        rec(offered=lambda *_: False, workload_type="training", gpu_memory_gb=20)
    assert "cluster" in excinfo.value.errors and "gpu_memory_gb" not in excinfo.value.errors


def test_too_big_for_every_model_is_still_a_memory_error() -> None:
    with pytest.raises(ProfileError) as excinfo:
        rec(workload_type="training", gpu_memory_gb=500)
    assert "gpu_memory_gb" in excinfo.value.errors
