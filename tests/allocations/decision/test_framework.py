"""recommend(): the decision tree, SLA floors, MIG sizing per model, fallbacks, cost arithmetic and the JSON contract.

Expected values come from the guide (Part 4 of shared/domain/000_*.txt), NVIDIA's MIG profile tables and hand
arithmetic, not from the code under test.
"""

import json
from decimal import Decimal

import pytest

from allocations.decision import (
    BUILTIN_CATALOG,
    DEFAULT_TIERS_BY_SLUG,
    Catalog,
    IsolationFloor,
    ProfileError,
    SlaTierSpec,
    Strategy,
    WorkloadProfile,
    recommend,
)

D, M, TS = Strategy.DEDICATED, Strategy.MIG, Strategy.TIME_SLICING
CONTRACT_KEYS = {
    "strategy",
    "resource_name",
    "quantity",
    "replicas",
    "gpu_model",
    "mig_profile",
    "time_slice_replicas",
    "node_selector",
    "expected_overhead_pct",
    "utilization_target_pct",
    "estimated_monthly_cost",
    "saving_vs_dedicated_pct",
    "rationale",
    "alternatives",
}
# Default TCO inputs of billing.pricing.TcoInputs, written out here: 36 months, PUE 1.4, 0.10/kWh, 25 %/year ops.
HOURS_36_MONTHS = Decimal(36 * 730)


def tco(purchase, watts):
    return (
        Decimal(purchase) / HOURS_36_MONTHS
        + Decimal(watts) / 1000 * Decimal("1.4") * Decimal("0.10")
        + Decimal(purchase) * Decimal("0.25") / Decimal(8760)
    )


def rec(*, catalog=BUILTIN_CATALOG, options=None, **fields):
    return recommend(WorkloadProfile.from_mapping(fields), catalog, **(options or {}))


def refusal(*, options=None, **fields):
    with pytest.raises(ProfileError) as caught:
        rec(options=options, **fields)
    return caught.value.errors


def text(recommendation):
    return "\n".join(recommendation.rationale)


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
        "latency-sensitive exactly 10 GB is MIG",
        {"workload_type": "realtime_inference", "gpu_memory_gb": 10},
        M,
        "2g.10gb",
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
    ("batch at the fair share 40/4", {"workload_type": "batch_inference", "gpu_memory_gb": 10}, TS, None, 4),
    (
        "batch over the fair share falls back to MIG",
        {"workload_type": "batch_inference", "gpu_memory_gb": "10.01"},
        M,
        "3g.20gb",
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
    assert steps[0].startswith("Batch inference, not latency-sensitive: time-slicing")
    assert steps[1].startswith("Isolation required: time-slicing is ruled out")
    assert steps[2].startswith("SLA tier tier2_batch")
    assert "the choice meets it" in steps[2]
    assert steps[3].startswith("GPU model A100-40GB")
    assert steps[4].startswith("MIG profile 3g.20gb on A100-40GB")
    assert steps[5].startswith("Estimated cost: 2.7447 USD/GPU-hour (catalog list price) x 3/7 of a GPU")
    assert steps[6].startswith("Expected utilization 30% is below the 60-80% target")
    assert len(steps) == 7


def test_latency_boundary_is_in_the_rationale():
    assert "Latency-sensitive with 10 GB <= 10 GB" in text(rec(workload_type="realtime_inference", gpu_memory_gb=10))
    assert "Latency-sensitive with 10.01 GB > 10 GB" in text(
        rec(workload_type="realtime_inference", gpu_memory_gb="10.01")
    )


def test_only_full_profile_fits_says_dedicated_instead():
    result = rec(workload_type="realtime_inference", gpu_memory_gb=25, latency_sensitive=False, gpu_model="A100-40GB")
    assert "only the full-GPU profile 7g.40gb would" in text(result)


def test_time_slicing_fallback_says_why():
    result = rec(workload_type="batch_inference", gpu_memory_gb=12, gpu_model="A100-40GB")
    assert "Time-slicing does not fit on A100-40GB: 12 GB > 40 GB / 4 replicas = 10 GB per tenant" in text(result)


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
    ("tier2 batch", "tier2_batch", {"workload_type": "batch_inference", "gpu_memory_gb": 5}, M, "1g.5gb", None),
    (
        "tier2 batch 10 GB (mig_2g.10gb)",
        "tier2_batch",
        {"workload_type": "batch_inference", "gpu_memory_gb": 10},
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
    ("tier2 development", "tier2_batch", {"workload_type": "development", "gpu_memory_gb": 5}, M, "1g.5gb", None),
    ("tier2 real-time", "tier2_batch", {"workload_type": "realtime_inference", "gpu_memory_gb": 5}, M, "1g.5gb", None),
    ("tier2 training", "tier2_batch", {"workload_type": "training", "gpu_memory_gb": 5}, D, None, None),
    ("tier3 development, 4x", "tier3_development", {"workload_type": "development", "gpu_memory_gb": 5}, TS, None, 4),
    (
        "tier3 real-time",
        "tier3_development",
        {"workload_type": "realtime_inference", "gpu_memory_gb": 5},
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
    result = rec(gpu_model="A100-40GB", sla_tier=tier, **fields)
    assert (result.strategy, result.mig_profile, result.time_slice_replicas) == (strategy, mig_profile, ts_replicas)
    assert f"SLA tier {tier}" in text(result)


def test_tier1_says_what_it_rules_out():
    result = rec(workload_type="batch_inference", gpu_memory_gb=5, sla_tier="tier1_realtime", gpu_model="A100-40GB")
    assert "so MIG and time-slicing are ruled out" in text(result)


def test_time_slice_replicas_come_from_pool_then_tier_then_default():
    fields = {"workload_type": "development", "gpu_memory_gb": 5, "gpu_model": "A100-40GB"}
    assert rec(**fields).time_slice_replicas == 4
    assert rec(options={"default_time_slice_replicas": 2}, **fields).time_slice_replicas == 2
    tier = SlaTierSpec("lab", "Lab", IsolationFloor.NONE, "lab", 1, default_time_slice_replicas=3)
    assert rec(options={"tiers": {"lab": tier}}, sla_tier="lab", **fields).time_slice_replicas == 3
    pool = {"time_slice_replicas": {"A100-40GB": 8}}
    result = rec(options=pool, sla_tier="tier3_development", **fields)
    assert result.time_slice_replicas == 8
    assert "with 8 replicas per GPU (the pool's setting): each tenant can count on 5 GB >= 5 GB" in text(result)
    # 40 GB / 8 replicas = 5 GB per tenant: 5.01 GB no longer fits, so MIG (1g.5gb too small, 2g.10gb).
    over = rec(options=pool, **{**fields, "gpu_memory_gb": "5.01"})
    assert (over.strategy, over.mig_profile) == (M, "2g.10gb")


def test_pool_mapping_accepts_aliases():
    result = rec(
        options={"time_slice_replicas": {"a100": 2}}, workload_type="development", gpu_memory_gb=20, gpu_model="A100"
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


# --- MIG sizing per model family: the smallest recommendable profile that holds the memory ------------------------

MIG_BOUNDARIES = [
    ("A100-40GB", "5", "1g.5gb"),
    ("A100-40GB", "5.01", "2g.10gb"),
    ("A100-40GB", "10", "2g.10gb"),
    ("A100-40GB", "10.01", "3g.20gb"),
    ("A100-40GB", "20", "3g.20gb"),
    ("A100-40GB", "20.01", None),
    ("A100-80GB", "0.5", "1g.10gb"),
    ("A100-80GB", "10", "1g.10gb"),
    ("A100-80GB", "10.01", "2g.20gb"),
    ("A100-80GB", "20", "2g.20gb"),
    ("A100-80GB", "20.01", "3g.40gb"),
    ("A100-80GB", "40", "3g.40gb"),
    ("A100-80GB", "40.01", None),
    ("H100-80GB", "10", "1g.10gb"),
    ("H100-80GB", "10.01", "2g.20gb"),
    ("H100-80GB", "20", "2g.20gb"),
    ("H100-80GB", "20.01", "3g.40gb"),
    ("H100-80GB", "40", "3g.40gb"),
    ("H100-80GB", "40.01", None),
    ("H200", "18", "1g.18gb"),
    ("H200", "18.01", "2g.35gb"),
    ("H200", "35", "2g.35gb"),
    ("H200", "35.01", "3g.71gb"),
    ("H200", "71", "3g.71gb"),
    ("H200", "71.01", None),
    ("A30", "6", "1g.6gb"),
    ("A30", "6.01", "2g.12gb"),
    ("A30", "12", "2g.12gb"),
    ("A30", "12.01", None),  # 4g.24gb is the whole A30: dedicated
]


@pytest.mark.parametrize(("model", "memory", "mig_profile"), MIG_BOUNDARIES)
def test_mig_profile_boundaries(model, memory, mig_profile):
    # Real-time inference that is not latency-sensitive: "MIG where memory fits a profile, else dedicated".
    result = rec(workload_type="realtime_inference", latency_sensitive=False, gpu_memory_gb=memory, gpu_model=model)
    assert result.mig_profile == mig_profile
    assert result.strategy is (M if mig_profile else D)
    assert result.resource_name == (f"nvidia.com/mig-{mig_profile}" if mig_profile else "nvidia.com/gpu")


@pytest.mark.parametrize(
    ("model", "family", "label"),
    [
        ("A100-40GB", "ampere", "NVIDIA-A100-SXM4-40GB"),
        ("A30", "ampere", "NVIDIA-A30"),
        ("H100-80GB", "hopper", "NVIDIA-H100-80GB-HBM3"),
        ("H200", "hopper", "NVIDIA-H200"),
        ("L4", "ada", "NVIDIA-L4"),
        ("T4", "turing", "Tesla-T4"),
        ("V100-32GB", "volta", "Tesla-V100-SXM2-32GB"),
    ],
)
def test_every_family_gets_its_node_selector(model, family, label):
    result = rec(workload_type="training", gpu_memory_gb=4, gpu_model=model)
    assert result.node_selector == {"nvidia.com/gpu.product": label}
    assert f"({family}," in text(result)


NON_MIG = [
    # model, fields, strategy, ts replicas, words in the rationale
    (
        "T4",
        {"workload_type": "realtime_inference", "gpu_memory_gb": 4},
        D,
        None,
        "not MIG-capable (turing): a dedicated GPU instead, since the work is latency-sensitive",
    ),
    (
        "L4",
        {"workload_type": "development", "gpu_memory_gb": 4, "isolation_required": True},
        D,
        None,
        "not MIG-capable (ada): a dedicated GPU instead, since isolation is required",
    ),
    (
        "L4",
        {"workload_type": "realtime_inference", "gpu_memory_gb": 6, "latency_sensitive": False},
        TS,
        4,
        "not MIG-capable (ada): time-slicing instead",
    ),
    (
        "L4",
        {"workload_type": "realtime_inference", "gpu_memory_gb": "6.01", "latency_sensitive": False},
        D,
        None,
        "Time-slicing does not fit on L4",
    ),
    (
        "L4",
        {
            "workload_type": "realtime_inference",
            "gpu_memory_gb": 4,
            "latency_sensitive": False,
            "sla_tier": "tier2_batch",
        },
        D,
        None,
        "since policy rules out time-slicing",
    ),
    (
        "V100-32GB",
        {"workload_type": "batch_inference", "gpu_memory_gb": 8},
        TS,
        4,
        "Time-slicing on V100-32GB with 4 replicas",
    ),
    (
        "V100-32GB",
        {"workload_type": "batch_inference", "gpu_memory_gb": "8.01"},
        D,
        None,
        "Time-slicing does not fit on V100-32GB",
    ),
    ("T4", {"workload_type": "development", "gpu_memory_gb": 4}, TS, 4, "each tenant can count on 4 GB >= 4 GB"),
    ("T4", {"workload_type": "development", "gpu_memory_gb": "4.01"}, D, None, "16 GB / 4 replicas = 4 GB per tenant"),
    (
        "T4",
        {"workload_type": "batch_inference", "gpu_memory_gb": 2, "sla_tier": "tier2_batch"},
        D,
        None,
        "since policy rules out time-slicing",
    ),
]


@pytest.mark.parametrize(("model", "fields", "strategy", "ts_replicas", "words"), NON_MIG)
def test_models_without_mig(model, fields, strategy, ts_replicas, words):
    result = rec(gpu_model=model, **fields)
    assert (result.strategy, result.time_slice_replicas, result.mig_profile) == (strategy, ts_replicas, None)
    assert words in text(result)


def test_dedicated_spreads_memory_over_the_gpus_of_a_replica():
    fits = rec(workload_type="training", gpu_memory_gb=160, gpu_count=2, gpu_model="H100-80GB")
    assert (fits.strategy, fits.quantity) == (D, 2)
    assert "80 GB per GPU of 80 GB" in text(fits)
    errors = refusal(workload_type="training", gpu_memory_gb="160.01", gpu_count=2, gpu_model="H100-80GB")
    assert (
        "needs 160.01 GB over 2 GPUs (80.01 GB per GPU) but one H100-80GB GPU has 80 GB: choose a bigger model (H200)"
        in errors["gpu_memory_gb"][0]
    )
    assert "gpu_count >= 3" in errors["gpu_memory_gb"][0]


def test_named_model_too_small_is_refused_with_advice():
    errors = refusal(workload_type="training", gpu_memory_gb=20, gpu_model="T4")
    assert list(errors) == ["gpu_memory_gb"]
    message = errors["gpu_memory_gb"][0]
    assert message.startswith("A replica needs 20 GB on one GPU but one T4 GPU has 16 GB")
    assert "bigger model (A100-40GB, A100-80GB, H100-80GB, H200, A30, L4, V100-32GB)" in message
    assert "gpu_count >= 2" in message


def test_nothing_fits_at_all_is_refused():
    errors = refusal(workload_type="training", gpu_memory_gb=142)
    assert errors == {
        "gpu_memory_gb": [
            "A replica needs 142 GB on one GPU but no GPU model in the catalog is that big: the largest, H200, "
            "has 141 GB. Spread the replica over more GPUs (gpu_count >= 2)."
        ]
    }


# --- choosing a model when none is named --------------------------------------------------------------------------


def test_no_model_named_picks_a_bigger_model_that_fits():
    result = rec(workload_type="training", gpu_memory_gb=142, gpu_count=2)
    # 71 GB per GPU: A100-80GB (TCO 0.82/h) is the cheapest of the 80+ GB models.
    assert (result.gpu_model, result.strategy, result.quantity) == ("A100-80GB", D, 2)
    result = rec(workload_type="training", gpu_memory_gb=81)
    assert result.gpu_model == "H200"


def test_no_model_named_picks_the_cheapest_that_serves_the_strategy():
    rates = {name: Decimal(10) for name in BUILTIN_CATALOG.names()}
    rates["L4"] = Decimal("0.50")
    rates["A30"] = Decimal("4.00")  # a 1g.6gb slice: 4.00 / 4 = 1.00/h, cheaper than a 1g slice at 10/7
    assert rec(options={"rates": rates}, workload_type="training", gpu_memory_gb=20).gpu_model == "L4"
    small = rec(options={"rates": rates}, workload_type="realtime_inference", gpu_memory_gb=5)
    assert (small.gpu_model, small.mig_profile) == ("A30", "1g.6gb")
    assert "A30 is the cheapest of 5 model(s) that can serve MIG" in text(small)


def test_ties_go_to_the_smaller_gpu_then_the_name():
    same = {name: Decimal(1) for name in BUILTIN_CATALOG.names()}
    assert rec(options={"rates": same}, workload_type="training", gpu_memory_gb=8).gpu_model == "T4"
    assert rec(options={"rates": same}, workload_type="training", gpu_memory_gb=50).gpu_model == "A100-80GB"


def test_unpriced_models_rank_after_priced_ones():
    unpriced = Catalog(tuple(m for m in BUILTIN_CATALOG if m.name in {"A30", "V100-32GB", "T4"}))
    assert rec(catalog=unpriced, workload_type="training", gpu_memory_gb=10).gpu_model == "T4"
    only_unpriced = unpriced.restricted_to(["A30", "V100-32GB"])
    result = rec(catalog=only_unpriced, workload_type="training", gpu_memory_gb=10)
    assert result.gpu_model == "A30"  # both unknown: the smaller GPU
    assert result.estimated_monthly_cost is None
    assert result.to_dict()["estimated_monthly_cost"] == {"amount": None, "currency": "USD"}
    assert "Estimated cost unknown: no price book rate for A30 and no catalog price" in text(result)


def test_time_slicing_that_fits_no_model_falls_back_to_mig_on_the_cheapest():
    result = rec(workload_type="batch_inference", gpu_memory_gb=40)
    # 40 GB per tenant would need a 160 GB GPU at 4 replicas (H200: 35.25 GB): MIG 3g.40gb instead.
    assert (result.strategy, result.mig_profile, result.gpu_model) == (M, "3g.40gb", "A100-80GB")
    assert "No catalog model can time-slice 40 GB" in text(result)
    assert "at most 35.25 GB here (H200)" in text(result)


def test_mig_that_fits_no_partial_profile_falls_back_to_dedicated():
    result = rec(workload_type="realtime_inference", gpu_memory_gb=72, latency_sensitive=False)
    assert (result.strategy, result.gpu_model) == (D, "A100-80GB")
    assert "the largest is H200 3g.71gb (71 GB)" in text(result)


def test_time_slicing_picks_another_model_when_the_cheapest_is_too_small():
    result = rec(workload_type="development", gpu_memory_gb=4)
    assert (result.strategy, result.gpu_model) == (TS, "T4")  # 16/4 = 4 GB per tenant, 0.526/h
    bigger = rec(workload_type="development", gpu_memory_gb="4.01")
    assert bigger.strategy is TS
    assert bigger.gpu_model != "T4"


# --- cost (billing.pricing; DESIGN.md "Rates") ---------------------------------------------------------------------


COSTS = [
    # id, fields, options, expected monthly amount (hand arithmetic), saving
    (
        "A100-40GB 1g.5gb: 2.7447 x 1/7 x 730",
        {"workload_type": "realtime_inference", "gpu_memory_gb": 5, "gpu_model": "A100-40GB"},
        {},
        Decimal("2.7447") / 7 * 730,
        85.7,
    ),
    (
        "A100-40GB 1g.5gb, tier2 (x1.0), 3 replicas",
        {
            "workload_type": "batch_inference",
            "gpu_memory_gb": 5,
            "gpu_model": "A100-40GB",
            "sla_tier": "tier2_batch",
            "replicas": 3,
        },
        {},
        Decimal("2.7447") / 7 * 730 * 3,
        85.7,
    ),
    (
        "A100-40GB dedicated, tier1 x1.5",
        {
            "workload_type": "realtime_inference",
            "gpu_memory_gb": 5,
            "gpu_model": "A100-40GB",
            "sla_tier": "tier1_realtime",
        },
        {},
        Decimal("2.7447") * Decimal("1.5") * 730,
        0.0,
    ),
    (
        "A100-40GB time-sliced 4x, tier3 x0.8",
        {"workload_type": "development", "gpu_memory_gb": 5, "gpu_model": "A100-40GB", "sla_tier": "tier3_development"},
        {},
        Decimal("2.7447") * Decimal("0.8") / 4 * 730,
        75.0,
    ),
    (
        "A100-40GB 3g.20gb, 2 replicas",
        {"workload_type": "batch_inference", "gpu_memory_gb": 15, "gpu_model": "A100-40GB", "replicas": 2},
        {},
        Decimal("2.7447") * 3 / 7 * 730 * 2,
        57.1,
    ),
    (
        "A30 2g.12gb from the price book: n/4",
        {"workload_type": "realtime_inference", "gpu_memory_gb": 12, "latency_sensitive": False, "gpu_model": "A30"},
        {"rates": {"A30": Decimal("1.20")}},
        Decimal("1.20") * 2 / 4 * 730,
        50.0,
    ),
    (
        "price book beats the catalog",
        {"workload_type": "training", "gpu_memory_gb": 5, "gpu_model": "A100-40GB"},
        {"rates": {"A100-40GB": Decimal("2.00")}},
        Decimal("2.00") * 730,
        0.0,
    ),
    (
        "H100 dedicated x4 GPUs at catalog TCO",
        {"workload_type": "training", "gpu_memory_gb": 200, "gpu_count": 4, "gpu_model": "H100-80GB"},
        {},
        tco(27500, 700) * 4 * 730,
        0.0,
    ),
    (
        "A100-80GB 1g.10gb at catalog TCO",
        {"workload_type": "realtime_inference", "gpu_memory_gb": 8, "gpu_model": "A100-80GB"},
        {},
        tco(11500, 400) / 7 * 730,
        85.7,
    ),
    (
        "T4 time-sliced 2x from the pool",
        {"workload_type": "development", "gpu_memory_gb": 8, "gpu_model": "T4"},
        {"time_slice_replicas": {"T4": 2}},
        Decimal("0.526") / 2 * 730,
        50.0,
    ),
    (
        "A30 without a price",
        {"workload_type": "realtime_inference", "gpu_memory_gb": 5, "gpu_model": "A30"},
        {},
        None,
        75.0,
    ),
    (
        "non-USD currency never uses the catalog's USD prices",
        {"workload_type": "realtime_inference", "gpu_memory_gb": 5, "gpu_model": "A100-40GB"},
        {"currency": "EUR"},
        None,
        85.7,
    ),
]


@pytest.mark.parametrize(("fields", "options", "amount", "saving"), [c[1:] for c in COSTS], ids=[c[0] for c in COSTS])
def test_monthly_cost(fields, options, amount, saving):
    result = rec(options=options, **fields)
    data = result.to_dict()
    if amount is None:
        assert result.estimated_monthly_cost is None
        assert data["estimated_monthly_cost"]["amount"] is None
    else:
        assert abs(result.estimated_monthly_cost - amount) < Decimal("1e-15")
        assert data["estimated_monthly_cost"]["amount"] == str(amount.quantize(Decimal("0.01"), "ROUND_HALF_UP"))
    assert data["estimated_monthly_cost"]["currency"] == options.get("currency", "USD")
    assert data["saving_vs_dedicated_pct"] == saving


def test_cost_cents_by_hand():
    # 2.7447 x 730 = 2003.631; / 7 = 286.233 -> 286.23. Tier 1: x 1.5 = 3005.4465 -> 3005.45 (half-up).
    assert rec(workload_type="realtime_inference", gpu_memory_gb=5, gpu_model="A100-40GB").to_dict()[
        "estimated_monthly_cost"
    ] == {"amount": "286.23", "currency": "USD"}
    tier1 = rec(workload_type="realtime_inference", gpu_memory_gb=5, gpu_model="A100-40GB", sla_tier="tier1_realtime")
    assert tier1.to_dict()["estimated_monthly_cost"]["amount"] == "3005.45"
    assert "x SLA multiplier 1.5 x 730 h x 1 replica = 3005.45 USD/month" in text(tier1)


def test_price_book_names_are_case_and_alias_insensitive():
    result = rec(
        options={"rates": {"a100": Decimal("1")}}, workload_type="training", gpu_memory_gb=5, gpu_model="A100-40GB"
    )
    assert result.estimated_monthly_cost == Decimal(730)
    assert "(price book)" in text(result)


@pytest.mark.parametrize("bad", [Decimal("-0.01"), Decimal("NaN")])
def test_invalid_rates_are_refused(bad):
    with pytest.raises(ValueError, match="hourly rate of T4"):
        rec(options={"rates": {"T4": bad}}, workload_type="training", gpu_memory_gb=5)


# --- alternatives ------------------------------------------------------------------------------------------------


def by_key(result):
    return {(a.gpu_model, a.strategy): a for a in result.alternatives}


def test_policy_forbidden_alternatives_say_why_not():
    result = rec(workload_type="realtime_inference", gpu_memory_gb=5, sla_tier="tier1_realtime", gpu_model="A100-40GB")
    assert result.strategy is D
    alternatives = by_key(result)
    mig = alternatives[("A100-40GB", M)]
    assert (mig.permitted, mig.mig_profile) == (False, "1g.5gb")
    assert "tier1_realtime" in mig.reason
    ts = alternatives[("A100-40GB", TS)]
    assert ts.permitted is False
    assert ts.time_slice_replicas == 4
    assert "tier1_realtime" in ts.reason
    # Other models only offer what policy permits; permitted ones rank first.
    assert all(a.permitted for a in result.alternatives if a.gpu_model != "A100-40GB")
    flags = [a.permitted for a in result.alternatives]
    assert flags == sorted(flags, reverse=True)


def test_isolation_forbids_time_slicing_alternatives():
    result = rec(workload_type="development", gpu_memory_gb=5, isolation_required=True, gpu_model="A100-40GB")
    ts = by_key(result)[("A100-40GB", TS)]
    assert ts.permitted is False
    assert ts.reason.startswith("Isolation required")
    assert by_key(result)[("A100-40GB", D)].permitted is True


def test_multi_gpu_replicas_show_shared_alternatives_as_not_permitted():
    result = rec(workload_type="batch_inference", gpu_memory_gb=16, gpu_count=2, gpu_model="A100-40GB")
    assert (result.strategy, result.quantity) == (D, 2)
    mig = by_key(result)[("A100-40GB", M)]
    assert (mig.permitted, mig.mig_profile, mig.quantity) == (False, "2g.10gb", 2)
    assert "cannot span GPUs" in mig.reason
    ts = by_key(result)[("A100-40GB", TS)]
    assert ts.permitted is False
    assert "refuses a time-sliced request of more than one" in ts.reason


def test_alternatives_carry_tradeoffs_and_core_fields():
    result = rec(workload_type="batch_inference", gpu_memory_gb=8, gpu_model="A100-40GB")
    assert result.strategy is TS
    alternatives = by_key(result)
    assert (result.gpu_model, result.strategy) not in alternatives
    dedicated = alternatives[("A100-40GB", D)]
    assert dedicated.estimated_monthly_cost > result.estimated_monthly_cost
    assert dedicated.isolation == "full"
    assert any(t.startswith("Performance: the whole GPU") for t in dedicated.tradeoffs)
    assert any(t.startswith("Isolation: full") for t in dedicated.tradeoffs)
    assert "Cost: 2003.63 USD/month, 1502.72 USD more than the recommendation." in dedicated.tradeoffs
    mig = alternatives[("A100-40GB", M)]
    assert mig.mig_profile == "2g.10gb"
    assert "Not chosen: the guide time-slices batch inference that is not latency-sensitive." in mig.tradeoffs
    other = alternatives[("A100-80GB", TS)]
    assert "Runs on A100-80GB (ampere, 80 GB) instead of A100-40GB." in other.tradeoffs
    assert "Not chosen: the request names A100-40GB." in other.tradeoffs


def test_alternatives_rank_the_preferred_strategy_then_cost():
    result = rec(workload_type="development", gpu_memory_gb=8)
    strategies = [a.strategy for a in result.alternatives]
    # Time-slicing first (the tree's choice), then MIG, then dedicated.
    assert strategies == sorted(strategies, key=[TS, M, D].index)
    ts_costs = [a.estimated_monthly_cost for a in result.alternatives if a.strategy is TS]
    priced = [c for c in ts_costs if c is not None]
    assert priced == sorted(priced)
    assert all(c >= result.estimated_monthly_cost for c in priced)
    assert ts_costs[-1] is None  # V100-32GB has no price: last


# --- the JSON contract --------------------------------------------------------------------------------------------


def test_to_dict_is_the_design_contract():
    result = rec(workload_type="realtime_inference", gpu_memory_gb=5, gpu_model="A100-40GB", replicas=2)
    data = json.loads(json.dumps(result.to_dict()))
    assert set(data) >= CONTRACT_KEYS
    assert set(data) - CONTRACT_KEYS == {"isolation", "topology_aware"}
    assert data["strategy"] == "mig"
    assert data["resource_name"] == "nvidia.com/mig-1g.5gb"
    assert data["quantity"] == 1
    assert data["replicas"] == 2
    assert data["mig_profile"] == "1g.5gb"
    assert data["time_slice_replicas"] is None
    assert data["node_selector"] == {"nvidia.com/gpu.product": "NVIDIA-A100-SXM4-40GB"}
    assert data["expected_overhead_pct"] == [0, 5]
    assert data["utilization_target_pct"] == [60, 80]
    # 2.7447 / 7 x 730 x 2 = 572.466 -> 572.47
    assert data["estimated_monthly_cost"] == {"amount": "572.47", "currency": "USD"}
    assert data["saving_vs_dedicated_pct"] == 85.7
    assert isinstance(data["rationale"], list)
    assert all(isinstance(s, str) for s in data["rationale"])
    assert data["topology_aware"] is False
    for alternative in data["alternatives"]:
        assert CONTRACT_KEYS - {"rationale", "alternatives"} <= set(alternative)
        assert {"tradeoffs", "permitted", "reason", "isolation"} <= set(alternative)
        assert isinstance(alternative["tradeoffs"], list)
        assert alternative["tradeoffs"]


def test_recommendation_is_frozen_and_hashable():
    result = rec(workload_type="development", gpu_memory_gb=8)
    assert hash(result) == hash(rec(workload_type="development", gpu_memory_gb=8))
    with pytest.raises(AttributeError):
        result.strategy = D


def test_the_package_is_pure():
    source_dir = __import__("allocations.decision", fromlist=["x"]).__path__[0]
    import pathlib

    for path in pathlib.Path(source_dir).glob("*.py"):
        code = path.read_text()
        for forbidden in ("django", "rest_framework", "celery", "kubernetes"):
            assert f"import {forbidden}" not in code, path
            assert f"from {forbidden}" not in code, path
