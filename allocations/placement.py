"""Placement: recommend for a profile against the pools that exist, and pick the pool that serves the result.

Reads only. The framework is pure and knows nothing of pools; this module feeds it the models and time-slicing
replicas the candidate pools really have, then walks the recommendation and its permitted alternatives, in rank
order, until one matches a pool's GPU model and sharing mode.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.conf import settings

from allocations.decision import Alternative, ProfileError, Recommendation, WorkloadProfile, recommend
from allocations.models import Cluster, NodePool, SharingMode
from allocations.selectors import catalog_from_db, tiers_by_slug

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
    """Hourly price per whole GPU by model from the price book; empty until one exists (catalog prices apply)."""
    try:
        from billing.selectors import current_gpu_rates
    except ImportError:
        return {}
    return current_gpu_rates()


def recommend_for_pools(profile: WorkloadProfile, pools: list[NodePool]) -> Recommendation:
    """Run the framework over the GPU models these pools offer, with their time-slicing replicas."""
    catalog = catalog_from_db()
    offered = sorted({pool.gpu_model.name for pool in pools})
    if not offered:
        raise ProfileError({"cluster": ["No active cluster has a GPU node pool yet. Ask a platform admin."]})
    if profile.gpu_model is not None and profile.gpu_model in catalog:
        wanted = catalog.get(profile.gpu_model).name
        if wanted not in offered:
            raise ProfileError(
                {"gpu_model": [f"No node pool offers {wanted} here. Pools offer: {', '.join(offered)}."]}
            )
    if profile.gpu_model is None:
        catalog = catalog.restricted_to(offered)
    replicas = {
        pool.gpu_model.name: pool.time_slice_replicas
        for pool in pools
        if pool.sharing_mode == SharingMode.TIME_SLICING and pool.time_slice_replicas
    }
    return recommend(
        profile,
        catalog,
        tiers=tiers_by_slug(),
        rates=gpu_hourly_rates(),
        time_slice_replicas=replicas,
        currency=settings.PORTAL_CURRENCY,
    )


def _pool_for(option: Recommendation | Alternative, pools: list[NodePool]) -> NodePool | None:
    mode = _MODE_FOR_STRATEGY[str(option.strategy)]
    for pool in pools:
        if pool.gpu_model.name != option.gpu_model or pool.sharing_mode != mode:
            continue
        if mode == SharingMode.MIG and option.mig_profile not in (pool.mig_devices or {}):
            continue
        if mode == SharingMode.TIME_SLICING and pool.time_slice_replicas != option.time_slice_replicas:
            continue
        return pool
    return None


def place(profile: WorkloadProfile, *, cluster: Cluster | None = None) -> Placement:
    """Recommend for the profile and choose the pool; raises ProfileError when no pool can serve it."""
    pools = candidate_pools(cluster)
    recommendation = recommend_for_pools(profile, pools)
    pool = _pool_for(recommendation, pools)
    if pool is not None:
        return Placement(spec=recommendation.to_dict(), node_pool=pool, recommendation=recommendation)
    for alternative in recommendation.alternatives:
        if not alternative.permitted:
            continue
        pool = _pool_for(alternative, pools)
        if pool is None:
            continue
        spec = recommendation.to_dict()
        chosen = alternative.to_dict()
        for key in ("tradeoffs", "permitted", "reason"):
            chosen.pop(key, None)
        spec.update(chosen)
        spec["rationale"] = [
            *spec["rationale"],
            f"No node pool offers the first choice ({recommendation.resource_name} on {recommendation.gpu_model}); "
            f"placed on pool {pool} as the next permitted alternative: {alternative.resource_name} on "
            f"{alternative.gpu_model}.",
        ]
        spec["alternatives"] = [a for a in spec["alternatives"] if a != alternative.to_dict()]
        return Placement(spec=spec, node_pool=pool, recommendation=recommendation)
    where = f"cluster {cluster}" if cluster is not None else "any active cluster"
    raise ProfileError(
        {
            "cluster": [
                f"No node pool on {where} can serve {recommendation.resource_name} on {recommendation.gpu_model} "
                "or any permitted alternative. Ask a platform admin for a pool with that GPU model and sharing mode."
            ]
        }
    )
