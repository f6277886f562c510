"""A team's KAI queue counts its quota in GPUs as chargeback does: a MIG unit as its share of the pool's layout."""

from __future__ import annotations

from decimal import Decimal

import pytest

from allocations.clusters.kai_queues import kai_queue_contexts, resource_gpu_shares
from allocations.models import ClusterScheduler, GpuModel, NodePool, Quota
from tests.factories import NodePoolFactory, QuotaFactory

pytestmark = pytest.mark.django_db


def test_mig_and_whole_gpu_quotas_become_gpus_in_the_teams_queue(demo_org) -> None:
    cluster = demo_org.cluster
    cluster.scheduler = ClusterScheduler.KAI
    cluster.save()
    mig = NodePoolFactory(cluster=cluster, name="a100-mig", gpu_model=GpuModel.objects.get(name="A100-40GB"))
    # A layout of 3g.20gb + 2g.10gb + two 1g.5gb: each instance bills its weight over the layout's weight.
    NodePool.objects.filter(pk=mig.pk).update(sharing_mode="mig", mig_devices={"3g.20gb": 1, "2g.10gb": 1, "1g.5gb": 2})
    Quota.objects.all().delete()
    QuotaFactory(team=demo_org.team, cluster=cluster, resource_name="nvidia.com/gpu", limit=4, borrowing_limit=2)
    QuotaFactory(team=demo_org.team, cluster=cluster, resource_name="nvidia.com/mig-1g.5gb", limit=8)

    pools = list(cluster.node_pools.select_related("gpu_model"))
    shares = resource_gpu_shares(pools)
    assert shares["nvidia.com/gpu"] == 1
    # Weights max(c/7, m/8): 3g.20gb 1/2, 2g.10gb 2/7, 1g.5gb 1/7 each; the layout weighs 15/14, so one 1g.5gb
    # bills (1/7) / (15/14) = 2/15 of a GPU.
    assert shares["nvidia.com/mig-1g.5gb"] == Decimal(2) / Decimal(15)
    (queue,) = [q for q in kai_queue_contexts(cluster, pools) if q.team.slug == demo_org.team.slug]
    assert queue.gpu_quota == (4 + Decimal(16) / Decimal(15)).quantize(Decimal("0.000001")).normalize()
    assert queue.gpu_limit == queue.gpu_quota + 2
    assert queue.over_quota_weight == 1
