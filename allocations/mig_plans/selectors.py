"""Reads for MIG plans: the stateless preview of ``POST /api/v1/mig-plans/preview/`` and a pool's plans."""

from __future__ import annotations

from collections.abc import Mapping

from django.contrib.auth.models import AbstractBaseUser
from django.core.exceptions import PermissionDenied, ValidationError
from django.db.models import QuerySet
from django.http import Http404

from allocations.models import MigPlan, NodePool
from allocations.reference_data import catalog_from_db
from allocations.selectors import node_pools_visible_to, user_is_approver
from gpucore.catalog import CatalogError
from gpucore.mig_planner import MigPlanError, plan, plan_summary_gpus

# A preview is computed in the request: beyond this many instances of one profile it is a typo, not a pool.
MAX_PREVIEW_INSTANCES = 100_000


def mig_plan_preview(*, gpu_model: str, demand: Mapping[str, int]) -> dict[str, object]:
    """The fewest GPUs (exact) whose valid layouts host ``demand``; ``ValidationError`` naming the field otherwise."""
    try:
        model = catalog_from_db().get(gpu_model)
    except CatalogError as error:
        raise ValidationError({"gpu_model": str(error)}) from error
    if not model.mig_capable:
        raise ValidationError({"gpu_model": f"{model.name} is not MIG-capable."})
    too_many = [name for name, count in demand.items() if isinstance(count, int) and count > MAX_PREVIEW_INSTANCES]
    if too_many:
        raise ValidationError({"demand": f"At most {MAX_PREVIEW_INSTANCES} instances of '{too_many[0]}' per preview."})
    if not any(demand.values()):
        raise ValidationError({"demand": "Ask for at least one MIG instance."})
    try:
        result = plan(model, demand)
    except MigPlanError as error:
        raise ValidationError({error.field: str(error)}) from error
    return {
        "gpu_model": model.name,
        "gpu_count": result.gpu_count,
        "gpus": plan_summary_gpus(model, result),
    }


def mig_pool_for(
    *, user: AbstractBaseUser, cluster: str, pool: str, pools: QuerySet[NodePool] | None = None
) -> NodePool:
    """The pool ``cluster/pool`` among ``pools`` (by default the pools the user may see) for an approver (404 for
    unknown names, 403 for non-approvers)."""
    if not user_is_approver(user):
        raise PermissionDenied("Only platform approvers and admins can see MIG plans.")
    visible = pools if pools is not None else node_pools_visible_to(user=user)
    try:
        return visible.select_related("cluster", "gpu_model").get(cluster__name=cluster, name=pool)
    except NodePool.DoesNotExist:
        raise Http404(f"No node pool {cluster}/{pool}.") from None


def mig_plans_of_pool(*, pool: NodePool) -> QuerySet[MigPlan]:
    """The pool's MIG plans, newest first, with their pool, cluster, GPU model, people and events in a fixed number
    of queries whatever the number of plans."""
    return (
        MigPlan.objects.filter(pool=pool)
        .select_related("pool__cluster", "pool__gpu_model", "created_by", "approved_by")
        .prefetch_related("events")
    )
