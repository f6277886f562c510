"""Invariants of recommend() over generated profiles, price books and time-slicing pools (hypothesis)."""

import json
from decimal import Decimal

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gpucore.decision import BUILTIN_CATALOG, DEFAULT_TIERS_BY_SLUG, ProfileError, WorkloadProfile, recommend
from gpucore.decision.throughput import work_tflops
from gpucore.usable_memory import usable_gib
from gpucore.vocabulary import IsolationFloor, Strategy, WorkloadType

D, M, TS = Strategy.DEDICATED, Strategy.MIG, Strategy.TIME_SLICING
MODELS = BUILTIN_CATALOG.names()

profiles = st.builds(
    WorkloadProfile,
    workload_type=st.sampled_from(list(WorkloadType)),
    # Dense around the interesting boundaries (5, 6, 10, 12, 18, 20, 35, 40, 71, 80, 141 GB) and beyond one GPU.
    gpu_memory_gb=st.one_of(
        st.decimals(min_value=Decimal("0.01"), max_value=Decimal(300), places=2),
        st.sampled_from([5, 6, 8, 10, 12, 16, 18, 20, 24, 32, 35, 40, 71, 80, 141]).flatmap(
            lambda b: st.sampled_from([Decimal(b) - Decimal("0.01"), Decimal(b), Decimal(b) + Decimal("0.01")])
        ),
    ),
    gpu_count=st.integers(min_value=1, max_value=8),
    replicas=st.integers(min_value=1, max_value=5),
    latency_sensitive=st.sampled_from([None, True, False]),
    latency_p99_ms=st.sampled_from([None, 1, 5, 10, Decimal("10.01"), Decimal("49.99"), 50, 200]),
    isolation_required=st.booleans(),
    expected_utilization_pct=st.one_of(st.none(), st.decimals(min_value=0, max_value=100, places=1)),
    sla_tier=st.sampled_from([None, *DEFAULT_TIERS_BY_SLUG]),
    gpu_model=st.sampled_from([None, *MODELS]),
)
rates = st.one_of(
    st.none(),
    st.dictionaries(st.sampled_from(MODELS), st.decimals(min_value=0, max_value=20, places=4), max_size=len(MODELS)),
)
pools = st.one_of(
    st.none(), st.dictionaries(st.sampled_from(MODELS), st.integers(min_value=2, max_value=16), max_size=len(MODELS))
)


def fits(item, profile):
    """Whether an allocation holds the memory the profile asks for, by the rules of the guide (Part 2.2), within 85 %
    of the usable memory (the memory-pressure line)."""
    model = BUILTIN_CATALOG.get(item.gpu_model)
    memory, n = profile.gpu_memory_gb, item.quantity
    if item.strategy is D:
        return memory <= _holds(model) * n
    if item.strategy is M:
        return _holds(model, model.profile(item.mig_profile)) * n >= memory
    return memory * item.time_slice_replicas <= _holds(model) * n


def _holds(model, mig=None):
    return usable_gib(model, mig) * Decimal("0.85")


def forbidden(strategy, profile):
    tier = DEFAULT_TIERS_BY_SLUG.get(profile.sla_tier) if profile.sla_tier else None
    if strategy is D:
        return False
    if profile.gpu_count > 1:
        return True
    if tier is not None and tier.isolation_floor is IsolationFloor.DEDICATED:
        return True
    p99 = profile.latency_p99_ms
    if p99 is not None and p99 <= 10:  # at or below tier 1's 10 ms: no sharing
        return True
    return strategy is TS and (
        profile.isolation_required
        or (tier is not None and tier.isolation_floor is IsolationFloor.HARDWARE)
        or (p99 is not None and p99 < 50)  # below time-slicing's 50 ms of jitter
    )


def run(profile, price_book, pool):
    """The recommendation, or None where a refusal is due: tier-1 serving with one replica (99.99 % needs two; a
    Job is one run whatever its tier), memory no single GPU (named, or any) can hold."""
    serving = profile.workload_type == "realtime_inference"
    if serving and profile.sla_tier == "tier1_realtime" and profile.replicas < 2:
        with pytest.raises(ProfileError) as caught:
            recommend(profile, BUILTIN_CATALOG, rates=price_book, time_slice_replicas=pool)
        assert list(caught.value.errors) == ["replicas"]
        return None
    candidates = [BUILTIN_CATALOG.get(profile.gpu_model)] if profile.gpu_model else list(BUILTIN_CATALOG)
    if all(profile.gpu_memory_gb > _holds(m) * profile.gpu_count for m in candidates):
        with pytest.raises(ProfileError) as caught:
            recommend(profile, BUILTIN_CATALOG, rates=price_book, time_slice_replicas=pool)
        assert list(caught.value.errors) == ["gpu_memory_gb"]
        return None
    return recommend(profile, BUILTIN_CATALOG, rates=price_book, time_slice_replicas=pool)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(profile=profiles, price_book=rates, pool=pools)
def test_invariants(profile, price_book, pool):
    result = run(profile, price_book, pool)
    if result is None:
        return

    # It always fits the memory asked for, and honours a named model.
    assert fits(result, profile)
    if profile.gpu_model:
        assert result.gpu_model == profile.gpu_model

    # Policy: never a forbidden strategy; never time-slicing with isolation or a tier that forbids it.
    assert not forbidden(result.strategy, profile)
    if profile.isolation_required or profile.sla_tier in ("tier1_realtime", "tier2_batch"):
        assert result.strategy is not TS
    if profile.sla_tier == "tier1_realtime":
        assert result.strategy is D

    # Never a shared strategy for more than one GPU per replica.
    if profile.gpu_count > 1:
        assert (result.strategy, result.quantity) == (D, profile.gpu_count)
    else:
        assert result.quantity == 1

    # The tree: training, HPC and big latency-sensitive work are dedicated.
    if profile.workload_type in (WorkloadType.TRAINING, WorkloadType.HPC_SIMULATION):
        assert result.strategy is D
    if profile.latency_sensitive and profile.gpu_memory_gb > 10:
        assert result.strategy is D
    assert result.topology_aware is (profile.workload_type is WorkloadType.HPC_SIMULATION)

    # MIG: the smallest recommendable profile that holds the memory.
    if result.strategy is M:
        model = BUILTIN_CATALOG.get(result.gpu_model)
        fitting = [p for p in model.recommendable_profiles() if _holds(model, p) >= profile.gpu_memory_gb]
        assert result.mig_profile == fitting[0].name

    # Cost never exceeds the same profile on dedicated GPUs of the same model; the saving is never negative.
    assert result.saving_vs_dedicated_pct >= 0
    dedicated = [a for a in result.alternatives if (a.gpu_model, a.strategy) == (result.gpu_model, D)]
    if result.strategy is D:
        assert result.saving_vs_dedicated_pct == 0
        assert not dedicated
    else:
        assert len(dedicated) == 1
        if result.estimated_monthly_cost is not None:
            assert result.estimated_monthly_cost <= dedicated[0].estimated_monthly_cost

    # Alternatives fit too, are not the recommendation, and are marked not permitted exactly when policy forbids.
    seen = set()
    for alternative in result.alternatives:
        key = (alternative.gpu_model, alternative.strategy)
        assert key != (result.gpu_model, result.strategy)
        assert key not in seen
        seen.add(key)
        assert fits(alternative, profile)
        assert alternative.permitted is not forbidden(alternative.strategy, profile)
        assert (alternative.reason is None) is alternative.permitted
        assert alternative.tradeoffs
    permitted = [a.permitted for a in result.alternatives]
    assert permitted == sorted(permitted, reverse=True)

    # With no model named, no permitted alternative of the same strategy is cheaper: per month, or for training and
    # HPC per unit of work (monthly cost / the model's throughput).
    if not profile.gpu_model and result.estimated_monthly_cost is not None:
        per_work = profile.workload_type in (WorkloadType.TRAINING, WorkloadType.HPC_SIMULATION)
        for alternative in result.alternatives:
            if alternative.strategy is result.strategy and alternative.estimated_monthly_cost is not None:
                if per_work:
                    chosen, other = (
                        work_tflops(BUILTIN_CATALOG.get(name), profile.workload_type)
                        for name in (result.gpu_model, alternative.gpu_model)
                    )
                    if chosen and other:
                        assert alternative.estimated_monthly_cost / other >= result.estimated_monthly_cost / chosen
                else:
                    assert alternative.estimated_monthly_cost >= result.estimated_monthly_cost

    json.dumps(result.to_dict())


@settings(max_examples=200, deadline=None)
@given(profile=profiles)
def test_profile_round_trips_through_json(profile):
    assert WorkloadProfile.from_mapping(json.loads(json.dumps(profile.to_dict()))) == profile


@pytest.mark.parametrize("memory", [Decimal("0.01"), Decimal(10), Decimal("119.34")])
def test_every_workload_type_gets_an_answer_on_every_model_that_can_hold_it(memory):
    for model in BUILTIN_CATALOG:
        if memory > _holds(model):
            continue
        for workload_type in WorkloadType:
            result = recommend(WorkloadProfile(workload_type, memory, gpu_model=model.name), BUILTIN_CATALOG)
            assert result.gpu_model == model.name
