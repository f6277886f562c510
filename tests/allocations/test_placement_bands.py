"""place() hands the framework its pools' offers as data, and the framework remembers answers for them:
every answer must be the one a pool callback (never remembered) gives for the pools as they are at that moment, and a
pool added, changed or removed changes the next answer at once."""

from __future__ import annotations

from decimal import Decimal
from itertools import pairwise
from typing import Any

import pytest
from django.conf import settings

from allocations.clusters.placement import catalog_for_pools, gpu_hourly_rates, place, pool_for, pool_offers
from allocations.models import GpuModel, NodePool
from allocations.reference_data import tiers_by_slug
from gpucore.decision import ProfileError, WorkloadProfile, recommend
from tests.factories import NodePoolFactory

pytestmark = pytest.mark.django_db

PROFILES = [
    {"workload_type": workload, "gpu_memory_gb": memory, "gpu_model": model, "gpu_count": count}
    for workload in ("development", "realtime_inference", "batch_inference", "training")
    for memory in (Decimal("4.5"), Decimal(5), Decimal("9.9"), Decimal(10), Decimal(20), Decimal("20.1"), Decimal(60))
    for model in (None, "A100-40GB", "H100-80GB", "T4")
    for count in (1, 2)
]


def _pools() -> list[NodePool]:
    return list(NodePool.objects.filter(cluster__is_active=True).select_related("gpu_model").order_by("name"))


def _placed(fields: dict[str, Any]) -> Any:
    try:
        placement = place(WorkloadProfile(**fields))
    except ProfileError as error:
        return error.errors
    answer = placement.recommendation
    # The pool is pool_for's over the pools read afresh.
    assert placement.node_pool == pool_for(
        _pools(),
        gpu_model=answer.gpu_model,
        strategy=answer.strategy,
        mig_profile=answer.mig_profile,
        time_slice_replicas=answer.time_slice_replicas,
    )
    return answer.to_dict()


def _with_a_callback(fields: dict[str, Any]) -> Any:
    """What the framework answers for the pools read afresh, asked through a callback (nothing remembered)."""
    profile = WorkloadProfile(**fields)
    offered = pool_offers(_pools())
    try:
        return recommend(
            profile,
            catalog_for_pools(profile, offered),
            tiers=tiers_by_slug(),
            rates=gpu_hourly_rates(),
            time_slice_replicas=offered.time_slice_replicas,
            currency=settings.PORTAL_CURRENCY,
            offered=lambda model, strategy, mig_profile: (model, strategy, mig_profile) in offered.offers,
            gpus_per_node=offered.gpus_per_node,
            mig_layouts=offered.mig_layouts,
        ).to_dict()
    except ProfileError as error:
        return error.errors


def _answers() -> list[Any]:
    answers = []
    for fields in PROFILES:
        answer = _placed(fields)
        assert answer == _with_a_callback(fields), fields
        answers.append(answer)
    return answers


def test_remembered_placements_follow_every_pool_change_at_once(demo_org):
    model = {name: GpuModel.objects.get(name=name) for name in ("A100-40GB", "T4")}
    steps = [_answers()]  # the demo cluster: one dedicated H100 pool

    NodePoolFactory(
        cluster=demo_org.cluster,
        name="a100-mig",
        gpu_model=model["A100-40GB"],
        sharing_mode="mig",
        mig_devices={"1g.5gb": 2, "2g.10gb": 1, "3g.20gb": 1},
    )
    shared = NodePoolFactory(
        cluster=demo_org.cluster,
        name="t4-shared",
        gpu_model=model["T4"],
        sharing_mode="time-slicing",
        time_slice_replicas=4,
    )
    steps.append(_answers())  # two pools added

    shared.time_slice_replicas = 2
    shared.save()
    demo_org.pool.gpus_per_node = 1
    demo_org.pool.save()
    steps.append(_answers())  # two pools changed

    NodePool.objects.filter(name="a100-mig").delete()
    steps.append(_answers())  # one removed

    NodePool.objects.all().delete()
    steps.append(_answers())  # every pool removed

    # Each change gave some other answer at once (and the last refuses everything on its cluster).
    for before, after in pairwise(steps):
        assert before != after
    assert all(set(answer) == {"cluster"} for answer in steps[-1])
