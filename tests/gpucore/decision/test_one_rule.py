"""One rule decides what is permitted: the recommendation, its alternatives and the what-if table agree on every
(model, strategy) that fits, because all three ask ``why_not_permitted``."""

import pytest

from gpucore.decision import BUILTIN_CATALOG, WorkloadProfile, recommend
from gpucore.decision.whatif import compare

OFFERS = frozenset(
    {
        ("A100-40GB", "mig", "3g.20gb"),
        ("A100-40GB", "mig", "2g.10gb"),
        ("A100-40GB", "dedicated", None),
        ("H100-80GB", "dedicated", None),
        ("L4", "time-slicing", None),
        ("L4", "dedicated", None),
    }
)
CATALOG = BUILTIN_CATALOG.restricted_to(["A100-40GB", "H100-80GB", "L4"])

PROFILES = [
    # A 7B model served at 14 GiB: latency-sensitive over 10 GB is dedicated, yet a 3g.20gb slice is allowed.
    {"workload_type": "realtime_inference", "gpu_memory_gb": 14},
    {"workload_type": "realtime_inference", "gpu_memory_gb": 14, "sla_tier": "tier1_realtime", "replicas": 2},
    {"workload_type": "batch_inference", "gpu_memory_gb": 6, "latency_p99_ms": 30},
    {"workload_type": "development", "gpu_memory_gb": 4},
    {"workload_type": "training", "gpu_memory_gb": 60, "gpu_count": 2},
]


@pytest.mark.parametrize("fields", PROFILES)
def test_the_recommendation_its_alternatives_and_the_what_if_agree(fields):
    profile = WorkloadProfile.from_mapping(fields)
    result = recommend(profile, CATALOG, offered=OFFERS)
    listed = {(result.gpu_model, result.strategy): True}
    listed |= {(a.gpu_model, a.strategy): a.permitted for a in result.alternatives}
    table = {(o.gpu_model, o.strategy): o.permitted for o in compare(profile, CATALOG, offered=OFFERS) if o.fits}
    # Every option the what-if shows as fitting is listed, with the same verdict.
    assert {key: listed.get(key) for key in table} == table


def test_a_slice_the_what_if_allows_is_a_permitted_alternative_with_the_reason_it_was_not_chosen():
    profile = WorkloadProfile.from_mapping({"workload_type": "realtime_inference", "gpu_memory_gb": 14})
    result = recommend(profile, CATALOG, offered=OFFERS)
    assert result.strategy.value == "dedicated"  # on the cheapest GPU that holds it
    whatif = {(o.gpu_model, o.strategy.value): o for o in compare(profile, CATALOG, offered=OFFERS)}
    assert whatif[("A100-40GB", "mig")].permitted and whatif[("A100-40GB", "mig")].mig_profile == "3g.20gb"
    [mig] = [a for a in result.alternatives if (a.gpu_model, a.strategy.value) == ("A100-40GB", "mig")]
    assert (mig.permitted, mig.mig_profile) == (True, "3g.20gb")
    assert any(t.startswith("Not chosen: ") and "latency-sensitive" in t for t in mig.tradeoffs)
