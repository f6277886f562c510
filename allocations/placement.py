"""Placement: recommend for a profile against the pools that exist, and pick the pool that serves the result.

Reads only. The framework is pure and knows nothing of pools; this module tells it which (model, strategy, MIG
profile) options the candidate pools offer and their time-slicing replicas, so the recommendation (and the preview)
always describes something a pool can run, then finds that pool.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.utils.module_loading import import_string

from allocations.models import Cluster, NodePool, SharingMode
from allocations.selectors import catalog_from_db, tiers_by_slug
from gpucore.decision import ProfileError, Recommendation, WorkloadProfile, recommend

_MODE_FOR_STRATEGY = {"dedicated": SharingMode.NONE, "mig": SharingMode.MIG, "time-slicing": SharingMode.TIME_SLICING}


@dataclass(frozen=True)
class Placement:
    """The frozen spec of a request and the pool it goes to."""

    spec: dict[str, Any]
    node_pool: NodePool
    recommendation: Recommendation


def candidate_pools(cluster: Cluster | None = None) -> list[NodePool]:
    """Pools of active clusters (or of one cluster) that a request may be placed on."""
    pools = NodePool.objects.filter(cluster__is_active=True).select_related("cluster", "gpu_model")
    if cluster is not None:
        pools = pools.filter(cluster=cluster)
    return list(pools.order_by("cluster__name", "name"))


def gpu_hourly_rates() -> dict[str, Any]:
    """Hourly price per whole GPU by model from the configured price provider; empty when none (catalog prices)."""
    provider = settings.GPU_PRICE_PROVIDER
    if not provider:
        return {}
    return import_string(provider)()


def _offerings(pools: list[NodePool]) -> set[tuple[str, str, str | None]]:
    """(model, strategy, MIG profile) triples the pools can serve."""
    offers: set[tuple[str, str, str | None]] = set()
    for pool in pools:
        model = pool.gpu_model.name
        if pool.sharing_mode == SharingMode.MIG:
            offers.update((model, "mig", profile) for profile in pool.mig_devices or {})
        elif pool.sharing_mode == SharingMode.TIME_SLICING:
            offers.add((model, "time-slicing", None))
        else:
            offers.add((model, "dedicated", None))
    return offers


def recommend_for_pools(profile: WorkloadProfile, pools: list[NodePool]) -> Recommendation:
    """Run the framework over what these pools offer: their GPU models, sharing modes, MIG layouts and replicas."""
    catalog = catalog_from_db()
    offered_models = sorted({pool.gpu_model.name for pool in pools})
    if not offered_models:
        raise ProfileError({"cluster": ["No active cluster has a GPU node pool yet. Ask a platform admin."]})
    if profile.gpu_model is not None and profile.gpu_model in catalog:
        wanted = catalog.get(profile.gpu_model).name
        if wanted not in offered_models:
            raise ProfileError(
                {"gpu_model": [f"No node pool offers {wanted} here. Pools offer: {', '.join(offered_models)}."]}
            )
    if profile.gpu_model is None:
        catalog = catalog.restricted_to(offered_models)
    # Every time-sliced pool counts: two T4 pools of 4 and 2 tenants give the framework both shares to choose from.
    replicas: dict[str, set[int]] = {}
    # The largest node of each model's dedicated pools: a replica's GPUs must share one node.
    node_sizes: dict[str, int] = {}
    for pool in pools:
        model = pool.gpu_model.name
        if pool.sharing_mode == SharingMode.TIME_SLICING and pool.time_slice_replicas:
            replicas.setdefault(model, set()).add(pool.time_slice_replicas)
        elif pool.sharing_mode == SharingMode.NONE and pool.gpus_per_node:
            node_sizes[model] = max(node_sizes.get(model, 0), pool.gpus_per_node)
    offers = _offerings(pools)
    return recommend(
        profile,
        catalog,
        tiers=tiers_by_slug(),
        rates=gpu_hourly_rates(),
        time_slice_replicas=replicas,
        currency=settings.PORTAL_CURRENCY,
        offered=lambda model, strategy, mig_profile: (model, strategy, mig_profile) in offers,
        gpus_per_node=node_sizes,
    )


def _pool_for(recommendation: Recommendation, pools: list[NodePool]) -> NodePool | None:
    mode = _MODE_FOR_STRATEGY[str(recommendation.strategy)]
    for pool in pools:
        if pool.gpu_model.name != recommendation.gpu_model or pool.sharing_mode != mode:
            continue
        if mode == SharingMode.MIG and recommendation.mig_profile not in (pool.mig_devices or {}):
            continue
        if mode == SharingMode.TIME_SLICING and pool.time_slice_replicas != recommendation.time_slice_replicas:
            continue
        return pool
    return None


def place(profile: WorkloadProfile, *, cluster: Cluster | None = None) -> Placement:
    """Recommend among what the candidate pools offer and choose the pool; ProfileError when none can serve it."""
    pools = candidate_pools(cluster)
    recommendation = recommend_for_pools(profile, pools)
    pool = _pool_for(recommendation, pools)
    if pool is None:  # the framework only chooses offered options, so this means pools changed mid-call
        raise ProfileError({"cluster": ["The node pools changed while placing the request; please try again."]})
    spec = recommendation.to_dict()
    if pool.sharing_mode == SharingMode.TIME_SLICING:
        # A pool whose device plugin renames shares (renameByDefault) advertises them as nvidia.com/gpu.shared: the
        # request asks for, and the team's quota counts, that resource rather than whole GPUs.
        spec["resource_name"] = pool.shared_resource_name
    return Placement(spec=spec, node_pool=pool, recommendation=recommendation)
