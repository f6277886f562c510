"""Pools that serve the same allocation alike (another zone, another cluster) share the load: a request goes to the
one with the most units free, not always to the first."""

from __future__ import annotations

import pytest

from allocations.clusters.placement import place
from allocations.models import GpuModel, RequestStatus
from gpucore.decision import WorkloadProfile
from tests.factories import ClusterFactory, GpuRequestFactory, NodePoolFactory, dedicated_spec

pytestmark = pytest.mark.django_db

PROFILE = WorkloadProfile(workload_type="training", gpu_memory_gb=60, gpu_model="H100-80GB")


@pytest.fixture
def twins():
    """Two H100 pools of 16 GPUs on one cluster, dedicated, alike but for their names."""
    cluster = ClusterFactory(name="fleet")
    return NodePoolFactory(cluster=cluster, name="zone-a"), NodePoolFactory(cluster=cluster, name="zone-b")


def _hold(pool, units: int, status: str = RequestStatus.ACTIVE) -> None:
    GpuRequestFactory(
        node_pool=pool,
        cluster=pool.cluster,
        status=status,
        spec=dedicated_spec("H100-80GB", quantity=units),
        resource_name="nvidia.com/gpu",
        resource_units=units,
    )


def test_alike_pools_with_equal_room_keep_the_first(twins) -> None:
    assert place(PROFILE).node_pool == twins[0]


def test_a_request_goes_to_the_twin_with_more_units_free(twins) -> None:
    _hold(twins[0], 12)
    _hold(twins[1], 4)
    assert place(PROFILE).node_pool == twins[1]
    _hold(twins[1], 10)  # now zone-b has 2 free, zone-a 4
    assert place(PROFILE).node_pool == twins[0]


def test_only_requests_that_hold_units_count(twins) -> None:
    _hold(twins[0], 12, status=RequestStatus.PENDING_APPROVAL)
    _hold(twins[0], 12, status=RequestStatus.RELEASED)
    assert place(PROFILE).node_pool == twins[0]


def test_a_pool_of_another_model_is_no_twin(twins) -> None:
    NodePoolFactory(cluster=twins[0].cluster, name="a100", gpu_model=GpuModel.objects.get(name="A100-80GB"))
    _hold(twins[0], 16)
    _hold(twins[1], 16)
    assert place(PROFILE).node_pool in twins
