"""gpucore.decision.whatif.compare: every (model, strategy) a pool offers, priced for the duration, judged by policy.

Expected figures are hand arithmetic on the catalog's list prices and datasheet throughputs (A100 312, H100 989
dense FP16/BF16 TFLOPS), not output of the code under test.
"""

from decimal import Decimal

import pytest

from gpucore.decision import BUILTIN_CATALOG, ProfileError, WorkloadProfile
from gpucore.decision.whatif import compare
from tests.gpucore.decision.cases import TS, D, M

OFFERS = {
    ("A100-40GB", "dedicated", None),
    ("A100-40GB", "mig", "1g.5gb"),
    ("A100-40GB", "mig", "2g.10gb"),
    ("H100-80GB", "dedicated", None),
    ("T4", "time-slicing", None),
}
CATALOG = BUILTIN_CATALOG.restricted_to(["A100-40GB", "H100-80GB", "T4"])


def run(offers=OFFERS, **fields):
    extra = {k: fields.pop(k) for k in ("reference_hours", "reference_model", "time_slice_replicas") if k in fields}
    return {
        (o.gpu_model, o.strategy): o
        for o in compare(WorkloadProfile.from_mapping(fields), CATALOG, offered=offers, **extra)
    }


def test_every_offered_pair_is_priced_for_the_duration():
    options = run(workload_type="batch_inference", gpu_memory_gb=3, duration_hours=10)
    assert set(options) == {("A100-40GB", D), ("A100-40GB", M), ("H100-80GB", D), ("T4", TS)}
    assert options[("H100-80GB", D)].duration_cost == Decimal("68.80")  # 6.88 x 10
    assert options[("T4", TS)].duration_cost == Decimal("0.526") / 4 * 10
    assert options[("T4", TS)].gpu_share == Decimal("0.25")
    mig = options[("A100-40GB", M)]
    assert (mig.mig_profile, mig.permitted) == ("1g.5gb", True)
    assert mig.gpu_share == Decimal(1) / 7  # max(1/7 compute, 1/8 memory)


def test_policy_marks_what_it_forbids():
    options = run(workload_type="batch_inference", gpu_memory_gb=4, latency_p99_ms=30)
    assert not options[("T4", TS)].permitted
    assert "jitter" in options[("T4", TS)].reason
    assert options[("A100-40GB", M)].permitted


def test_what_does_not_fit_says_why():
    options = run(workload_type="batch_inference", gpu_memory_gb=12)
    assert not options[("T4", TS)].fits
    assert options[("T4", TS)].reason.startswith("Time-slicing does not fit on T4")
    # 2g.10gb is the largest offered profile; the profile that fits (3g.20gb) is offered by no pool.
    mig = options[("A100-40GB", M)]
    assert mig.fits and not mig.permitted
    assert "No node pool here offers nvidia.com/mig-3g.20gb" in mig.reason


def test_training_cost_per_run_scales_by_fp16_throughput():
    options = run(
        workload_type="training",
        gpu_memory_gb=30,
        reference_hours=Decimal(10),
        reference_model="A100-40GB",
    )
    a100, h100 = options[("A100-40GB", D)].run, options[("H100-80GB", D)].run
    assert (a100.hours, a100.cost) == (Decimal(10), Decimal("27.4470"))  # 2.7447 x 10
    assert h100.speedup == Decimal(989) / Decimal(312)
    assert h100.hours.quantize(Decimal("0.001")) == Decimal("3.155")  # 10 x 312 / 989
    assert h100.cost.quantize(Decimal("0.01")) == Decimal("21.70")  # 6.88 x 3.1547
    assert options[("A100-40GB", M)].run is None


def test_reference_inputs_are_checked():
    with pytest.raises(ProfileError) as caught:
        run(workload_type="development", gpu_memory_gb=4, reference_hours=Decimal(5), reference_model="B300")
    assert set(caught.value.errors) == {"reference_hours", "reference_gpu_model"}


def test_several_time_sliced_pools_give_the_share_that_fits():
    options = run(workload_type="development", gpu_memory_gb=6, time_slice_replicas={"T4": [4, 2]})
    assert options[("T4", TS)].time_slice_replicas == 2
