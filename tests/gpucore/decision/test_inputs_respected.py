"""recommend() respects every input (duration, node size, p99 target, tier, time-sliced pools) and speaks plainly.

Expected values are hand arithmetic on the catalog's list prices (H100-80GB 6.88/h, T4 0.526/h) and the guide's
figures (tier 1: p99 10 ms, 99.99 % availability), not output of the code under test.
"""

from decimal import Decimal

import pytest

from gpucore.decision import BUILTIN_CATALOG
from tests.gpucore.decision.cases import TS, D, M, rec, refusal, text

# --- 3. the cost for the requested duration, beside the monthly rate ----------------------------------------------


def test_a_48_hour_request_carries_its_48_hour_cost():
    result = rec(workload_type="training", gpu_memory_gb=60, gpu_model="H100-80GB", duration_hours=48)
    data = result.to_dict()
    assert data["estimated_monthly_cost"] == {"amount": "5022.40", "currency": "USD"}  # 6.88 x 730
    assert data["estimated_cost"] == {"amount": "330.24", "currency": "USD", "hours": 48}  # 6.88 x 48
    assert "For the 48 hours asked for: 330.24 USD." in text(result)
    assert data["gpu_share"] == "1"


def test_every_alternative_carries_its_duration_cost_and_gpu_share():
    result = rec(workload_type="development", gpu_memory_gb=3, gpu_model="T4", duration_hours="10.5")
    data = result.to_dict()
    # 0.526 / 4 x 10.5 = 1.38075 -> 1.38
    assert data["estimated_cost"] == {"amount": "1.38", "currency": "USD", "hours": 10.5}
    assert data["gpu_share"] == "0.25"
    dedicated = next(a for a in data["alternatives"] if (a["gpu_model"], a["strategy"]) == ("T4", "dedicated"))
    assert dedicated["estimated_cost"] == {"amount": "5.52", "currency": "USD", "hours": 10.5}  # 0.526 x 10.5
    assert dedicated["gpu_share"] == "1"


def test_without_a_duration_estimated_cost_is_null():
    data = rec(workload_type="development", gpu_memory_gb=3, gpu_model="T4").to_dict()
    assert data["estimated_cost"] is None
    assert data["estimated_monthly_cost"]["amount"] == "96.00"  # 0.526 / 4 x 730 = 95.995


def test_a_mig_share_is_the_larger_of_compute_and_memory():
    data = rec(workload_type="realtime_inference", gpu_memory_gb=20, gpu_model="A100-40GB").to_dict()
    assert data["strategy"] == "dedicated"  # latency-sensitive over 10 GB
    data = rec(workload_type="batch_inference", gpu_memory_gb=16, gpu_model="A100-40GB", isolation_required=True)
    assert (data.mig_profile, data.to_dict()["gpu_share"]) == ("3g.20gb", "0.5")  # max(3/7, 4/8)


# --- 4. GPUs per replica against the largest node -----------------------------------------------------------------


def test_gpu_count_above_the_largest_node_is_refused_on_gpu_count():
    errors = refusal(
        workload_type="training", gpu_memory_gb=400, gpu_count=16, options={"gpus_per_node": {"H100-80GB": 8}}
    )
    assert list(errors) == ["gpu_count"]
    assert "16 GPUs per replica" in errors["gpu_count"][0]
    assert "at most 8 GPUs" in errors["gpu_count"][0]
    assert "2 replicas of 8 GPUs" in errors["gpu_count"][0]


def test_gpu_count_goes_to_a_model_whose_nodes_are_big_enough():
    nodes = {"gpus_per_node": {"A100-80GB": 4, "H100-80GB": 8}}
    catalog = BUILTIN_CATALOG.restricted_to(["A100-80GB", "H100-80GB"])
    result = rec(workload_type="training", gpu_memory_gb=100, gpu_count=8, options=nodes, catalog=catalog)
    assert (result.strategy, result.gpu_model, result.quantity) == (D, "H100-80GB", 8)
    # The cheaper A100-80GB fits the memory but not the node size: no dedicated alternative there, and its shared
    # options are ruled out (a replica of 8 GPUs is never shared).
    assert not [a for a in result.alternatives if (a.gpu_model, a.strategy) == ("A100-80GB", D)]
    assert all(not a.permitted for a in result.alternatives if a.gpu_model == "A100-80GB")
    named = refusal(workload_type="training", gpu_memory_gb=100, gpu_count=8, gpu_model="A100-80GB", options=nodes)
    assert list(named) == ["gpu_count"]
    assert "a A100-80GB node here has at most 4 GPUs" in named["gpu_count"][0]


def test_without_node_sizes_gpu_count_is_not_checked():
    assert rec(workload_type="training", gpu_memory_gb=400, gpu_count=16).quantity == 16


# --- 5. latency_p99_ms ----------------------------------------------------------------------------------------------


def test_a_p99_at_or_below_tier_1_forbids_any_sharing():
    result = rec(workload_type="batch_inference", gpu_memory_gb=4, latency_p99_ms=5, gpu_model="A100-40GB")
    assert result.strategy is D
    assert "A 5 ms p99 target is at or below the 10 ms of the real-time tier" in text(result)
    assert "So MIG and time-slicing are ruled out." in text(result)
    at_target = rec(workload_type="realtime_inference", gpu_memory_gb=5, latency_p99_ms=10)
    assert at_target.strategy is D


def test_a_p99_below_time_slicing_jitter_forbids_time_slicing_only():
    result = rec(workload_type="batch_inference", gpu_memory_gb=4, latency_p99_ms=30, gpu_model="A100-40GB")
    assert (result.strategy, result.mig_profile) == (M, "1g.5gb")
    assert "below the 50 ms of jitter time-slicing can add" in text(result)
    ts = next(a for a in result.alternatives if a.strategy is TS and a.gpu_model == "A100-40GB")
    assert not ts.permitted


def test_a_relaxed_p99_leaves_time_slicing():
    result = rec(workload_type="batch_inference", gpu_memory_gb=5, latency_p99_ms=200, gpu_model="A100-40GB")
    assert result.strategy is TS


@pytest.mark.parametrize("model", [m.name for m in BUILTIN_CATALOG])
def test_p99_5_ms_is_never_time_sliced_on_any_model(model):
    for kind in ("batch_inference", "development", "realtime_inference"):
        result = rec(workload_type=kind, gpu_memory_gb=2, latency_p99_ms=5, gpu_model=model)
        assert result.strategy is D


# --- 6. the decision tree: fewer tenants before falling back; one consistent sentence ------------------------------


def test_development_above_the_default_share_is_time_sliced_with_fewer_tenants():
    result = rec(workload_type="development", gpu_memory_gb=6, gpu_model="T4")
    assert (result.strategy, result.time_slice_replicas) == (TS, 2)  # 15 GiB x 0.85 / 2 = 6.375 GiB
    assert "the portal default of 4 lowered so that a share holds the replica" in text(result)
    assert "does not fit" not in text(result)


def test_a_fallback_is_said_once_without_contradiction():
    result = rec(workload_type="development", gpu_memory_gb=12, gpu_model="T4")
    assert result.strategy is D
    lines = [line for line in result.rationale if "time-slic" in line.casefold() or "MIG" in line]
    assert any(line.startswith("Time-slicing does not fit on T4") for line in lines)
    assert "instead" not in text(result).replace("instead of", "")
    assert "T4 has no MIG (turing), so a dedicated GPU, since no time-sliced share of it serves the replica." in (
        result.rationale
    )


def test_realtime_not_latency_sensitive_without_mig_is_dedicated_as_its_rationale_says():
    result = rec(workload_type="realtime_inference", gpu_memory_gb=4, latency_sensitive=False, gpu_model="T4")
    assert result.strategy is D
    assert "MIG or a dedicated GPU" in result.rationale[0]
    assert "time-slicing instead" not in text(result)


def test_a_tier_1_service_with_one_replica_is_refused_with_the_reason():
    errors = refusal(workload_type="realtime_inference", gpu_memory_gb=5, sla_tier="tier1_realtime")
    assert list(errors) == ["replicas"]
    assert "99.99 % availability, which one replica cannot give" in errors["replicas"][0]
    assert "at least 2 replicas" in errors["replicas"][0]
    assert rec(workload_type="realtime_inference", gpu_memory_gb=5, sla_tier="tier1_realtime", replicas=2)


@pytest.mark.parametrize("workload_type", ["training", "batch_inference", "hpc_simulation"])
def test_a_tier_1_job_of_one_pod_stays_one_pod(workload_type):
    # A Job's pods are one run: a second one would make it distributed, not more available.
    result = rec(workload_type=workload_type, gpu_memory_gb=40, sla_tier="tier1_realtime", gpu_model="H100-80GB")
    assert (result.strategy, result.replicas) == (D, 1)


# --- 9. several time-sliced pools of one model --------------------------------------------------------------------


def test_each_time_sliced_pool_of_a_model_is_considered():
    pools = {"time_slice_replicas": {"T4": [4, 2]}}
    notebook = rec(workload_type="development", gpu_memory_gb=6, gpu_model="T4", options=pools)
    assert (notebook.strategy, notebook.time_slice_replicas) == (TS, 2)
    assert "with 2 tenants per GPU (the pool's setting)" in text(notebook)
    small = rec(workload_type="development", gpu_memory_gb=3, gpu_model="T4", options=pools)
    assert small.time_slice_replicas == 4  # the cheaper share where it fits
    # With only a 4-way pool the 6 GiB notebook is not time-sliced on T4 (no such pool exists to place it).
    only_four = rec(
        workload_type="development", gpu_memory_gb=6, gpu_model="T4", options={"time_slice_replicas": {"T4": 4}}
    )
    assert only_four.strategy is D


# --- plain words ----------------------------------------------------------------------------------------------------

PROFILES = [
    {"workload_type": "training", "gpu_memory_gb": 30, "sla_tier": "tier2_batch"},
    {"workload_type": "hpc_simulation", "gpu_memory_gb": 30, "gpu_count": 2},
    {"workload_type": "realtime_inference", "gpu_memory_gb": 5, "sla_tier": "tier1_realtime", "replicas": 2},
    {"workload_type": "realtime_inference", "gpu_memory_gb": 12, "latency_sensitive": False},
    {"workload_type": "batch_inference", "gpu_memory_gb": 12, "isolation_required": True, "latency_p99_ms": 30},
    {
        "workload_type": "development",
        "gpu_memory_gb": 6,
        "sla_tier": "tier3_development",
        "expected_utilization_pct": 5,
    },
    {"workload_type": "development", "gpu_memory_gb": 40, "gpu_model": "T4", "gpu_count": 4},
]


@pytest.mark.parametrize("fields", PROFILES)
def test_rationale_and_tradeoffs_speak_plainly(fields):
    result = rec(**fields)
    words = [*result.rationale, *(t for a in result.alternatives for t in (*a.tradeoffs, a.reason or ""))]
    for line in words:
        assert "Part " not in line and "Parts " not in line, line
        for slug in ("tier1_realtime", "tier2_batch", "tier3_development"):
            assert slug not in line, line
        assert "0-0" not in line, line


def test_every_share_is_a_decimal_string():
    data = rec(workload_type="development", gpu_memory_gb=4).to_dict()
    for item in (data, *data["alternatives"]):
        assert Decimal(item["gpu_share"]) > 0


# --- the GPU share of a MIG slice is the one its pool's layout bills -----------------------------------------------


def test_a_mig_share_scales_by_the_layout_of_the_pool_that_serves_it():
    fields = {
        "workload_type": "batch_inference",
        "gpu_memory_gb": 16,
        "gpu_model": "A100-40GB",
        "isolation_required": True,
    }
    alone = rec(**fields)
    assert (alone.mig_profile, alone.to_dict()["gpu_share"]) == ("3g.20gb", "0.5")
    # 3g.20gb (0.5) + 2g.10gb (2/7) + 2 x 1g.5gb (1/7 each) weigh 15/14 of a GPU: each bills its weight x 14/15.
    layout = {("A100-40GB", "3g.20gb"): {"3g.20gb": 1, "2g.10gb": 1, "1g.5gb": 2}}
    placed = rec(options={"mig_layouts": layout}, **fields)
    assert placed.to_dict()["gpu_share"] == "0.466667"  # 0.5 x 14/15 = 7/15
    assert placed.estimated_monthly_cost == Decimal("2.7447") * 7 / 15 * 730
