"""recommend(): the decision tree (Part 4.6), the matrix (Part 4.1) and the SLA-tier floors (Part 4.3).

Expected values come from the guide (Part 4 of shared/domain/000_*.txt), NVIDIA's MIG profile tables and hand
arithmetic, not from the code under test.
"""

import pytest

from gpucore.decision import DEFAULT_TIERS_BY_SLUG, SlaTierSpec
from gpucore.vocabulary import IsolationFloor
from tests.gpucore.decision.cases import TS, D, M, rec, refusal, text

# --- the decision tree (Part 4.6) and matrix (Part 4.1), on one named model ------------------------------------

TREE = [
    # id, profile fields, strategy, mig profile, time-slice replicas
    ("training", {"workload_type": "training", "gpu_memory_gb": 8}, D, None, None),
    ("training small", {"workload_type": "training", "gpu_memory_gb": 1}, D, None, None),
    ("hpc", {"workload_type": "hpc_simulation", "gpu_memory_gb": 8}, D, None, None),
    (
        "realtime default latency-sensitive",
        {"workload_type": "realtime_inference", "gpu_memory_gb": 8},
        M,
        "2g.10gb",
        None,
    ),
    (
        "latency-sensitive exactly 10 GiB is MIG (3g.20gb: 2g.10gb offers 9.75 GiB)",
        {"workload_type": "realtime_inference", "gpu_memory_gb": 10},
        M,
        "3g.20gb",
        None,
    ),
    (
        "latency-sensitive 10.01 GB is dedicated",
        {"workload_type": "realtime_inference", "gpu_memory_gb": "10.01"},
        D,
        None,
        None,
    ),
    (
        "realtime not latency-sensitive: MIG or dedicated",
        {"workload_type": "realtime_inference", "gpu_memory_gb": 12, "latency_sensitive": False},
        M,
        "3g.20gb",
        None,
    ),
    (
        "realtime not latency-sensitive, only the full profile fits",
        {"workload_type": "realtime_inference", "gpu_memory_gb": 25, "latency_sensitive": False},
        D,
        None,
        None,
    ),
    ("batch", {"workload_type": "batch_inference", "gpu_memory_gb": 8}, TS, None, 4),
    # A100-40GB offers 39.5 GiB; a fair share holds 85 % of 39.5 / tenants: 8.39375 GiB with 4 tenants.
    ("batch at the fair share", {"workload_type": "batch_inference", "gpu_memory_gb": "8.39375"}, TS, None, 4),
    (
        "batch over the 4-way fair share: 3 tenants per GPU (39.5 x 0.85 / 3 = 11.19 GiB) before falling back",
        {"workload_type": "batch_inference", "gpu_memory_gb": "10.01"},
        TS,
        None,
        3,
    ),
    (
        "batch over the 2-way fair share and every partial MIG profile: dedicated",
        {"workload_type": "batch_inference", "gpu_memory_gb": "20.01"},
        D,
        None,
        None,
    ),
    ("batch too big for any partial profile", {"workload_type": "batch_inference", "gpu_memory_gb": 30}, D, None, None),
    (
        "batch latency-sensitive small",
        {"workload_type": "batch_inference", "gpu_memory_gb": 4, "latency_sensitive": True},
        M,
        "1g.5gb",
        None,
    ),
    (
        "batch latency-sensitive large",
        {"workload_type": "batch_inference", "gpu_memory_gb": 12, "latency_sensitive": True},
        D,
        None,
        None,
    ),
    ("development", {"workload_type": "development", "gpu_memory_gb": 2}, TS, None, 4),
    (
        "development latency-sensitive",
        {"workload_type": "development", "gpu_memory_gb": 6, "latency_sensitive": True},
        M,
        "2g.10gb",
        None,
    ),
    (
        "development isolated",
        {"workload_type": "development", "gpu_memory_gb": 2, "isolation_required": True},
        M,
        "1g.5gb",
        None,
    ),
    (
        "development isolated too big for MIG",
        {"workload_type": "development", "gpu_memory_gb": 21, "isolation_required": True},
        D,
        None,
        None,
    ),
    (
        "batch isolated",
        {"workload_type": "batch_inference", "gpu_memory_gb": 15, "isolation_required": True},
        M,
        "3g.20gb",
        None,
    ),
    (
        "two GPUs per replica: dedicated",
        {"workload_type": "batch_inference", "gpu_memory_gb": 2, "gpu_count": 2},
        D,
        None,
        None,
    ),
    (
        "two GPUs per replica, latency-sensitive",
        {"workload_type": "realtime_inference", "gpu_memory_gb": 4, "gpu_count": 2},
        D,
        None,
        None,
    ),
]


@pytest.mark.parametrize(
    ("fields", "strategy", "mig_profile", "ts_replicas"), [t[1:] for t in TREE], ids=[t[0] for t in TREE]
)
def test_decision_tree_on_a100_40gb(fields, strategy, mig_profile, ts_replicas):
    result = rec(gpu_model="A100-40GB", **fields)
    assert (result.strategy, result.mig_profile, result.time_slice_replicas) == (strategy, mig_profile, ts_replicas)
    assert result.gpu_model == "A100-40GB"
    assert result.quantity == fields.get("gpu_count", 1)
    expected_resource = f"nvidia.com/mig-{mig_profile}" if mig_profile else "nvidia.com/gpu"
    assert result.resource_name == expected_resource
    assert result.node_selector == {"nvidia.com/gpu.product": "NVIDIA-A100-SXM4-40GB"}


@pytest.mark.parametrize(
    ("strategy", "overhead", "utilization", "isolation"),
    [(D, (0, 0), (80, 95), "full"), (M, (0, 5), (60, 80), "hardware"), (TS, (15, 30), (60, 80), "none")],
)
def test_strategy_characteristics(strategy, overhead, utilization, isolation):
    fields = {
        D: {"workload_type": "training", "gpu_memory_gb": 8},
        M: {"workload_type": "realtime_inference", "gpu_memory_gb": 8},
        TS: {"workload_type": "development", "gpu_memory_gb": 8},
    }[strategy]
    result = rec(gpu_model="A100-40GB", **fields)
    assert result.strategy is strategy
    assert result.expected_overhead_pct == overhead
    assert result.utilization_target_pct == utilization
    assert result.isolation == isolation


def test_hpc_is_topology_aware_and_says_so():
    result = rec(workload_type="hpc_simulation", gpu_memory_gb=8)
    assert result.topology_aware is True
    assert "NUMA" in text(result)
    for other in ("training", "batch_inference", "realtime_inference", "development"):
        assert rec(workload_type=other, gpu_memory_gb=8).topology_aware is False


def test_rationale_follows_the_rules_in_order():
    result = rec(
        workload_type="batch_inference",
        gpu_memory_gb=12,
        isolation_required=True,
        sla_tier="tier2_batch",
        gpu_model="A100-40GB",
        expected_utilization_pct=30,
    )
    steps = result.rationale
    assert steps[0].startswith("Batch inference, not latency-sensitive: a time-sliced share")
    assert steps[1].startswith("Isolation required: time-slicing is ruled out")
    assert steps[2].startswith("SLA tier Tier 2 - batch")
    assert "the choice meets it" in steps[2]
    assert steps[3].startswith("GPU model A100-40GB")
    assert steps[4].startswith("MIG profile 3g.20gb on A100-40GB")
    assert steps[5].startswith(
        "Estimated cost: 2.7447 USD/GPU-hour (catalog list price, AWS us-east-1 on-demand per GPU) x GPU share 0.5 "
        "(3g.20gb holds 3/7 of the compute and 4/8 of the memory; the larger counts)"
    )
    assert steps[6].startswith("Expected utilization 30% is below the 60-80% target")
    assert len(steps) == 7


def test_latency_boundary_is_in_the_rationale():
    assert "Latency-sensitive and 10 GiB, at most 10 GiB" in text(
        rec(workload_type="realtime_inference", gpu_memory_gb=10)
    )
    assert "Latency-sensitive and 10.01 GiB, more than 10 GiB" in text(
        rec(workload_type="realtime_inference", gpu_memory_gb="10.01")
    )


def test_only_full_profile_fits_says_dedicated_instead():
    result = rec(workload_type="realtime_inference", gpu_memory_gb=25, latency_sensitive=False, gpu_model="A100-40GB")
    assert "only the full-GPU profile 7g.40gb would" in text(result)


def test_time_slicing_fallback_says_why():
    result = rec(workload_type="batch_inference", gpu_memory_gb=21, gpu_model="A100-40GB")
    assert (
        "Time-slicing does not fit on A100-40GB: 21 GiB needs 24.71 GiB with headroom, more than a fair share with "
        "even 2 tenants per GPU (39.5 GiB / 2 = 19.75 GiB)" in text(result)
    )


# --- SLA tiers (Part 4.3) ---------------------------------------------------------------------------------------

TIERS = [
    ("tier1 development", "tier1_realtime", {"workload_type": "development", "gpu_memory_gb": 5}, D, None, None),
    (
        "tier1 small real-time",
        "tier1_realtime",
        {"workload_type": "realtime_inference", "gpu_memory_gb": 5},
        D,
        None,
        None,
    ),
    ("tier1 batch", "tier1_realtime", {"workload_type": "batch_inference", "gpu_memory_gb": 5}, D, None, None),
    ("tier2 batch", "tier2_batch", {"workload_type": "batch_inference", "gpu_memory_gb": 4}, M, "1g.5gb", None),
    (
        "tier2 batch 8 GiB (mig_2g.10gb)",
        "tier2_batch",
        {"workload_type": "batch_inference", "gpu_memory_gb": 8},
        M,
        "2g.10gb",
        None,
    ),
    (
        "tier2 batch too big for MIG",
        "tier2_batch",
        {"workload_type": "batch_inference", "gpu_memory_gb": 25},
        D,
        None,
        None,
    ),
    ("tier2 development", "tier2_batch", {"workload_type": "development", "gpu_memory_gb": 4}, M, "1g.5gb", None),
    ("tier2 real-time", "tier2_batch", {"workload_type": "realtime_inference", "gpu_memory_gb": 4}, M, "1g.5gb", None),
    ("tier2 training", "tier2_batch", {"workload_type": "training", "gpu_memory_gb": 5}, D, None, None),
    ("tier3 development, 4x", "tier3_development", {"workload_type": "development", "gpu_memory_gb": 5}, TS, None, 4),
    (
        "tier3 real-time",
        "tier3_development",
        {"workload_type": "realtime_inference", "gpu_memory_gb": 4},
        M,
        "1g.5gb",
        None,
    ),
    ("tier3 training", "tier3_development", {"workload_type": "training", "gpu_memory_gb": 5}, D, None, None),
]


@pytest.mark.parametrize(
    ("tier", "fields", "strategy", "mig_profile", "ts_replicas"), [t[1:] for t in TIERS], ids=[t[0] for t in TIERS]
)
def test_sla_tier_is_a_floor_on_isolation(tier, fields, strategy, mig_profile, ts_replicas):
    # Tier 1 promises 99.99 % availability, which needs two replicas.
    replicas = 2 if tier == "tier1_realtime" else 1
    result = rec(gpu_model="A100-40GB", sla_tier=tier, replicas=replicas, **fields)
    assert (result.strategy, result.mig_profile, result.time_slice_replicas) == (strategy, mig_profile, ts_replicas)
    assert f"SLA tier {DEFAULT_TIERS_BY_SLUG[tier].name}" in text(result)
    assert tier not in text(result)  # the tier by its name, never its slug


def test_tier1_says_what_it_rules_out():
    result = rec(
        workload_type="batch_inference", gpu_memory_gb=5, sla_tier="tier1_realtime", replicas=2, gpu_model="A100-40GB"
    )
    assert "so MIG and time-slicing are ruled out" in text(result)


def test_time_slice_replicas_come_from_pool_then_tier_then_default():
    fields = {"workload_type": "development", "gpu_memory_gb": 4, "gpu_model": "A100-40GB"}
    assert rec(**fields).time_slice_replicas == 4
    assert rec(options={"default_time_slice_replicas": 2}, **fields).time_slice_replicas == 2
    tier = SlaTierSpec("lab", "Lab", IsolationFloor.NONE, "lab", 1, default_time_slice_replicas=3)
    assert rec(options={"tiers": {"lab": tier}}, sla_tier="lab", **fields).time_slice_replicas == 3
    pool = {"time_slice_replicas": {"A100-40GB": 8}}
    result = rec(options=pool, sla_tier="tier3_development", **fields)
    assert result.time_slice_replicas == 8
    assert (
        "with 8 tenants per GPU (the pool's setting): each can count on 4.94 GiB; 4 GiB needs 4.71 GiB with headroom"
        in text(result)
    )
    # 39.5 GiB / 8 tenants x 0.85 = 4.197 GiB: 4.2 GiB no longer fits the only pool, so MIG (1g.5gb holds 4.04 GiB
    # with headroom: too small; 2g.10gb).
    over = rec(options=pool, **{**fields, "gpu_memory_gb": "4.2"})
    assert (over.strategy, over.mig_profile) == (M, "2g.10gb")
    # Without a pool the default of 4 is lowered until a share holds the replica: 39.5 x 0.85 / 3 = 11.19 >= 11.
    lowered = rec(**{**fields, "gpu_memory_gb": 11})
    assert (lowered.strategy, lowered.time_slice_replicas) == (TS, 3)
    assert "the portal default of 4 lowered so that a share holds the replica" in text(lowered)


def test_pool_mapping_accepts_aliases():
    result = rec(
        options={"time_slice_replicas": {"a100": 2}}, workload_type="development", gpu_memory_gb=16, gpu_model="A100"
    )
    assert (result.strategy, result.time_slice_replicas, result.gpu_model) == (TS, 2, "A100-40GB")


@pytest.mark.parametrize("bad", [1, 0, -4, True, "4"])
def test_invalid_pool_replicas_are_refused(bad):
    with pytest.raises(ValueError, match="time-slicing replicas"):
        rec(options={"time_slice_replicas": {"T4": bad}}, workload_type="development", gpu_memory_gb=1)


def test_invalid_default_time_slice_replicas_is_refused():
    with pytest.raises(ValueError, match="at least 2"):
        rec(options={"default_time_slice_replicas": 1}, workload_type="development", gpu_memory_gb=1)


def test_unknown_tier_and_model_are_reported_together():
    errors = refusal(workload_type="training", gpu_memory_gb=8, sla_tier="gold", gpu_model="B200")
    assert errors["sla_tier"] == [
        "Unknown SLA tier 'gold'. Known tiers: tier1_realtime, tier2_batch, tier3_development."
    ]
    assert errors["gpu_model"][0].startswith("Unknown GPU model 'B200'. Known models: A100-40GB, A100-80GB, H100-80GB")
    assert set(errors) == {"sla_tier", "gpu_model"}


def test_tier_is_checked_against_the_tiers_passed_in():
    custom = {"gold": DEFAULT_TIERS_BY_SLUG["tier1_realtime"]}
    errors = refusal(options={"tiers": custom}, workload_type="training", gpu_memory_gb=8, sla_tier="tier2_batch")
    assert errors == {"sla_tier": ["Unknown SLA tier 'tier2_batch'. Known tiers: gold."]}
