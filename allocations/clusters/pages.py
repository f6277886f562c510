"""What the cluster pages show (platform admins): each pool's capacity, allocation and drift, the drifted requests
and the GPU Operator ConfigMaps."""

from __future__ import annotations

from django.utils import timezone

from allocations.clusters.placement import gpu_hourly_rates, gpu_price
from allocations.clusters.rendering import pool_context
from allocations.models import NodePool, RequestStatus
from allocations.reference_data import catalog_from_db
from allocations.selectors import User, clusters_visible_to, gpu_requests_visible_to
from allocations.teams.quota_usage import units_allocated_by_pool
from allocations.teams.reservation_holds import reserved_unclaimed_by_pool, upcoming_reservations_by_pool
from gpucore.manifests import ManifestError, render_mig_parted_configmap, render_time_slicing_configmap, to_yaml
from gpucore.vocabulary import SharingMode

# Observed phases of an active request that mean its workload is not running as wanted (the cluster page lists them).
DRIFT_PHASES = ("NotFound", "Pending")


def node_pool_capacity_rows(
    *, pool: NodePool, allocated: dict[str, int], reserved: dict[str, int] | None = None
) -> dict[str, object]:
    """One pool's capacity per resource: configured, observed by inventory sync, allocated, reserved for a window
    covering now and not yet drawn by its team, free, and any drift."""
    observed = dict(pool.observed_allocatable or {})
    observed_nodes = observed.pop("nodes", None)
    synced = pool.observed_at is not None
    configured = pool.capacity()
    resources = list(dict.fromkeys([*configured, *allocated, *(observed if synced else {})]))
    rows = []
    for resource in resources:
        want = configured.get(resource, 0)
        seen = observed.get(resource, 0) if synced else None
        held = allocated.get(resource, 0)
        kept = (reserved or {}).get(resource, 0)
        rows.append(
            {
                "resource": resource,
                "configured": want,
                "observed": seen,
                "allocated": held,
                "reserved": kept,
                "free": want - held - kept,
                "over": held > want,
                "drift": synced and seen != want,
            }
        )
    node_drift = synced and observed_nodes is not None and observed_nodes != pool.node_count
    return {
        "pool": pool,
        "rows": rows,
        "synced": synced,
        "observed_nodes": observed_nodes,
        "node_drift": node_drift,
        "drift": node_drift or bool(pool.node_problems) or any(row["drift"] for row in rows),
    }


def cluster_overview_rows(*, user: User) -> list[dict[str, object]]:
    """Every cluster with its pools' GPUs, units allocated, last inventory sync and drift (platform approvers only)."""
    clusters = list(clusters_visible_to(user=user).prefetch_related("node_pools__gpu_model").order_by("name"))
    held = units_allocated_by_pool(cluster_ids=[cluster.pk for cluster in clusters])
    rates = gpu_hourly_rates()
    rows = []
    for cluster in clusters:
        pools = [
            node_pool_capacity_rows(pool=pool, allocated=held.get(pool.pk, {})) for pool in cluster.node_pools.all()
        ]
        synced_at = [item["pool"].observed_at for item in pools if item["synced"]]
        rows.append(
            {
                "cluster": cluster,
                "pool_count": len(pools),
                "gpu_total": sum(item["pool"].gpu_total for item in pools),
                "allocated": sum(row["allocated"] for item in pools for row in item["rows"]),
                "last_synced": max(synced_at) if synced_at else None,
                "never_synced": sum(1 for item in pools if not item["synced"]),
                "drifted_pools": sum(1 for item in pools if item["drift"]),
                "unpriced_pools": sorted(
                    item["pool"].name for item in pools if gpu_price(item["pool"].gpu_model, rates=rates).hourly is None
                ),
            }
        )
    return rows


def cluster_gpu_operator_configs(*, pools: list[NodePool], namespace: str = "gpu-operator") -> list[dict[str, object]]:
    """The GPU Operator ConfigMaps of a cluster's pools (time-slicing, mig-parted) as YAML, or why one cannot render."""
    configs = []
    renderers = (
        (
            "Device plugin (time-slicing)",
            "ClusterPolicy devicePlugin.config.name; nodes of a time-slicing pool carry "
            "nvidia.com/device-plugin.config=<pool name>.",
            SharingMode.TIME_SLICING,
            lambda contexts, namespace: render_time_slicing_configmap(contexts, namespace=namespace),
        ),
        (
            "MIG manager (mig-parted)",
            "ClusterPolicy migManager.config.name; nodes of a MIG pool carry nvidia.com/mig.config=<config name>.",
            SharingMode.MIG,
            lambda contexts, namespace: render_mig_parted_configmap(
                contexts, catalog=catalog_from_db(), namespace=namespace
            ),
        ),
    )
    for title, usage, mode, render in renderers:
        chosen = [pool for pool in pools if pool.sharing_mode == mode.value]
        entry = {"title": title, "usage": usage, "pool_count": len(chosen), "yaml": "", "error": ""}
        try:
            entry["yaml"] = to_yaml([render([pool_context(pool) for pool in chosen], namespace)])
        except ManifestError as exc:
            entry["error"] = str(exc)
        configs.append(entry)
    return configs


def cluster_detail_overview(*, user: User, name: str) -> dict[str, object]:
    """A cluster page: pool capacity and drift, drifted requests, GPU Operator configs; Cluster.DoesNotExist if not."""
    cluster = clusters_visible_to(user=user).get(name=name)
    pools = list(cluster.node_pools.select_related("gpu_model").order_by("name"))
    held = units_allocated_by_pool(cluster_ids=[cluster.pk])
    now = timezone.now()
    reserved = reserved_unclaimed_by_pool(pool_ids=[pool.pk for pool in pools], at=now)
    windows = upcoming_reservations_by_pool(pool_ids=[pool.pk for pool in pools], now=now)
    pool_rows = [
        node_pool_capacity_rows(pool=pool, allocated=held.get(pool.pk, {}), reserved=reserved.get(pool.pk, {}))
        for pool in pools
    ]
    for item in pool_rows:
        item["reservations"] = windows.get(item["pool"].pk, [])  # type: ignore[union-attr]
    rates = gpu_hourly_rates()
    for item in pool_rows:
        item["price"] = gpu_price(item["pool"].gpu_model, rates=rates)  # type: ignore[arg-type]
    drifted_requests = (
        gpu_requests_visible_to(user=user)
        .filter(cluster=cluster, status=RequestStatus.ACTIVE, observed_phase__in=DRIFT_PHASES)
        .order_by("observed_at", "id")
    )
    return {
        "cluster": cluster,
        "pool_rows": pool_rows,
        "drifted_requests": list(drifted_requests),
        "configs": cluster_gpu_operator_configs(pools=pools, namespace=cluster.gpu_operator_namespace) if pools else [],
        "observable": cluster.backend == "kubernetes",
    }
