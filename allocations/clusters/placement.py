"""Placement: recommend for a profile against the pools that exist, and pick the pool that serves the result.

Reads only. The framework is pure and knows nothing of pools; this module tells it which (model, strategy, MIG
profile) options the candidate pools offer and their time-slicing replicas, so the recommendation (and the preview)
always describes something a pool can run, then finds that pool.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from decimal import Decimal
from functools import lru_cache
from typing import Any, NamedTuple

from django.conf import settings
from django.db.models import Sum
from django.utils.module_loading import import_string

from allocations.models import QUOTA_HOLDING_STATUSES, Cluster, GpuModel, GpuRequest, NodePool, SharingMode
from allocations.reference_data import catalog_from_db, tiers_by_slug
from gpucore.catalog import mig_resource_name
from gpucore.decision import Catalog, NodePools, ProfileError, Recommendation, WorkloadProfile, recommend
from gpucore.pricing import CATALOG_PRICE_BASIS
from infra.reference_cache import REFERENCE_DATA, cached

_MODE_FOR_STRATEGY = {"dedicated": SharingMode.NONE, "mig": SharingMode.MIG, "time-slicing": SharingMode.TIME_SLICING}


@dataclass(frozen=True)
class Placement:
    """The frozen spec of a request and the pool it goes to."""

    spec: dict[str, Any]
    node_pool: NodePool
    recommendation: Recommendation


def candidate_pools(cluster: Cluster | None = None) -> list[NodePool]:
    """Pools of active clusters (or of one cluster) that a request may be placed on."""
    return list(_placement_inputs(cluster)[0])


class _Placing(NamedTuple):
    """The candidate pools, what they offer (also as the framework takes it, normalised once), and the pools serving
    each (model, strategy, MIG profile, time-slice replicas), in ``pool_for``'s order."""

    pools: tuple[NodePool, ...]
    offered: PoolOffers
    node_pools: NodePools
    serving: dict[tuple[str, str, str | None, int | None], tuple[NodePool, ...]]


def _placement_inputs(cluster: Cluster | None) -> _Placing:
    """The candidate pools and what they offer, read once per process until a cluster, pool or GPU model changes.

    Every recommendation and submission needs them and admins change them rarely; a save or delete of those rows
    replaces the reference data's token (``infra.reference_cache``), so a stale copy is never used. The pools are
    read, never saved.
    """

    def read() -> _Placing:
        pools = NodePool.objects.filter(cluster__is_active=True).select_related("cluster", "gpu_model")
        if cluster is not None:
            pools = pools.filter(cluster=cluster)
        ordered = tuple(pools.order_by("cluster__name", "name"))
        offered = pool_offers(list(ordered))
        return _Placing(ordered, offered, _node_pools(offered), _serving_pools(ordered))

    return cached(REFERENCE_DATA, f"placement:{cluster.pk if cluster is not None else '*'}", read)


def _node_pools(offered: PoolOffers) -> NodePools:
    return NodePools(
        offers=offered.offers,
        time_slice_replicas=offered.time_slice_replicas,
        gpus_per_node=offered.gpus_per_node,
        mig_layouts=offered.mig_layouts,
    )


_STRATEGY_OF_MODE = {mode: strategy for strategy, mode in _MODE_FOR_STRATEGY.items()}


def _serving_pools(
    pools: tuple[NodePool, ...],
) -> dict[tuple[str, str, str | None, int | None], tuple[NodePool, ...]]:
    """The pools that run each allocation, by (model, strategy, MIG profile or None, time-slice replicas or None),
    in order: the first is ``pool_for``'s answer."""
    serving: dict[tuple[str, str, str | None, int | None], list[NodePool]] = {}
    for pool in pools:
        model, strategy = pool.gpu_model.name, _STRATEGY_OF_MODE.get(pool.sharing_mode)
        if strategy == "mig":
            for profile in pool.mig_profiles():
                serving.setdefault((model, strategy, profile, None), []).append(pool)
        elif strategy == "time-slicing":
            serving.setdefault((model, strategy, None, pool.time_slice_replicas), []).append(pool)
        elif strategy == "dedicated":
            serving.setdefault((model, strategy, None, None), []).append(pool)
    return {key: tuple(found) for key, found in serving.items()}


def _resource_on(pool: NodePool, strategy: str, mig_profile: str | None) -> str:
    if strategy == "mig":
        return mig_resource_name(mig_profile or "")
    if strategy == "time-slicing":
        return pool.shared_resource_name
    return "nvidia.com/gpu"


def least_loaded(pools: tuple[NodePool, ...], *, strategy: str, mig_profile: str | None) -> NodePool:
    """Of pools that serve the same allocation alike, the one with the most units free now (the first on a tie).

    Taking always the first would queue every request on one pool while its twins (another zone, another cluster)
    stand empty. Free is capacity less what approved and running requests hold; approval checks again under the
    pool's lock.
    """
    if len(pools) == 1:
        return pools[0]
    held = dict(
        GpuRequest.objects.filter(node_pool__in=pools, status__in=QUOTA_HOLDING_STATUSES)
        .filter(resource_name__in={_resource_on(pool, strategy, mig_profile) for pool in pools})
        .values_list("node_pool_id")
        .annotate(units=Sum("resource_units"))
    )

    def free(pool: NodePool) -> int:
        return pool.capacity().get(_resource_on(pool, strategy, mig_profile), 0) - (held.get(pool.pk) or 0)

    return max(pools, key=free)  # max keeps the first of equals


def gpu_hourly_rates() -> dict[str, Any]:
    """Hourly price per whole GPU by model from the configured price provider; empty when none (catalog prices)."""
    provider = settings.GPU_PRICE_PROVIDER
    if not provider:
        return {}
    return _provider(provider)()


@lru_cache(maxsize=8)
def _provider(path: str) -> Any:
    """The price provider at ``path``, imported once (every recommendation asks; the setting names a function)."""
    return import_string(path)


@dataclass(frozen=True)
class GpuPrice:
    """The hourly price of one GPU of a model and where it comes from, or None and why there is none."""

    hourly: Decimal | None
    basis: str  # "price book", the catalog list price basis, or "" when unpriced
    currency: str

    @property
    def text(self) -> str:
        if self.hourly is None:
            return "No price: not in the price book, and the catalog has no list price for this model"
        return f"{self.hourly.quantize(Decimal('0.0001'))} {self.currency}/GPU-hour ({self.basis})"


def gpu_price(model: GpuModel, *, rates: Mapping[str, Any] | None = None) -> GpuPrice:
    """A model's GPU-hour price as recommendations use it: the price book's, else the catalog list price (USD only)."""
    rates = gpu_hourly_rates() if rates is None else rates
    folded = {str(name).casefold(): value for name, value in rates.items()}
    currency = settings.PORTAL_CURRENCY
    if model.name.casefold() in folded:
        return GpuPrice(Decimal(str(folded[model.name.casefold()])), "price book", currency)
    if currency == "USD" and model.list_hourly_price is not None:
        return GpuPrice(model.list_hourly_price, CATALOG_PRICE_BASIS, currency)
    return GpuPrice(None, "", currency)


def _offerings(pools: list[NodePool]) -> frozenset[tuple[str, str, str | None]]:
    """(model, strategy, MIG profile) triples the pools can serve."""
    offers: set[tuple[str, str, str | None]] = set()
    for pool in pools:
        model = pool.gpu_model.name
        if pool.sharing_mode == SharingMode.MIG:
            offers.update((model, "mig", profile) for profile in pool.mig_profiles())
        elif pool.sharing_mode == SharingMode.TIME_SLICING:
            offers.add((model, "time-slicing", None))
        else:
            offers.add((model, "dedicated", None))
    return frozenset(offers)


@dataclass(frozen=True)
class PoolOffers:
    """What a set of pools offers the framework: options, every time-sliced share, the largest dedicated node."""

    models: list[str]
    # Data, not a callback: the framework remembers its answers for these offers (keyed on them) as without pools.
    offers: frozenset[tuple[str, str, str | None]]
    # Every time-sliced pool counts: two T4 pools of 4 and 2 tenants give the framework both shares to choose from.
    time_slice_replicas: dict[str, set[int]]
    # The largest node of each model's dedicated pools: a replica's GPUs must share one node.
    gpus_per_node: dict[str, int]
    # (model, MIG profile) -> the layout of the first pool serving it (the one pool_for places on).
    mig_layouts: dict[tuple[str, str], dict[str, int]]


def pool_offers(pools: list[NodePool]) -> PoolOffers:
    """Gather the pools' GPU models, (model, strategy, MIG profile) options, time-slicing replicas and node sizes."""
    replicas: dict[str, set[int]] = {}
    node_sizes: dict[str, int] = {}
    layouts: dict[tuple[str, str], dict[str, int]] = {}
    for pool in pools:
        model = pool.gpu_model.name
        if pool.sharing_mode == SharingMode.MIG:
            for profile in pool.mig_profiles():
                layout = pool.mig_layout_holding(profile)
                if layout:
                    layouts.setdefault((model, profile), layout)
        if pool.sharing_mode == SharingMode.TIME_SLICING and pool.time_slice_replicas:
            replicas.setdefault(model, set()).add(pool.time_slice_replicas)
        elif pool.sharing_mode == SharingMode.NONE and pool.gpus_per_node:
            node_sizes[model] = max(node_sizes.get(model, 0), pool.gpus_per_node)
    return PoolOffers(
        models=sorted({pool.gpu_model.name for pool in pools}),
        offers=_offerings(pools),
        time_slice_replicas=replicas,
        gpus_per_node=node_sizes,
        mig_layouts=layouts,
    )


def catalog_for_pools(profile: WorkloadProfile, offered: PoolOffers) -> Catalog:
    """The catalog the framework chooses from: the pools' models (a named model must be one of them)."""
    catalog = catalog_from_db()
    if not offered.models:
        raise ProfileError({"cluster": ["No active cluster has a GPU node pool yet. Ask a platform admin."]})
    if profile.gpu_model is not None and profile.gpu_model in catalog:
        wanted = catalog.get(profile.gpu_model).name
        if wanted not in offered.models:
            raise ProfileError(
                {"gpu_model": [f"No node pool offers {wanted} here. Pools offer: {', '.join(offered.models)}."]}
            )
    if profile.gpu_model is None:
        catalog = _restricted(catalog, offered.models)
    return catalog


def _restricted(catalog: Catalog, models: list[str]) -> Catalog:
    """``catalog.restricted_to(models)``, one object per (catalog, models): the framework remembers its decisions per
    catalog object, so a new one per call would work every decision out afresh."""
    key = (id(catalog), tuple(models))
    known = _RESTRICTED.get(key)
    if known is None or known[0] is not catalog:
        if len(_RESTRICTED) >= 64:  # bounded: each reference data version brings a new catalog
            _RESTRICTED.clear()
        known = _RESTRICTED[key] = (catalog, catalog.restricted_to(models))  # keeps the catalog: its id() is unique
    return known[1]


_RESTRICTED: dict[tuple[int, tuple[str, ...]], tuple[Catalog, Catalog]] = {}


def recommend_for_pools(
    profile: WorkloadProfile,
    pools: list[NodePool],
    *,
    offered: PoolOffers | None = None,
    node_pools: NodePools | None = None,
) -> Recommendation:
    """Run the framework over what these pools offer: their GPU models, sharing modes, MIG layouts and replicas.

    ``offered`` and ``node_pools`` are what ``pool_offers`` and ``NodePools`` make of ``pools``, where the caller
    keeps them (place(): once per reference data version).
    """
    offered = pool_offers(pools) if offered is None else offered
    catalog = catalog_for_pools(profile, offered)
    return recommend(
        profile,
        catalog,
        tiers=tiers_by_slug(),
        rates=gpu_hourly_rates(),
        currency=settings.PORTAL_CURRENCY,
        # The offers as data, never a callback: the framework then remembers its answers for them.
        pools=_node_pools(offered) if node_pools is None else node_pools,
    )


def pool_for(
    pools: list[NodePool],
    *,
    gpu_model: str,
    strategy: str,
    mig_profile: str | None = None,
    time_slice_replicas: int | None = None,
) -> NodePool | None:
    """The first pool (by cluster and name) that runs this allocation: model, sharing mode, MIG profile, replicas."""
    mode = _MODE_FOR_STRATEGY[str(strategy)]
    for pool in pools:
        if pool.gpu_model.name != gpu_model or pool.sharing_mode != mode:
            continue
        if mode == SharingMode.MIG and mig_profile not in pool.mig_profiles():
            continue
        if mode == SharingMode.TIME_SLICING and pool.time_slice_replicas != time_slice_replicas:
            continue
        return pool
    return None


def place(profile: WorkloadProfile, *, cluster: Cluster | None = None) -> Placement:
    """Recommend among what the candidate pools offer and choose the pool; ProfileError when none can serve it."""
    placing = _placement_inputs(cluster)
    recommendation = recommend_for_pools(
        profile, list(placing.pools), offered=placing.offered, node_pools=placing.node_pools
    )
    # The pools pool_for would consider, looked up (the strategy's other fields are None where it does not read them).
    strategy = recommendation.strategy.value
    mig_profile = recommendation.mig_profile if strategy == "mig" else None
    serving = placing.serving.get(
        (
            recommendation.gpu_model,
            strategy,
            mig_profile,
            recommendation.time_slice_replicas if strategy == "time-slicing" else None,
        )
    )
    pool = least_loaded(serving, strategy=strategy, mig_profile=mig_profile) if serving else None
    if pool is None:  # the framework only chooses offered options, so this means pools changed mid-call
        raise ProfileError({"cluster": ["The node pools changed while placing the request; please try again."]})
    spec = recommendation.to_dict()
    if pool.sharing_mode == SharingMode.TIME_SLICING:
        # A pool whose device plugin renames shares (renameByDefault) advertises them as nvidia.com/gpu.shared: the
        # request asks for, and the team's quota counts, that resource rather than whole GPUs.
        spec["resource_name"] = pool.shared_resource_name
    return Placement(spec=spec, node_pool=pool, recommendation=recommendation)
