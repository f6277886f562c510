"""Writes for MIG plans: make a pool's plan from its demand, approve it, start or resume its rollout, cancel it.

The rollout itself is ``rollout`` (driven by ``tasks.apply_mig_plan``); the state machine's write path is ``events``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from decimal import Decimal

from django.contrib.auth.models import AbstractBaseUser
from django.core.exceptions import PermissionDenied, ValidationError
from django.db import transaction
from django.utils import timezone

from allocations.clusters.dynamic_mig import runs_dynamic_mig
from allocations.clusters.gateways.base import ClusterGateway
from allocations.clusters.inventory import node_in_pool
from allocations.clusters.placement import gpu_price
from allocations.clusters.provisioning import cluster_gateway
from allocations.mig_plans.events import (
    ONLY_ADMINS,
    ONLY_PLANNERS,
    InvalidPlanTransition,
    move_plan,
    record_plan_event,
    user_is_platform_admin,
)
from allocations.mig_plans.tasks import apply_mig_plan
from allocations.models import (
    ClusterBackend,
    DrainPolicy,
    GpuRequest,
    MigPlan,
    MigPlanStatus,
    NodePool,
    NodeStep,
    RequestStatus,
    SharingMode,
)
from allocations.selectors import user_is_approver
from audit.services import audit_record, audit_snapshot
from gpucore.catalog import GpuModelSpec, mig_profile_of_resource
from gpucore.mig_planner import CurrentGpu, MigPlanError, plan

__all__ = ["InvalidPlanTransition", "user_is_platform_admin"]

HOURS_PER_MONTH = Decimal("730")
# Demand a plan hosts: what waits for approval and what holds quota (approved, provisioning, active).
DEMAND_STATUSES = (
    RequestStatus.PENDING_APPROVAL,
    RequestStatus.APPROVED,
    RequestStatus.PROVISIONING,
    RequestStatus.ACTIVE,
)


# --- Making a plan --------------------------------------------------------------------------------------------------


def pool_mig_demand(*, pool: NodePool, headroom_pct: int = 0) -> dict[str, int]:
    """MIG instances the pool's requests want (pending approval, approved, running), plus ``headroom_pct`` percent."""
    demand: dict[str, int] = {}
    requests = GpuRequest.objects.filter(node_pool=pool, status__in=DEMAND_STATUSES).only(
        "resource_name", "resource_units"
    )
    for request in requests:
        profile = mig_profile_of_resource(request.resource_name)
        if profile:
            demand[profile] = demand.get(profile, 0) + request.resource_units
    return {name: math.ceil(count * (100 + headroom_pct) / 100) for name, count in demand.items()}


def _pool_nodes(pool: NodePool, gateway: ClusterGateway | None, nodes: Sequence[str] | None) -> list[str]:
    if nodes:
        return sorted(set(nodes))
    known = list(pool.mig_node_layouts.values_list("node", flat=True))
    if pool.cluster.backend == ClusterBackend.KUBERNETES and gateway is not None:
        return sorted(node.name for node in gateway.list_gpu_nodes() if node_in_pool(node, pool))
    if known:
        return sorted(known)
    raise ValidationError({"nodes": "Name the pool's nodes: a GitOps cluster's nodes cannot be read from here."})


def _current_gpus(
    pool: NodePool, model: GpuModelSpec, node_names: Sequence[str], gateway: ClusterGateway | None
) -> list[CurrentGpu]:
    """Each GPU of each node with its layout (the node's recorded one, else the pool's) and what runs on it."""
    recorded = {row.node: row.gpus for row in pool.mig_node_layouts.all()}
    current: list[CurrentGpu] = []
    for node in node_names:
        layouts = recorded.get(node) or [dict(pool.mig_devices) for _ in range(pool.gpus_per_node)]
        pods = ()
        if gateway is not None and pool.cluster.backend == ClusterBackend.KUBERNETES:
            pods = gateway.gpu_pods_on_node(node)  # type: ignore[attr-defined]
        # Which GPU of the node a pod's instance is on is not visible through the API; first fit is enough here,
        # because a node is drained whole: what matters is which node a request runs on.
        in_use: list[dict[str, int]] = [{} for _ in layouts]
        holders: list[list[str]] = [[] for _ in layouts]
        for pod in pods:
            label = f"{pod.namespace}/{pod.name}" + (f" (request {pod.request_id})" if pod.request_id else "")
            for profile, count in pod.mig_instances.items():
                for _ in range(count):
                    for index, layout in enumerate(layouts):
                        if in_use[index].get(profile, 0) < layout.get(profile, 0):
                            in_use[index][profile] = in_use[index].get(profile, 0) + 1
                            if label not in holders[index]:
                                holders[index].append(label)
                            break
        for index, layout in enumerate(layouts):
            current.append(
                CurrentGpu(
                    gpu_id=f"{node}/{index}",
                    node=node,
                    layout=layout,
                    in_use=in_use[index],
                    holders=tuple(holders[index]),
                )
            )
    return current


def mig_plan_create(
    *,
    acting_user: AbstractBaseUser,
    pool: NodePool,
    headroom_pct: int = 0,
    max_unavailable: int = 1,
    drain_timeout_seconds: int = 3600,
    drain_policy: str = DrainPolicy.STOP,
    nodes: Sequence[str] | None = None,
    gateway: ClusterGateway | None = None,
) -> MigPlan:
    """Plan the pool's layouts for its demand: the fewest GPUs, then the fewest changed; stored as ``proposed``."""
    if not user_is_approver(acting_user):
        raise PermissionDenied(ONLY_PLANNERS)
    if pool.sharing_mode != SharingMode.MIG or not pool.gpu_model.mig_capable:
        raise ValidationError({"pool": f"Pool {pool} is not a MIG pool."})
    if runs_dynamic_mig(pool):
        raise ValidationError(
            {"pool": f"Pool {pool} creates MIG instances dynamically (DRA DynamicMIG): there is no layout to plan."}
        )
    model = pool.gpu_model.to_spec()
    if gateway is None and pool.cluster.backend == ClusterBackend.KUBERNETES and not nodes:
        gateway = cluster_gateway(pool.cluster)
    node_names = _pool_nodes(pool, gateway, nodes)
    if not node_names:
        raise ValidationError({"nodes": f"No node of the cluster belongs to pool {pool}."})
    current = _current_gpus(pool, model, node_names, gateway)
    demand = pool_mig_demand(pool=pool, headroom_pct=headroom_pct)
    try:
        result = plan(model, demand, current=current)
    except MigPlanError as error:
        raise ValidationError({"demand" if error.field == "demand" else "pool": str(error)}) from error
    gpus = []
    for gpu in result.gpus:
        node, _, index = (gpu.gpu_id or "//").partition("/")
        gpus.append(
            {
                "node": node or None,
                "index": int(index) if index.isdigit() else None,
                "current": dict(gpu.current),
                "proposed": gpu.layout.counts() if gpu.layout else {},
                "placement": gpu.layout.placement_strings() if gpu.layout else [],
                "changed": gpu.changed,
                "added": gpu.added,
                "hosts": dict(gpu.hosts),
                "must_move": dict(gpu.must_move),
                "holders": list(gpu.moved_holders),
            }
        )
    price = gpu_price(pool.gpu_model)  # the price book's, else the catalog list price, as recommendations use
    rate = price.hourly
    pool_gpus = len(current)
    new = MigPlan(
        pool=pool,
        headroom_pct=headroom_pct,
        max_unavailable=max_unavailable,
        drain_timeout_seconds=drain_timeout_seconds,
        drain_policy=drain_policy,
        demand=dict(result.demand),
        gpus=gpus,
        gpu_count=result.gpu_count,
        pool_gpus=pool_gpus,
        gpus_changed=result.gpus_changed,
        nodes_to_drain=result.nodes_to_drain(),
        requests_to_move=result.requests_to_move(),
        # GPUs freed (negative) or needed (positive) at the model's GPU-hour price: what the pool could give back or
        # must buy, per month.
        monthly_cost_delta=(
            (Decimal(result.gpu_count - pool_gpus) * rate * HOURS_PER_MONTH).quantize(Decimal("0.0001"))
            if rate
            else None
        ),
        price_basis=price.basis if rate else "",
        created_by=acting_user,
    )
    with transaction.atomic():
        new.full_clean()
        new.save()
        record_plan_event(
            new,
            to=MigPlanStatus.PROPOSED,
            actor=acting_user,
            message=f"{result.gpu_count} GPUs for the demand, {result.gpus_changed} to change",
        )
        audit_record(actor=acting_user, obj=new, before=None)
    return new


def mig_plan_approve(*, plan_: MigPlan, acting_user: AbstractBaseUser, comment: str = "") -> MigPlan:
    """A platform admin approves a proposed plan (nothing changes on the cluster yet)."""
    if not user_is_platform_admin(acting_user):
        raise PermissionDenied(ONLY_ADMINS)
    with transaction.atomic():
        locked = MigPlan.objects.select_for_update().get(pk=plan_.pk)
        before = audit_snapshot(locked)
        move_plan(locked, MigPlanStatus.APPROVED, actor=acting_user, message=comment)
        locked.approved_by, locked.approved_at = acting_user, timezone.now()
        locked.save(update_fields=["status", "approved_by", "approved_at"])
        audit_record(actor=acting_user, obj=locked, before=before, comment=comment)
    return locked


def mig_plan_cancel(*, plan_: MigPlan, acting_user: AbstractBaseUser, comment: str = "") -> MigPlan:
    """Abandon a plan that is not being applied (a failed rollout leaves its done nodes as they are)."""
    if not user_is_platform_admin(acting_user):
        raise PermissionDenied(ONLY_ADMINS)
    with transaction.atomic():
        locked = MigPlan.objects.select_for_update().get(pk=plan_.pk)
        before = audit_snapshot(locked)
        move_plan(locked, MigPlanStatus.CANCELLED, actor=acting_user, message=comment)
        locked.finished_at = timezone.now()
        locked.save(update_fields=["status", "finished_at"])
        audit_record(actor=acting_user, obj=locked, before=before, comment=comment)
    return locked


def mig_plan_apply(*, plan_: MigPlan, acting_user: AbstractBaseUser) -> MigPlan:
    """Start (or resume after a failure) the rollout: ``applying``, and the task queued once the row is saved."""
    if not user_is_platform_admin(acting_user):
        raise PermissionDenied(ONLY_ADMINS)
    with transaction.atomic():
        locked = MigPlan.objects.select_for_update().get(pk=plan_.pk)
        before = audit_snapshot(locked)
        busy = MigPlan.objects.filter(pool=locked.pool, status=MigPlanStatus.APPLYING).exclude(pk=locked.pk)
        if busy.exists():
            raise InvalidPlanTransition(f"Another MIG plan of pool {locked.pool} is being applied.")
        move_plan(locked, MigPlanStatus.APPLYING, actor=acting_user)
        # Resuming a failed rollout retries the failed node from its drain. A node already labelled gets the next
        # config revision (the MIG manager acts only when the label changes), which the ConfigMap, applied again
        # before any label, then holds.
        nodes = locked.progress.get("nodes", {})
        for state in nodes.values():
            if state.get("step") == NodeStep.FAILED:
                revision = int(state.get("revision") or 1) + (1 if state.get("config") else 0)
                state.update(step=NodeStep.WAITING, since=None, revision=revision, config=None)
        if nodes:
            locked.progress.pop("configmap_applied_at", None)
        locked.error = ""
        locked.save(update_fields=["status", "progress", "error"])
        audit_record(actor=acting_user, obj=locked, before=before)
        plan_id = locked.pk
        transaction.on_commit(lambda: apply_mig_plan.delay(plan_id), robust=True)
    return locked
