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

# Each slice holds at most 85 % of the memory nvidia-smi shows for it (GiB; shared/reference/mig_profiles.yaml):
# A100-40GB 1g.5gb 4.75 x 0.85 = 4.0375, 2g.10gb 9.75 x 0.85 = 8.2875, 3g.20gb 19.62 x 0.85 = 16.677; the 80 GB
# parts 9.75 / 19.62 / 39.5 (x 0.85 = 33.575); A30 5.81 / 11.69; H200 is not measured: 95 % of the name's GB
# (17.1, 33.25, 67.45 GiB).
MIG_BOUNDARIES = [
    ("A100-40GB", "4.0375", "1g.5gb"),
    ("A100-40GB", "4.04", "2g.10gb"),
    ("A100-40GB", "5", "2g.10gb"),  # a "5 gb" slice offers 4.75 GiB: 5 GiB does not fit it
    ("A100-40GB", "8.2875", "2g.10gb"),
    ("A100-40GB", "8.29", "3g.20gb"),
    ("A100-40GB", "16.677", "3g.20gb"),
    ("A100-40GB", "16.68", None),
    ("A100-80GB", "0.5", "1g.10gb"),
    ("A100-80GB", "8.2875", "1g.10gb"),
    ("A100-80GB", "8.29", "2g.20gb"),
    ("A100-80GB", "16.677", "2g.20gb"),
    ("A100-80GB", "16.68", "3g.40gb"),
    ("A100-80GB", "33.575", "3g.40gb"),
    ("A100-80GB", "33.58", None),
    ("H100-80GB", "8.2875", "1g.10gb"),
    ("H100-80GB", "10", "2g.20gb"),  # 10 GB on H100 1g.10gb (9.75 GiB) would leave no headroom
    ("H100-80GB", "16.677", "2g.20gb"),
    ("H100-80GB", "20", "3g.40gb"),
    ("H100-80GB", "33.575", "3g.40gb"),
    ("H100-80GB", "33.58", None),
    ("H200", "14.535", "1g.18gb"),
    ("H200", "14.54", "2g.35gb"),
    ("H200", "28.2625", "2g.35gb"),
    ("H200", "28.27", "3g.71gb"),
    ("H200", "57.3325", "3g.71gb"),
    ("H200", "57.34", None),
    ("A30", "4.9385", "1g.6gb"),
    ("A30", "4.94", "2g.12gb"),
    ("A30", "9.9365", "2g.12gb"),
    ("A30", "9.94", None),  # 4g.24gb is the whole A30: dedicated
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
        {"workload_type": "batch_inference", "gpu_memory_gb": "6.46"},  # 30.4 GiB x 0.85 / 4
        TS,
        4,
        "Time-slicing on V100-32GB with 4 tenants per GPU",
    ),
    (
        "V100-32GB",
        {"workload_type": "batch_inference", "gpu_memory_gb": "6.47"},
        TS,
        3,
        "the portal default of 4 lowered so that a share holds the replica",
    ),
    (
        "V100-32GB",
        {"workload_type": "batch_inference", "gpu_memory_gb": "12.93"},  # 30.4 GiB x 0.85 / 2 = 12.92
        D,
        None,
        "Time-slicing does not fit on V100-32GB: 12.93 GiB needs 15.22 GiB with headroom, more than a fair share "
        "with even 2 tenants per GPU (30.4 GiB / 2 = 15.2 GiB)",
    ),
    # A T4 offers 15 GiB (nvidia-smi: 15360 MiB); 85 % of it is 12.75 GiB.
    ("T4", {"workload_type": "development", "gpu_memory_gb": "3.1875"}, TS, 4, "each can count on 3.75 GiB"),
    ("T4", {"workload_type": "development", "gpu_memory_gb": "6.375"}, TS, 2, "each can count on 7.5 GiB"),
    (
        "T4",
        {"workload_type": "development", "gpu_memory_gb": "6.38"},
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
    # An H100-80GB offers 79.25 GiB; with 15 % headroom a GPU holds 67.3625 GiB, two hold 134.725.
    fits = rec(workload_type="training", gpu_memory_gb="134.725", gpu_count=2, gpu_model="H100-80GB")
    assert (fits.strategy, fits.quantity) == (D, 2)
    assert "67.36 GiB per GPU, which needs 79.25 GiB with headroom" in text(fits)
    assert "each GPU offers 79.25 GiB" in text(fits)
    errors = refusal(workload_type="training", gpu_memory_gb="134.73", gpu_count=2, gpu_model="H100-80GB")
    assert (
        "needs 134.73 GiB over 2 GPUs (67.37 GiB per GPU), which needs 79.26 GiB per GPU with headroom, but one "
        "H100-80GB GPU offers 79.25 GiB: choose a bigger model (H200)" in errors["gpu_memory_gb"][0]
    )
    assert "gpu_count >= 3" in errors["gpu_memory_gb"][0]


def test_named_model_too_small_is_refused_with_advice():
    errors = refusal(workload_type="training", gpu_memory_gb=20, gpu_model="T4")
    assert list(errors) == ["gpu_memory_gb"]
    message = errors["gpu_memory_gb"][0]
    assert message.startswith(
        "A replica needs 20 GiB on one GPU, which needs 23.53 GiB per GPU with headroom, but one T4 GPU offers 15 GiB"
    )
    # A30 (23.5 GiB) and L4 (22.49 GiB) would hold 20 GiB only above the 85 % pressure line.
    assert "bigger model (A100-40GB, A100-80GB, H100-80GB, H200, V100-32GB)" in message
    assert "gpu_count >= 2" in message


def test_nothing_fits_at_all_is_refused():
    # 140 GB on one GPU: the largest model is H200 (143771 MiB = 140.4 GiB), not an 80 GB part.
    errors = refusal(workload_type="training", gpu_memory_gb=140)
    assert errors == {
        "gpu_memory_gb": [
            "A replica needs 140 GiB on one GPU, which needs 164.71 GiB per GPU with headroom, but no GPU model in the "
            "catalog is that big: the largest, H200, offers 140.4 GiB. Spread the replica over more GPUs "
            "(gpu_count >= 2)."
        ]
    }


# --- choosing a model when none is named --------------------------------------------------------------------------


def test_no_model_named_picks_a_bigger_model_that_fits():
    result = rec(workload_type="training", gpu_memory_gb=134, gpu_count=2)
    # 67 GiB per GPU fits the 80 GB parts with headroom (79.25 x 0.85 = 67.36) and the H200; training is placed by
    # cost per unit of work: H100 6.88 / 989 TFLOPS beats A100-80GB 3.4309 / 312 and H200 7.912 / 989.
    assert (result.gpu_model, result.strategy, result.quantity) == ("H100-80GB", D, 2)
    result = rec(workload_type="training", gpu_memory_gb=81)
    assert result.gpu_model == "H200"


def test_no_model_named_picks_the_cheapest_that_serves_the_strategy():
    rates = {name: Decimal(10) for name in BUILTIN_CATALOG.names()}
    rates["L4"] = Decimal("0.50")
    rates["A30"] = Decimal("4.00")  # a 1g.6gb slice: 4.00 / 4 = 1.00/h, cheaper than a 1g slice at 10/7
    assert rec(options={"rates": rates}, workload_type="training", gpu_memory_gb=19).gpu_model == "L4"
    small = rec(options={"rates": rates}, workload_type="realtime_inference", gpu_memory_gb="4.9")
    assert (small.gpu_model, small.mig_profile) == ("A30", "1g.6gb")
    assert "A30 is the cheapest of 5 model(s) that can serve MIG" in text(small)


def test_ties_go_to_the_smaller_gpu_then_the_name():
    same = {name: Decimal(1) for name in BUILTIN_CATALOG.names()}
    # Two GPUs per replica are dedicated; 50 GiB per GPU fits A100-80GB, H100-80GB and H200 at one price.
    tie = rec(options={"rates": same}, workload_type="realtime_inference", gpu_memory_gb=100, gpu_count=2)
    assert tie.gpu_model == "A100-80GB"
    # Training at one price everywhere: the most work per hour; H100 and H200 tie (989 TFLOPS), the smaller wins.
    assert rec(options={"rates": same}, workload_type="training", gpu_memory_gb=8).gpu_model == "H100-80GB"


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
    h100 = Catalog((BUILTIN_CATALOG.get("H100-80GB"),))
    four_way = {"time_slice_replicas": {"H100-80GB": 4}}
    result = rec(catalog=h100, options=four_way, workload_type="batch_inference", gpu_memory_gb=20)
    # 20 GiB per tenant is more than a quarter of an H100 (79.25 / 4 = 19.81 GiB, 85 % of it 16.84):
    # MIG instead, and 3g.40gb (39.5 GiB) holds it.
    assert (result.strategy, result.mig_profile, result.gpu_model) == (M, "3g.40gb", "H100-80GB")
    assert "No catalog model can time-slice 20 GiB (it needs 23.53 GiB with headroom)" in text(result)
    assert "at most 19.81 GiB here (H100-80GB)" in text(result)
    # 40 GiB still time-slices: two tenants of an H200 hold 59.67 GiB each with headroom.
    two_way = rec(workload_type="batch_inference", gpu_memory_gb=40)
    assert (two_way.strategy, two_way.time_slice_replicas) == (TS, 2)


def test_mig_that_fits_no_partial_profile_falls_back_to_dedicated():
    result = rec(workload_type="realtime_inference", gpu_memory_gb=58, latency_sensitive=False)
    assert (result.strategy, result.gpu_model) == (D, "A100-80GB")
    assert "the largest is H200 3g.71gb, which offers 67.45 GiB" in text(result)


def test_time_slicing_picks_another_model_when_the_cheapest_is_too_small():
    result = rec(workload_type="development", gpu_memory_gb=4)
    assert (result.strategy, result.gpu_model) == (TS, "T4")  # 15 GiB x 0.85 / 3 = 4.25 GiB per tenant
    three_way = rec(workload_type="development", gpu_memory_gb="4.01")
    assert (three_way.strategy, three_way.gpu_model, three_way.time_slice_replicas) == (TS, "T4", 3)
    bigger = rec(workload_type="development", gpu_memory_gb="6.38")  # more than 85 % of T4 / 2
    assert bigger.strategy is TS
    assert bigger.gpu_model != "T4"


# --- the name's GB is not the memory a process can use ---------------------------------------------------------------

MARKETED_SIZES = [
    # (model, GiB asked for, MIG profile the name alone would give, what fits with 15 % headroom)
    ("A100-40GB", 5, "1g.5gb", "2g.10gb"),  # 1g.5gb offers 4.75 GiB
    ("H100-80GB", 10, "1g.10gb", "2g.20gb"),  # 1g.10gb offers 9.75 GiB
    ("A100-40GB", 20, "3g.20gb", None),  # 3g.20gb offers 19.62 GiB: a dedicated GPU
]


@pytest.mark.parametrize(("model", "memory", "by_name", "fitted"), MARKETED_SIZES)
def test_slices_are_fitted_against_usable_memory_with_headroom(model, memory, by_name, fitted):
    result = rec(workload_type="realtime_inference", latency_sensitive=False, gpu_memory_gb=memory, gpu_model=model)
    assert result.mig_profile == fitted != by_name
    if fitted is not None:
        assert f"which needs {format_needed(memory)} GiB with headroom" in text(result)
        assert "the slice offers" in text(result)


def format_needed(memory):
    return f"{(Decimal(memory) / Decimal('0.85')).quantize(Decimal('0.01'), 'ROUND_UP').normalize():f}"


def test_forty_gib_is_not_placed_on_a_forty_gb_gpu():
    result = rec(workload_type="training", gpu_memory_gb=40)
    assert result.gpu_model != "A100-40GB"  # 39.5 GiB usable: 40 GiB would not even load
    errors = refusal(workload_type="training", gpu_memory_gb=40, gpu_model="A100-40GB")
    assert (
        "which needs 47.06 GiB per GPU with headroom, but one A100-40GB GPU offers 39.5 GiB"
        in (errors["gpu_memory_gb"][0])
    )
