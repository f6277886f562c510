"""Inventory sync: what the cluster's GPU nodes really advertise, recorded on the node pools they belong to."""

from __future__ import annotations

from collections import defaultdict

from django.db import transaction
from django.utils import timezone

from allocations.clusters.gateways.base import NodeInventory
from allocations.clusters.mig_layouts import refresh_live_mig_layouts
from allocations.models import Cluster, MigNodeLayout, NodePool, SharingMode
from gpucore.gfd_labels import MIG_CONFIG_STATE, NodeProblem, PoolExpectation, node_problems, pool_problems
from gpucore.manifests.gpu_operator import MIG_CONFIG_LABEL, MIG_CONFIG_PREFIX


def node_in_pool(node: NodeInventory, pool: NodePool) -> bool:
    """Whether a node belongs to a pool: its labels and its GPU Feature Discovery product."""
    # A node is in a pool when it carries the pool's labels and GPU Feature Discovery reports the pool's model
    # (time-sliced nodes report "<product>-SHARED").
    if not carries_pool_labels(node, pool):
        return False
    product = node.labels.get("nvidia.com/gpu.product", "")
    return product.removesuffix("-SHARED").startswith(pool.gpu_model.product_label)


def carries_pool_labels(node: NodeInventory, pool: NodePool) -> bool:
    return all(node.labels.get(key) == value for key, value in (pool.node_labels or {}).items())


def expectation(pool: NodePool) -> PoolExpectation:
    return PoolExpectation(pool.sharing_mode, pool.gpu_model.product_label, pool.time_slice_replicas)


def cluster_sync_inventory(*, cluster: Cluster, nodes: tuple[NodeInventory, ...]) -> dict[str, dict[str, int]]:
    """Sum allocatable GPU resources of each pool's nodes onto the pool and record how the nodes' GFD labels disagree
    with it; nodes matching no pool are reported."""
    pools = list(cluster.node_pools.select_related("gpu_model"))
    totals: dict[str, dict[str, int]] = defaultdict(dict)
    node_counts: dict[str, int] = defaultdict(int)
    checked: dict[str, list[tuple[str, list[NodeProblem]]]] = defaultdict(list)
    unmatched = {}
    members: dict[int, list[NodeInventory]] = defaultdict(list)
    for node in nodes:
        pool = next((p for p in pools if node_in_pool(node, p)), None)
        if pool is None:
            # A node carrying a pool's own labels but another product is that pool's problem, not a stranger.
            labelled = next((p for p in pools if p.node_labels and carries_pool_labels(node, p)), None)
            if labelled is not None:
                checked[labelled.name].append((node.name, node_problems(expectation(labelled), node.labels, {})))
            unmatched[node.name] = node.allocatable
            continue
        checked[pool.name].append((node.name, node_problems(expectation(pool), node.labels, node.allocatable)))
        members[pool.pk].append(node)
        node_counts[pool.name] += 1
        for resource, amount in node.allocatable.items():
            totals[pool.name][resource] = totals[pool.name].get(resource, 0) + amount
    now = timezone.now()
    with transaction.atomic():
        for pool in pools:
            observed = dict(totals.get(pool.name, {}))
            observed["nodes"] = node_counts.get(pool.name, 0)
            NodePool.objects.filter(pk=pool.pk).update(
                observed_allocatable=observed, observed_at=now, node_problems=pool_problems(checked.get(pool.name, []))
            )
            if pool.sharing_mode == SharingMode.MIG:
                sync_mig_node_layouts(pool=pool, nodes=members.get(pool.pk, []))
    return {"pools": dict(totals), "unmatched": unmatched}


def sync_mig_node_layouts(*, pool: NodePool, nodes: list[NodeInventory]) -> None:
    """Record the layout each node of a MIG pool runs, from the config its ``nvidia.com/mig.config`` label names once
    the MIG manager reports success: the pool's own config (the configured layout) or one a MIG plan rolled out on
    another node. Nodes whose label names neither keep what was recorded; the pool's live layouts follow."""
    rows = {row.node: row for row in MigNodeLayout.objects.filter(pool=pool)}
    known = {row.config_name: row for row in rows.values()}
    for node in nodes:
        if node.labels.get(MIG_CONFIG_STATE) != "success":
            continue  # being reconfigured, or failed: what it runs is not what its label names
        config = node.labels.get(MIG_CONFIG_LABEL, "")
        mine = rows.get(node.name)
        if config == MIG_CONFIG_PREFIX + pool.name and mine is not None:
            mine.delete()
        elif config in known and (mine is None or mine.config_name != config):
            source = known[config]
            MigNodeLayout.objects.update_or_create(
                pool=pool, node=node.name, defaults={"gpus": source.gpus, "config_name": config, "plan": source.plan}
            )
    refresh_live_mig_layouts(pool)
