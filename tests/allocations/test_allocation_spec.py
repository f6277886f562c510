"""``GpuRequest.allocation_spec``: the frozen spec, typed, and completed from the request's own columns."""

from __future__ import annotations

import pytest

from allocations.models import GpuModel, SharingMode
from gpucore.manifests import ManifestError
from gpucore.vocabulary import Strategy
from tests.factories import GpuRequestFactory, NodePoolFactory, dedicated_spec

pytestmark = pytest.mark.django_db


def test_the_frozen_spec_is_read_as_typed_fields() -> None:
    request = GpuRequestFactory(spec=dedicated_spec("A100-40GB", quantity=2, replicas=3), gpu_count=1, replicas=1)
    spec = request.allocation_spec
    assert spec.strategy is Strategy.DEDICATED
    assert (spec.gpu_model, spec.resource_name, spec.quantity, spec.replicas) == ("A100-40GB", "nvidia.com/gpu", 2, 3)
    assert spec.mig_profile is None and spec.time_slice_replicas is None


def test_keys_missing_from_an_old_spec_come_from_the_request_and_its_pool() -> None:
    pool = NodePoolFactory(
        gpu_model=GpuModel.objects.get(name="A100-40GB"), sharing_mode=SharingMode.MIG, mig_devices={"3g.20gb": 2}
    )
    request = GpuRequestFactory(
        spec={}, node_pool=pool, resource_name="nvidia.com/mig-3g.20gb", gpu_count=1, replicas=2, resource_units=2
    )
    spec = request.allocation_spec
    assert spec.strategy is Strategy.MIG  # from the pool's sharing mode, not a guessed "dedicated"
    assert (spec.gpu_model, spec.mig_profile, spec.quantity, spec.replicas) == ("A100-40GB", "3g.20gb", 1, 2)


def test_a_time_sliced_request_without_replicas_in_its_spec_takes_the_pools() -> None:
    pool = NodePoolFactory(
        gpu_model=GpuModel.objects.get(name="T4"), sharing_mode=SharingMode.TIME_SLICING, time_slice_replicas=4
    )
    request = GpuRequestFactory(spec={"strategy": "time-slicing"}, node_pool=pool, resource_name="nvidia.com/gpu")
    spec = request.allocation_spec
    assert (spec.strategy, spec.gpu_model, spec.time_slice_replicas) == (Strategy.TIME_SLICING, "T4", 4)


def test_a_spec_that_contradicts_itself_is_refused() -> None:
    request = GpuRequestFactory(spec={**dedicated_spec(), "resource_name": "nvidia.com/mig-1g.10gb"})
    with pytest.raises(ManifestError, match="dedicated allocation uses"):
        request.allocation_spec  # noqa: B018 - reading the property is the test
