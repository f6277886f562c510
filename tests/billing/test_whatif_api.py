"""POST /api/v1/what-if/: every (GPU model, strategy) a pool offers, priced for the duration, with quota and budget.

Real rows in the database; figures are hand arithmetic on the catalog's list prices (H100-80GB 6.88/h, T4 0.526/h,
A100-40GB 2.7447/h) and datasheet throughputs (A100 312, H100 989 dense FP16 TFLOPS).
"""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal

import pytest
from rest_framework.test import APIClient

from allocations.models import GpuModel, SharingMode
from billing.costs.whatif import team_what_if
from gpucore.profile import WorkloadProfile
from tests.factories import NodePoolFactory

URL = "/api/v1/what-if/"
# The month's figures count only the hours before the month ends: asked at a fixed time, not the clock's.
MID_MONTH = datetime(2026, 11, 10, 12, tzinfo=UTC)
A_DAY_BEFORE_THE_MONTH_ENDS = datetime(2026, 11, 30, tzinfo=UTC)

pytestmark = pytest.mark.django_db


@pytest.fixture
def pools(demo_org):
    """Beside the demo H100 dedicated pool (8 per node): an A100-40GB MIG pool and a 4-way T4 time-sliced pool."""
    NodePoolFactory(
        cluster=demo_org.cluster,
        name="a100-mig",
        gpu_model=GpuModel.objects.get(name="A100-40GB"),
        sharing_mode=SharingMode.MIG,
        mig_devices={"3g.20gb": 2},
    )
    NodePoolFactory(
        cluster=demo_org.cluster,
        name="t4-shared",
        gpu_model=GpuModel.objects.get(name="T4"),
        sharing_mode=SharingMode.TIME_SLICING,
        time_slice_replicas=4,
    )
    demo_org.team.monthly_gpu_hour_budget = Decimal(100)
    demo_org.team.save()
    return demo_org


def post(demo_org, role="member", **body):
    client = APIClient()
    client.force_authenticate(demo_org.user(role))
    return client.post(URL, {"team": "vision", **body}, format="json")


def by_key(response):
    assert response.status_code == 200, response.content
    return {(o["gpu_model"], o["strategy"]): o for o in response.json()["options"]}


def what_if_at(now, demo_org, **profile):
    """The API's answer for the Vision team, as the service gives it at ``now``."""
    answer = team_what_if(team=demo_org.team, profile=WorkloadProfile.from_mapping(profile), now=now)
    return {(o["gpu_model"], o["strategy"]): o for o in answer["options"]}


def test_every_offered_option_with_its_duration_cost_quota_and_budget(pools):
    options = by_key(post(pools, workload_type="batch_inference", gpu_memory_gb=3, duration_hours=48))

    assert set(options) == {("H100-80GB", "dedicated"), ("A100-40GB", "mig"), ("T4", "time-slicing")}
    h100 = options[("H100-80GB", "dedicated")]
    assert h100["estimated_cost"] == {"amount": "330.24", "currency": "USD", "hours": 48.0}  # 6.88 x 48
    assert h100["quota"]["allowed"] is True  # 1 of the team's 8 nvidia.com/gpu
    assert h100["budget"]["allowed"] is True
    t4 = options[("T4", "time-slicing")]
    assert t4["gpu_share"] == "0.25"
    assert t4["estimated_cost"]["amount"] == "6.31"  # 0.526 / 4 x 48 = 6.312
    mig = options[("A100-40GB", "mig")]
    # 3 GiB would fit 1g.5gb, which the pool does not offer: the smallest slice it offers, 3g.20gb (share 0.5).
    assert (mig["fits"], mig["permitted"], mig["mig_profile"], mig["gpu_share"]) == (True, True, "3g.20gb", "0.5")


def test_this_months_gpu_hours_cost_and_budget_left(pools):
    options = what_if_at(MID_MONTH, pools, workload_type="batch_inference", gpu_memory_gb=3, duration_hours=48)

    assert options[("H100-80GB", "dedicated")]["budget"] == {
        "allowed": True,
        "gpu_hours_this_month": 48.0,
        "cost_this_month": "330.24",  # 6.88 x 48
        "left_gpu_hours": 52.0,  # 100 - 0 so far - 48
    }
    assert options[("T4", "time-slicing")]["budget"]["gpu_hours_this_month"] == 12.0  # a quarter GPU for 48 h


def test_only_the_hours_before_the_month_ends_count_against_its_budget(pools):
    options = what_if_at(
        A_DAY_BEFORE_THE_MONTH_ENDS, pools, workload_type="batch_inference", gpu_memory_gb=3, duration_hours=48
    )

    assert options[("H100-80GB", "dedicated")]["estimated_cost"]["amount"] == "330.24"  # the whole run's cost
    assert options[("H100-80GB", "dedicated")]["budget"] == {
        "allowed": True,
        "gpu_hours_this_month": 24.0,
        "cost_this_month": "165.12",  # 6.88 x 24
        "left_gpu_hours": 76.0,
    }


def test_quota_and_budget_say_no_when_they_would(pools):
    body = {"workload_type": "training", "gpu_memory_gb": 300, "gpu_count": 8, "replicas": 2, "duration_hours": 10}
    h100 = by_key(post(pools, **body))[("H100-80GB", "dedicated")]
    assert h100["quota"]["allowed"] is False  # 16 GPUs against a quota of 8
    assert "16 asked" in h100["quota"]["message"]
    h100 = what_if_at(MID_MONTH, pools, **body)[("H100-80GB", "dedicated")]
    assert h100["budget"]["allowed"] is False  # 160 GPU-hours against 100
    assert h100["budget"]["left_gpu_hours"] == -60.0


def test_training_per_run_estimate_scales_by_fp16_throughput(pools):
    body = {
        "workload_type": "training",
        "gpu_memory_gb": 30,
        "reference_hours": 10,
        "reference_gpu_model": "A100-40GB",
    }
    h100 = by_key(post(pools, **body))[("H100-80GB", "dedicated")]
    assert h100["run"]["estimate"] is True
    assert h100["run"]["hours"] == 3.15  # 10 x 312 / 989 = 3.1547
    assert h100["run"]["cost"] == {"amount": "21.70", "currency": "USD"}  # 6.88 x 3.1547


def test_another_teams_slug_and_bad_reference_are_422s_naming_the_field(pools):
    other = post(pools, workload_type="development", gpu_memory_gb=4, team="nlp")
    assert other.status_code == 422 and "team" in other.json()
    bad = post(pools, workload_type="development", gpu_memory_gb=4, reference_hours=5, reference_gpu_model="A100-40GB")
    assert bad.status_code == 422  # well formed; per-run estimates are for training and HPC
    assert "reference_hours" in bad.json()


def test_anonymous_is_refused(pools):
    assert APIClient().post(URL, {"team": "vision"}, format="json").status_code in (401, 403)
