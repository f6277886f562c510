"""A pull reads as many hours at a time as the cluster's GPUs allow within the samples budget: a day for a few
hundred GPUs, three hours for 10,000, never less than one."""

from __future__ import annotations

import pytest

from allocations.models import NodePool
from billing.metering.pull_chunks import pull_chunk_hours

pytestmark = pytest.mark.django_db


def test_the_chunk_shrinks_with_the_fleet(demo_org, settings) -> None:
    settings.BILLING_PULL_MAX_SAMPLES_PER_QUERY = 2_000_000
    assert pull_chunk_hours(demo_org.cluster, devices=0) == 24
    assert pull_chunk_hours(demo_org.cluster, devices=1_000) == 24  # 1.44 M samples a day
    assert pull_chunk_hours(demo_org.cluster, devices=10_000) == 3
    assert pull_chunk_hours(demo_org.cluster, devices=50_000) == 1  # one hour is the least a read covers
    NodePool.objects.filter(cluster=demo_org.cluster).update(node_count=1250, gpus_per_node=8)
    pools = NodePool.objects.filter(cluster=demo_org.cluster).count()
    assert pull_chunk_hours(demo_org.cluster) == max(1, 2_000_000 // (10_000 * pools * 60))
