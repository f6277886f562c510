"""recommend(): cost arithmetic (gpucore.pricing), the alternatives and the JSON contract.

Expected values come from the guide (Part 4 of shared/domain/000_*.txt), NVIDIA's MIG profile tables and hand
arithmetic, not from the code under test.
"""

import json
from decimal import Decimal

import pytest

from tests.gpucore.decision.cases import CORE_FIELDS, TS, D, M, rec, text

CONTRACT_KEYS = CORE_FIELDS | {"rationale", "alternatives"}
# Default TCO inputs of gpucore.pricing.TcoInputs, written out here: 36 months, PUE 1.4, 0.10/kWh, 25 %/year ops.
HOURS_36_MONTHS = Decimal(36 * 730)


def tco(purchase, watts):
    return (
        Decimal(purchase) / HOURS_36_MONTHS
        + Decimal(watts) / 1000 * Decimal("1.4") * Decimal("0.10")
        + Decimal(purchase) * Decimal("0.25") / Decimal(8760)
    )


# --- cost (gpucore.pricing; docs/cost-model.md, "The arithmetic") --------------------------------------------------


COSTS = [
    # id, fields, options, expected monthly amount (hand arithmetic), saving
    (
        "A100-40GB 1g.5gb: 2.7447 x 1/7 x 730",
        {"workload_type": "realtime_inference", "gpu_memory_gb": 4, "gpu_model": "A100-40GB"},
        {},
        Decimal("2.7447") / 7 * 730,
        85.7,
    ),
    (
        "A100-40GB 1g.5gb, tier2 (x1.0), 3 replicas",
        {
            "workload_type": "batch_inference",
            "gpu_memory_gb": 4,
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
            "replicas": 2,
        },
        {},
        Decimal("2.7447") * Decimal("1.5") * 730 * 2,
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
        "A100-40GB 3g.20gb, 2 replicas: weight max(3/7, 4/8) = 1/2",
        {"workload_type": "batch_inference", "gpu_memory_gb": 15, "gpu_model": "A100-40GB", "replicas": 2},
        {},
        Decimal("2.7447") / 2 * 730 * 2,
        50.0,
    ),
    (
        "A30 2g.12gb from the price book: n/4",
        {"workload_type": "realtime_inference", "gpu_memory_gb": 9, "latency_sensitive": False, "gpu_model": "A30"},
        {"rates": {"A30": Decimal("1.20")}},
        Decimal("1.20") * 2 / 4 * 730,
        50.0,
    ),
    (
        "price book beats the catalog",
        {"workload_type": "training", "gpu_memory_gb": 4, "gpu_model": "A100-40GB"},
        {"rates": {"A100-40GB": Decimal("2.00")}},
        Decimal("2.00") * 730,
        0.0,
    ),
    (
        "H100 dedicated x4 GPUs at the catalog list price (one basis, never TCO without a price book)",
        {"workload_type": "training", "gpu_memory_gb": 200, "gpu_count": 4, "gpu_model": "H100-80GB"},
        {},
        Decimal("6.88") * 4 * 730,
        0.0,
    ),
    (
        "A100-80GB 1g.10gb at the catalog list price: weight max(1/7, 1/8) = 1/7",
        {"workload_type": "realtime_inference", "gpu_memory_gb": 8, "gpu_model": "A100-80GB"},
        {},
        Decimal("3.4309") / 7 * 730,
        85.7,
    ),
    (
        "T4 time-sliced 2x from the pool",
        {"workload_type": "development", "gpu_memory_gb": 6, "gpu_model": "T4"},
        {"time_slice_replicas": {"T4": 2}},
        Decimal("0.526") / 2 * 730,
        50.0,
    ),
    (
        "A30 without a price",
        {"workload_type": "realtime_inference", "gpu_memory_gb": "4.5", "gpu_model": "A30"},
        {},
        None,
        75.0,
    ),
    (
        "non-USD currency never uses the catalog's USD prices",
        {"workload_type": "realtime_inference", "gpu_memory_gb": 4, "gpu_model": "A100-40GB"},
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
    assert rec(workload_type="realtime_inference", gpu_memory_gb=4, gpu_model="A100-40GB").to_dict()[
        "estimated_monthly_cost"
    ] == {"amount": "286.23", "currency": "USD"}
    tier1 = rec(
        workload_type="realtime_inference",
        gpu_memory_gb=5,
        gpu_model="A100-40GB",
        sla_tier="tier1_realtime",
        replicas=2,
    )
    assert tier1.to_dict()["estimated_monthly_cost"]["amount"] == "6010.89"  # 2.7447 x 1.5 x 730 x 2 = 6010.893
    assert "x SLA multiplier 1.5 x 730 h x 2 replicas = 6,010.89 USD/month" in text(tier1)


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
    result = rec(
        workload_type="realtime_inference",
        gpu_memory_gb=4,
        sla_tier="tier1_realtime",
        gpu_model="A100-40GB",
        replicas=2,
    )
    assert result.strategy is D
    alternatives = by_key(result)
    mig = alternatives[("A100-40GB", M)]
    assert (mig.permitted, mig.mig_profile) == (False, "1g.5gb")
    assert "Tier 1 - real-time" in mig.reason
    ts = alternatives[("A100-40GB", TS)]
    assert ts.permitted is False
    assert ts.time_slice_replicas == 4
    assert "Tier 1 - real-time" in ts.reason
    # Every other model's options are listed too; those the tier rules out say so, and permitted ones rank first.
    others = [a for a in result.alternatives if a.gpu_model != "A100-40GB"]
    assert all(a.permitted or "Tier 1 - real-time" in a.reason for a in others)
    assert {a.strategy for a in others if a.permitted} == {D}
    flags = [a.permitted for a in result.alternatives]
    assert flags == sorted(flags, reverse=True)
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
    assert "Cost: 2,003.63 USD/month, 1,502.72 USD more than the recommendation." in dedicated.tradeoffs
    mig = alternatives[("A100-40GB", M)]
    assert mig.mig_profile == "2g.10gb"
    assert "Not chosen: batch inference that is not latency-sensitive is time-sliced to save cost." in mig.tradeoffs
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
    # Models without a price (the catalog has none for the A30) rank after every priced one.
    assert ts_costs == priced + [None] * (len(ts_costs) - len(priced))


# --- the JSON contract --------------------------------------------------------------------------------------------


def test_to_dict_is_the_design_contract():
    result = rec(workload_type="realtime_inference", gpu_memory_gb=4, gpu_model="A100-40GB", replicas=2)
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
    source_dir = __import__("gpucore.decision", fromlist=["x"]).__path__[0]
    import pathlib

    for path in pathlib.Path(source_dir).glob("*.py"):
        code = path.read_text()
        for forbidden in ("django", "rest_framework", "celery", "kubernetes"):
            assert f"import {forbidden}" not in code, path
            assert f"from {forbidden}" not in code, path
