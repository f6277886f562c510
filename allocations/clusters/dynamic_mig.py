"""Dynamic MIG as the admission policy of a pool whose DRA driver creates MIG instances on demand.

There is no layout to roll out: when a request is approved onto such a pool, the MIG planner's rule
(``gpucore.mig_planner.dynamic.choose_gpu``) picks the GPU of each of its instances among the GPUs the driver
publishes (inventory sync stores them on the pool), given the instances the policy placed for requests that still
hold the pool. The choice is stored (``DynamicMigInstance``) and the request's claim selects a slice of that GPU.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from django.core.exceptions import ValidationError

from allocations.models import QUOTA_HOLDING_STATUSES, DynamicMigInstance, GpuRequest, NodePool, SharingMode
from gpucore.catalog import GpuModelSpec, mig_profile_of_resource
from gpucore.mig_planner.dynamic import choose_gpu, fragmented_gpus


@dataclass
class PolicyGpu:
    """One GPU the driver publishes for the pool, and the instances the policy placed on it."""

    node: str
    uuid: str
    instances: dict[str, int] = field(default_factory=dict)
    holders: list[int] = field(default_factory=list)


def runs_dynamic_mig(pool: NodePool | None) -> bool:
    """Whether the pool's MIG instances are placed by the policy: a dynamic MIG pool on a DRA cluster."""
    return (
        pool is not None
        and pool.dynamic_mig
        and pool.sharing_mode == SharingMode.MIG
        and pool.cluster.device_api == "dra"
    )


def policy_gpus(pool: NodePool, *, excluding: int | None = None) -> list[PolicyGpu]:
    """The pool's GPUs (as inventory sync last read them from the driver) with the instances placed for requests that
    hold the pool; ``excluding`` leaves one request's own out."""
    gpus = [
        PolicyGpu(node=str(gpu.get("node") or ""), uuid=str(gpu["uuid"]))
        for gpu in (pool.observed_dra or {}).get("gpus") or []
        if gpu.get("uuid")
    ]
    by_uuid = {gpu.uuid: gpu for gpu in gpus}
    placed = DynamicMigInstance.objects.filter(pool=pool, request__status__in=QUOTA_HOLDING_STATUSES)
    if excluding is not None:
        placed = placed.exclude(request_id=excluding)
    for instance in placed.only("gpu_uuid", "node", "profile", "request_id"):
        gpu = by_uuid.get(instance.gpu_uuid)
        if gpu is None:  # the driver no longer publishes it; its instance still counts where it was
            gpu = by_uuid[instance.gpu_uuid] = PolicyGpu(node=instance.node, uuid=instance.gpu_uuid)
            gpus.append(gpu)
        gpu.instances[instance.profile] = gpu.instances.get(instance.profile, 0) + 1
        if instance.request_id not in gpu.holders:
            gpu.holders.append(instance.request_id)
    return gpus


def _choose(model: GpuModelSpec, gpus: list[PolicyGpu], profile: str, count: int) -> list[PolicyGpu] | None:
    chosen = []
    layouts = [dict(gpu.instances) for gpu in gpus]
    for _ in range(count):
        placement = choose_gpu(model, layouts, profile)
        if placement is None:
            return None
        layouts[placement.gpu][profile] = layouts[placement.gpu].get(profile, 0) + 1
        chosen.append(gpus[placement.gpu])
    return chosen


def admit_dynamic_mig(request: GpuRequest, pool: NodePool) -> list[DynamicMigInstance]:
    """Place the request's instances by the policy, or refuse on ``capacity`` naming why. Called with the pool's row
    locked (the approval's capacity check); a request already placed keeps its GPUs."""
    profile = mig_profile_of_resource(request.resource_name)
    if profile is None:
        raise ValidationError({"capacity": [f"{request.resource_name} is not a MIG resource of pool {pool}."]})
    existing = list(request.dynamic_mig_instances.all())
    if existing:
        return existing
    gpus = policy_gpus(pool, excluding=request.pk)
    if not gpus:
        raise ValidationError(
            {
                "capacity": [
                    f"Node pool {pool} places MIG instances dynamically, but the DRA driver has published no "
                    f"{pool.gpu_model.name} GPU for it yet: run the inventory sync, or check the driver's "
                    "ResourceSlices."
                ]
            }
        )
    chosen = _choose(pool.gpu_model.to_spec(), gpus, profile, request.resource_units)
    if chosen is None:
        raise ValidationError(
            {
                "capacity": [
                    f"No GPU of node pool {pool} can host {request.resource_units} more {profile} instance(s) beside "
                    "those placed for running requests. Approve it when others are released, or add nodes."
                ]
            }
        )
    return DynamicMigInstance.objects.bulk_create(
        DynamicMigInstance(pool=pool, request=request, node=gpu.node, gpu_uuid=gpu.uuid, profile=profile)
        for gpu in chosen
    )


def request_dynamic_mig_gpus(request: GpuRequest) -> tuple[str, ...]:
    """The GPUs (uuids) the policy chose for a request's instances, for its claim; empty when it has none."""
    if not runs_dynamic_mig(request.node_pool):
        return ()
    return tuple(sorted({row.gpu_uuid for row in request.dynamic_mig_instances.all()}))


def dynamic_mig_overview(pool: NodePool, profiles: Sequence[str] | None = None) -> dict[str, Any]:
    """What the pool page shows: per GPU the policy's instances and free memory slices, where the next instance of
    each profile would go, and beside it what the driver reports (its devices per profile)."""
    model = pool.gpu_model.to_spec()
    gpus = policy_gpus(pool)
    rows = []
    for gpu in gpus:
        used = sum(model.profile(name).memory_slices * count for name, count in gpu.instances.items())
        rows.append(
            {
                "node": gpu.node,
                "uuid": gpu.uuid,
                "instances": dict(sorted(gpu.instances.items())),
                "free_slices": model.mig_memory_slices - used,
                "whole": not any(gpu.instances.values()),
                "requests": sorted(gpu.holders),
            }
        )
    layouts = [dict(gpu.instances) for gpu in gpus]
    next_choice = []
    for name in profiles or [profile.name for profile in model.mig_profiles if "+" not in profile.name]:
        placement = choose_gpu(model, layouts, name) if layouts else None
        next_choice.append(
            {
                "profile": name,
                "gpu": None if placement is None else f"{gpus[placement.gpu].node}/{gpus[placement.gpu].uuid}",
                "opens_whole_gpu": bool(placement and placement.opens_whole_gpu),
            }
        )
    observed = pool.observed_dra or {}
    return {
        "gpus": rows,
        "fragmented": fragmented_gpus(layouts),
        "whole": len(layouts) - fragmented_gpus(layouts),
        "next": next_choice,
        "driver_devices": dict(observed.get("devices") or {}),
        "driver_gpus": len(observed.get("gpus") or []),
        "driver_synced": bool(observed),
    }
