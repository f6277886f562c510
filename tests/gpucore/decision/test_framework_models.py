"""recommend(): MIG sizing per model family, models without MIG, memory refusals and choosing a model.

Expected values come from the guide (Part 4 of shared/domain/000_*.txt), NVIDIA's MIG profile tables and hand
arithmetic, not from the code under test.
"""

from dataclasses import replace
from decimal import Decimal

import pytest

from gpucore.decision import BUILTIN_CATALOG, Catalog
from tests.gpucore.decision.cases import TS, D, M, rec, refusal, text

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
        "T4 has no MIG (turing), so a dedicated GPU, since the work is latency-sensitive",
    ),
    (
        "L4",
        {"workload_type": "development", "gpu_memory_gb": 4, "isolation_required": True},
        D,
        None,
        "L4 has no MIG (ada), so a dedicated GPU, since isolation is required",
    ),
    # Real-time inference not marked latency-sensitive: the matrix's "MIG or dedicated", never time-sliced.
    (
        "L4",
        {"workload_type": "realtime_inference", "gpu_memory_gb": 6, "latency_sensitive": False},
        D,
        None,
        "L4 has no MIG (ada), so a dedicated GPU, since real-time inference needs isolation from neighbours",
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
        "since time-slicing is ruled out above",
    ),
    (
        "V100-32GB",
        {"workload_type": "batch_inference", "gpu_memory_gb": 8},
        TS,
        4,
        "Time-slicing on V100-32GB with 4 tenants per GPU",
    ),
    (
        "V100-32GB",
        {"workload_type": "batch_inference", "gpu_memory_gb": "8.01"},
        TS,
        3,
        "the portal default of 4 lowered so that a share holds the replica",
    ),
    (
        "V100-32GB",
        {"workload_type": "batch_inference", "gpu_memory_gb": "16.01"},
        D,
        None,
        "Time-slicing does not fit on V100-32GB: 16.01 GB is more than a fair share with even 2 tenants per GPU",
    ),
    ("T4", {"workload_type": "development", "gpu_memory_gb": 4}, TS, 4, "each can count on 4 GB, enough for 4 GB"),
    ("T4", {"workload_type": "development", "gpu_memory_gb": 8}, TS, 2, "each can count on 8 GB, enough for 8 GB"),
    (
        "T4",
        {"workload_type": "development", "gpu_memory_gb": "8.01"},
        D,
        None,
        "T4 has no MIG (turing), so a dedicated GPU, since no time-sliced share of it serves the replica",
    ),
    (
        "T4",
        {"workload_type": "batch_inference", "gpu_memory_gb": 2, "sla_tier": "tier2_batch"},
        D,
        None,
        "since time-slicing is ruled out above",
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
    v100 = BUILTIN_CATALOG.get("V100-32GB")
    only_unpriced = Catalog((BUILTIN_CATALOG.get("A30"), replace(v100, list_hourly_usd=None)))
    result = rec(catalog=only_unpriced, workload_type="training", gpu_memory_gb=10)
    assert result.gpu_model == "A30"  # both unknown: the smaller GPU
    assert result.estimated_monthly_cost is None
    assert result.to_dict()["estimated_monthly_cost"] == {"amount": None, "currency": "USD"}
    assert "Estimated cost unknown: no price book rate for A30 and no catalog price" in text(result)


def test_time_slicing_that_fits_no_model_falls_back_to_mig_on_the_cheapest():
    result = rec(workload_type="batch_inference", gpu_memory_gb=71)
    # 71 GB per tenant needs more than the largest GPU shared by its fewest tenants (H200 141 GB / 2 = 70.5 GB):
    # MIG instead, and only H200's 3g.71gb holds it.
    assert (result.strategy, result.mig_profile, result.gpu_model) == (M, "3g.71gb", "H200")
    assert "No catalog model can time-slice 71 GB" in text(result)
    assert "at most 70.5 GB here (H200)" in text(result)
    # 40 GB still time-slices: two tenants of an A100-80GB hold 40 GB each.
    two_way = rec(workload_type="batch_inference", gpu_memory_gb=40)
    assert (two_way.strategy, two_way.time_slice_replicas) == (TS, 2)


def test_mig_that_fits_no_partial_profile_falls_back_to_dedicated():
    result = rec(workload_type="realtime_inference", gpu_memory_gb=72, latency_sensitive=False)
    assert (result.strategy, result.gpu_model) == (D, "A100-80GB")
    assert "the largest is H200 3g.71gb (71 GB)" in text(result)


def test_time_slicing_picks_another_model_when_the_cheapest_is_too_small():
    result = rec(workload_type="development", gpu_memory_gb=4)
    assert (result.strategy, result.gpu_model) == (TS, "T4")  # 16/4 = 4 GB per tenant, 0.526/h
    three_way = rec(workload_type="development", gpu_memory_gb="4.01")
    assert (three_way.strategy, three_way.gpu_model, three_way.time_slice_replicas) == (TS, "T4", 3)  # 5.33 GB each
    bigger = rec(workload_type="development", gpu_memory_gb="8.01")  # more than T4 / 2
    assert bigger.strategy is TS
    assert bigger.gpu_model != "T4"
