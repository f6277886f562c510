"""The named per-node MIG configs a cluster's mig-parted ConfigMap must hold (nodes reconfigured by MIG plans), and
the per-GPU layouts a pool's nodes run since.

Read by ``provisioning`` when it renders a cluster's own objects, so it sits below it and imports only models and
the pure core.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from allocations.models import MigNodeLayout, MigPlan, MigPlanStatus, NodePool
from gpucore.catalog import GpuModelSpec
from gpucore.manifests import mig_node_config, mig_node_config_name


def plan_node_config_name(plan_: MigPlan, node: str, model: GpuModelSpec, layouts: Sequence[dict[str, int]]) -> str:
    """The config name a plan labels ``node`` with: its layouts' name, suffixed with the node's revision once a
    resumed rollout retries it (the MIG manager ignores a label set again to the value it has)."""
    state = ((plan_.progress or {}).get("nodes") or {}).get(node) or {}
    return mig_node_config_name(model, layouts, revision=int(state.get("revision") or 1))


def mig_node_configs_of_cluster(cluster_id: int) -> dict[str, list[dict[str, Any]]]:
    """Named per-node configs the cluster's mig-parted ConfigMap must hold: nodes planned or being rolled out."""
    configs: dict[str, list[dict[str, Any]]] = {}
    rows = MigNodeLayout.objects.filter(pool__cluster_id=cluster_id).select_related("pool__gpu_model")
    for row in rows:
        configs[row.config_name] = mig_node_config(row.pool.gpu_model.to_spec(), row.gpus)
    plans = MigPlan.objects.filter(
        pool__cluster_id=cluster_id, status__in=[MigPlanStatus.APPROVED, MigPlanStatus.APPLYING, MigPlanStatus.FAILED]
    ).select_related("pool__gpu_model")
    for plan_ in plans:
        model = plan_.pool.gpu_model.to_spec()
        for node, layouts in plan_.node_layouts().items():
            configs[plan_node_config_name(plan_, node, model, layouts)] = mig_node_config(model, layouts)
    return configs


def refresh_live_mig_layouts(pool: NodePool) -> list[dict[str, Any]]:
    """Store on the pool the per-GPU layouts of its reconfigured nodes, each with its GPU count (the pool's other GPUs
    run the configured layout, ``NodePool.mig_gpu_layouts``)."""
    counts: dict[str, tuple[dict[str, int], int]] = {}
    for row in MigNodeLayout.objects.filter(pool=pool):
        for layout in row.gpus:
            devices = {name: count for name, count in sorted(layout.items()) if count}
            key = repr(devices)
            counts[key] = (devices, counts.get(key, (devices, 0))[1] + 1)
    # A GPU left with no instance still counts: it runs no configured layout either.
    live = [{"layout": layout, "gpus": gpus} for layout, gpus in counts.values()]
    if live != pool.live_mig_layouts:
        pool.live_mig_layouts = live
        pool.save(update_fields=["live_mig_layouts"])  # saved, not updated: placement's cached offers are renewed
    return live
