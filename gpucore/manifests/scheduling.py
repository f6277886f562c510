"""Where a request's pods may run: the tier and pool checks, the nodeSelector pinning the GPU product, the
tolerations of the pool's taints and the affinity that keeps replicas together or apart.

Pure: plain dicts out. Patterns from the guides (docs/reference-sources.md#guides): tolerating the GPU taint (guide 002
§4.3), NUMA alignment for HPC (guide 000 §4.1).
"""

from __future__ import annotations

from typing import Any

from gpucore.catalog import Catalog, GpuModelSpec
from gpucore.manifests.contexts import AllocationSpec, PoolContext
from gpucore.manifests.naming import (
    GPU_RESOURCE,
    PRODUCT_LABEL,
    REPLICAS_LABEL,
    REQUEST_LABEL,
    SHARED_PRODUCT_SUFFIX,
    SHARING_FOR_STRATEGY,
    ManifestError,
    catalog_model,
)
from gpucore.sla import SlaTierSpec
from gpucore.vocabulary import IsolationFloor, Strategy

# A label platform admins put on pools whose kubelets run the Topology Manager with this policy.
TOPOLOGY_POLICY_LABEL = "gpu-portal/topology-manager-policy"
HOSTNAME_LABEL = "kubernetes.io/hostname"


def check_tier(tier: SlaTierSpec | None, allocation: AllocationSpec) -> None:
    """Refuse an allocation below the tier's isolation floor (``ManifestError``)."""
    # The tier is a floor on isolation (sla.py, guide 000 §4.3); refuse to provision below it whatever the spec says.
    if tier is None:
        return
    if tier.isolation_floor == IsolationFloor.DEDICATED and allocation.strategy is not Strategy.DEDICATED:
        raise ManifestError(
            f"Tier '{tier.slug}' requires dedicated GPUs; the spec's strategy is {allocation.strategy}."
        )
    if tier.isolation_floor == IsolationFloor.HARDWARE and allocation.strategy is Strategy.TIME_SLICING:
        raise ManifestError(f"Tier '{tier.slug}' requires MIG or dedicated GPUs; time-slicing has no isolation.")


def check_pool(pool: PoolContext | None, allocation: AllocationSpec, model: GpuModelSpec, catalog: Catalog) -> None:
    """Refuse an allocation the pool cannot serve: another model, sharing mode, MIG profile or slicing."""
    if allocation.strategy is Strategy.MIG and not model.mig_capable:
        raise ManifestError(f"{model.name} is not MIG-capable.")
    if pool is None:
        return
    if catalog_model(catalog, pool.gpu_model).name != model.name:
        raise ManifestError(f"Pool '{pool.name}' has {pool.gpu_model} GPUs; the spec asks for {model.name}.")
    wanted = SHARING_FOR_STRATEGY[allocation.strategy]
    if pool.sharing_mode is not wanted:
        raise ManifestError(
            f"Pool '{pool.name}' shares GPUs by '{pool.sharing_mode}'; a {allocation.strategy} allocation needs "
            f"'{wanted}'."
        )
    if allocation.strategy is Strategy.MIG and pool.mig_layout_holding(allocation.mig_profile) is None:
        raise ManifestError(f"Pool '{pool.name}' has no '{allocation.mig_profile}' MIG devices.")
    if allocation.strategy is Strategy.TIME_SLICING:
        if pool.time_slice_replicas != allocation.time_slice_replicas:
            raise ManifestError(
                f"The spec was priced for {allocation.time_slice_replicas} replicas per GPU; pool '{pool.name}' "
                f"runs {pool.time_slice_replicas}."
            )
        if pool.rename_by_default != (allocation.resource_name != GPU_RESOURCE):
            raise ManifestError(
                f"Pool '{pool.name}' advertises shared GPUs under another name than '{allocation.resource_name}'."
            )


def node_selector(allocation: AllocationSpec, model: GpuModelSpec, pool: PoolContext | None) -> dict[str, str]:
    """The pod's nodeSelector: the spec's, pinned to the GPU product as GFD labels it, plus the pool's labels."""
    # On a time-sliced node GFD appends ``-SHARED`` to ``nvidia.com/gpu.product`` (unless shared GPUs are renamed) and
    # sets ``nvidia.com/gpu.replicas``; selecting on both keeps the pod on nodes sliced the way it was priced.
    selector = dict(allocation.node_selector)
    # The pool's label wins: it is the same catalog model (checked) but may be another board, e.g. PCIe for SXM4.
    product = pool.product_label if pool is not None else model.product_label
    asked = selector.get(PRODUCT_LABEL)
    if asked is not None and asked.removesuffix(SHARED_PRODUCT_SUFFIX) not in (product, model.product_label):
        raise ManifestError(f"spec.node_selector asks for '{asked}' but the GPU product is '{product}'.")
    if allocation.strategy is Strategy.TIME_SLICING:
        if allocation.resource_name == GPU_RESOURCE:
            product += SHARED_PRODUCT_SUFFIX
        selector[REPLICAS_LABEL] = str(allocation.time_slice_replicas)
    selector[PRODUCT_LABEL] = product
    for key, value in (pool.node_labels if pool is not None else {}).items():
        if selector.setdefault(key, value) != value:
            raise ManifestError(f"Node label '{key}': the spec selects '{selector[key]}', the pool has '{value}'.")
    return selector


def tolerations(pool: PoolContext | None) -> list[dict[str, Any]]:
    """The GPU node taint toleration (guide 003 "Tolerations for GPU Taints") plus one per taint of the pool."""
    result: list[dict[str, Any]] = [{"key": GPU_RESOURCE, "operator": "Exists", "effect": "NoSchedule"}]
    for taint in pool.taints if pool is not None else ():
        if taint.key == GPU_RESOURCE and taint.effect == "NoSchedule":
            continue  # already tolerated whatever its value
        if taint.value is None:
            toleration = {"key": taint.key, "operator": "Exists", "effect": taint.effect}
        else:
            toleration = {"key": taint.key, "operator": "Equal", "value": taint.value, "effect": taint.effect}
        if toleration not in result:
            result.append(toleration)
    return result


def topology_affinity(request_id: int, replicas: int) -> dict[str, Any]:
    """Prefer single-numa-node kubelets and, for several replicas, nodes already running this request's pods."""
    # A pod cannot choose the kubelet's Topology Manager policy; it can only prefer nodes whose admins run
    # single-numa-node (marked with our label) and be Guaranteed with whole cores so that policy applies to it.
    affinity: dict[str, Any] = {
        "nodeAffinity": {
            "preferredDuringSchedulingIgnoredDuringExecution": [
                {
                    "weight": 100,
                    "preference": {
                        "matchExpressions": [
                            {"key": TOPOLOGY_POLICY_LABEL, "operator": "In", "values": ["single-numa-node"]}
                        ]
                    },
                }
            ]
        }
    }
    if replicas > 1:
        # Pack the replicas of one simulation on as few nodes as fit, so their GPUs talk over NVLink/PCIe rather
        # than the network (guide 000 §4.1: HPC is "NUMA-sensitive", "Dedicated + Affinity").
        term = {"labelSelector": {"matchLabels": {REQUEST_LABEL: str(request_id)}}, "topologyKey": HOSTNAME_LABEL}
        affinity["podAffinity"] = {
            "preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 100, "podAffinityTerm": term}]
        }
    return affinity


def spread_across_nodes(request_id: int) -> list[dict[str, Any]]:
    """Topology spread keeping a serving request's replicas on at least two nodes, evenly."""
    # minDomains counts a pool of one node as too few nodes: the second replica then stays Pending rather than sit
    # behind the same reboot or driver update. matchLabelKeys spreads each rollout's pods among themselves.
    return [
        {
            "maxSkew": 1,
            "minDomains": 2,
            "topologyKey": HOSTNAME_LABEL,
            "whenUnsatisfiable": "DoNotSchedule",
            "labelSelector": {"matchLabels": {REQUEST_LABEL: str(request_id)}},
            "matchLabelKeys": ["pod-template-hash"],
            # Only the pool's nodes (the pod's nodeSelector) that the pod tolerates count as places to spread to.
            "nodeAffinityPolicy": "Honor",
            "nodeTaintsPolicy": "Honor",
        }
    ]
