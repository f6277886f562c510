"""Where a month's idle capacity comes from: per GPU model, the capacity paid for against what requests held, and the
pools of that model with the GPUs requests hold in them now (the dashboards' idle bar opens this page)."""

from __future__ import annotations

from collections import defaultdict
from decimal import Decimal

from django.conf import settings
from django.contrib.auth.decorators import login_required
from django.core.exceptions import BadRequest, PermissionDenied
from django.db.models import Sum
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.utils import timezone

from allocations.models import QUOTA_HOLDING_STATUSES, GpuRequest, NodePool
from billing.costs.chargeback import month_chargeback
from billing.costs.visibility import user_can_view_all_costs
from gpucore.months import MonthError, parse_month


@login_required
def idle_breakdown(request: HttpRequest) -> HttpResponse:
    """``?month=YYYY-MM`` (this month by default): idle cost per GPU model, worst first, and the pools behind each."""
    if not user_can_view_all_costs(request.user):
        raise PermissionDenied("Only finance and platform approvers see the fleet's idle capacity.")
    today = timezone.now().date()
    try:
        month = parse_month(request.GET["month"]) if request.GET.get("month") else today.replace(day=1)
    except MonthError as exc:
        raise BadRequest(f"month: {exc}") from exc
    chargeback = month_chargeback(month=month, share_idle=False)
    held = (
        GpuRequest.objects.filter(status__in=QUOTA_HOLDING_STATUSES, node_pool__isnull=False)
        .values("node_pool_id")
        .annotate(units=Sum("resource_units"))
        .order_by()
    )
    held_by_pool = {row["node_pool_id"]: int(row["units"] or 0) for row in held}
    pools_by_model: dict[str, list[dict[str, object]]] = defaultdict(list)
    for pool in NodePool.objects.filter(cluster__is_active=True).select_related("cluster", "gpu_model"):
        gpus = pool.node_count * pool.gpus_per_node
        pools_by_model[pool.gpu_model.name.casefold()].append(
            {"pool": pool, "gpus": gpus, "held_units": held_by_pool.get(pool.pk, 0)}
        )
    models = []
    for model, idle in chargeback.idle_cost.items():
        capacity = chargeback.capacity_cost.get(model, Decimal(0))
        models.append(
            {
                "name": model,
                "idle": idle,
                "capacity": capacity,
                "allocated": chargeback.allocated_base_cost.get(model, Decimal(0)),
                "idle_pct": (idle / capacity * 100) if capacity else None,
                "pools": pools_by_model.get(model.casefold(), []),
            }
        )
    models.sort(key=lambda row: row["idle"], reverse=True)
    context = {
        "month": month,
        "models": models,
        "total_idle": chargeback.total_idle_cost,
        "total_capacity": chargeback.total_capacity_cost,
        "currency": settings.PORTAL_CURRENCY,
        "is_estimate": month >= today.replace(day=1),
    }
    return render(request, "billing/idle_breakdown.html", context)
