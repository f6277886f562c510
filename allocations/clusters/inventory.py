"""Inventory sync: what the cluster's GPU nodes really advertise, recorded on the node pools they belong to."""

from __future__ import annotations

from collections import defaultdict

from django.db import transaction
from django.utils import timezone

from allocations.clusters.gateways.base import NodeInventory
from allocations.models import Cluster, NodePool


def node_in_pool(node: NodeInventory, pool: NodePool) -> bool:
    """Whether a node belongs to a pool: its labels and its GPU Feature Discovery product."""
    # A node is in a pool when it carries the pool's labels and GPU Feature Discovery reports the pool's model
    # (time-sliced nodes report "<product>-SHARED").
    labels = node.labels
    if any(labels.get(key) != value for key, value in (pool.node_labels or {}).items()):
        return False
    product = labels.get("nvidia.com/gpu.product", "")
    return product.removesuffix("-SHARED").startswith(pool.gpu_model.product_label)


def cluster_sync_inventory(*, cluster: Cluster, nodes: tuple[NodeInventory, ...]) -> dict[str, dict[str, int]]:
    """Sum allocatable GPU resources of each pool's nodes onto the pool; nodes matching no pool are reported."""
    pools = list(cluster.node_pools.select_related("gpu_model"))
    totals: dict[str, dict[str, int]] = defaultdict(dict)
    node_counts: dict[str, int] = defaultdict(int)
    unmatched = {}
    for node in nodes:
        pool = next((p for p in pools if node_in_pool(node, p)), None)
        if pool is None:
            unmatched[node.name] = node.allocatable
            continue
        node_counts[pool.name] += 1
        for resource, amount in node.allocatable.items():
            totals[pool.name][resource] = totals[pool.name].get(resource, 0) + amount
    now = timezone.now()
    with transaction.atomic():
        for pool in pools:
            observed = dict(totals.get(pool.name, {}))
            observed["nodes"] = node_counts.get(pool.name, 0)
            NodePool.objects.filter(pk=pool.pk).update(observed_allocatable=observed, observed_at=now)
    return {"pools": dict(totals), "unmatched": unmatched}
