"""Inventory sync on a DRA cluster: what NVIDIA's DRA driver publishes in its ResourceSlices, recorded per node pool.

A pool's GPUs are the driver's devices of the pool's product (``gpucore.dra_inventory``); MIG pools count their MIG
devices by profile, the others their whole GPUs; a dynamic MIG pool also keeps its GPUs (node and uuid), among which
its policy places instances. The recorded target (product name, smallest reported memory of a
GPU and of each profile) is what the pool's claims select on (``gpucore.manifests.dra``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from django.db import transaction

from allocations.models import Cluster, NodePool, SharingMode
from gpucore.dra_inventory import devices_from_slices, dra_target, product_label_of, target_as_json


def cluster_sync_dra_inventory(*, cluster: Cluster, slices: Iterable[Mapping[str, Any]]) -> dict[str, dict[str, Any]]:
    """Store on each pool what the driver publishes for its product; a pool with none gets an empty record."""
    devices = devices_from_slices(slices)
    pools = list(cluster.node_pools.select_related("gpu_model"))
    observed: dict[str, dict[str, Any]] = {}
    for pool in pools:
        label = pool.gpu_model.product_label
        mine = [d for d in devices if product_label_of(d.product_name) == label]
        wanted = "mig" if pool.sharing_mode == SharingMode.MIG else "gpu"
        counts: dict[str, int] = {}
        for device in mine:
            if device.type != wanted:
                continue
            key = f"mig-{device.profile}" if device.type == "mig" else "gpu"
            counts[key] = counts.get(key, 0) + 1
        target = dra_target(mine, product_label=label)
        record: dict[str, Any] = {}
        if target is not None:
            record = {
                "target": target_as_json(target),
                "devices": dict(sorted(counts.items())),
                "nodes": len({d.node for d in mine if d.type == wanted}),
            }
            if pool.dynamic_mig:
                # The GPUs the dynamic MIG policy chooses among (the driver carves instances out of them on demand).
                record["gpus"] = sorted(
                    ({"node": d.node, "uuid": d.uuid} for d in mine if d.type == "gpu" and d.uuid),
                    key=lambda gpu: (gpu["node"], gpu["uuid"]),
                )
        observed[pool.name] = record
    with transaction.atomic():
        for pool in pools:
            NodePool.objects.filter(pk=pool.pk).update(observed_dra=observed[pool.name])
    return observed
