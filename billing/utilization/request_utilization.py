"""The request page's utilization partial (``billing/_request_utilization.html``): the request's usage summary, its
alerts, right-sizing advice and its cluster's ingest coverage over the window.
"""

from __future__ import annotations

from datetime import datetime
from decimal import Decimal
from typing import Any

from django.conf import settings
from django.db.models import Count

from allocations.clusters.placement import gpu_hourly_rates
from allocations.models import GpuModel, GpuRequest
from allocations.selectors import User, gpu_requests_visible_to
from billing.costs.selectors import catalog_fallback_rates
from billing.models import IngestStatus, UtilizationIngestHour, UtilizationRollup, UtilizationWatermark
from billing.utilization.alert_groups import alert_group_rows
from billing.utilization.selectors import (
    HOUR,
    MAX_ALERTS_SHOWN,
    alerts_for,
    ingest_coverage,
    summary_aggregates,
    summary_from,
    window,
)
from gpucore import advice as advice_rules
from gpucore.pricing import to_cents

REQUEST_WINDOW_DAYS = 30


def gpu_rates() -> dict[str, Decimal]:
    """Whole-GPU hourly price by folded model name: the price book in effect, else catalog reference prices."""
    rates = dict(catalog_fallback_rates())
    rates.update({str(name).casefold(): Decimal(rate) for name, rate in gpu_hourly_rates().items()})
    return rates


def profile_options(gpu_model: str) -> tuple[list[advice_rules.ProfileOption], int, int]:
    """The model's recommendable partial-GPU MIG profiles, its compute slices and memory slices (none: no MIG)."""
    model = GpuModel.objects.filter(name__iexact=gpu_model).first()
    if model is None or not model.mig_capable or not model.mig_compute_slices:
        return [], 0, 0
    total = model.mig_compute_slices
    options = [
        advice_rules.ProfileOption(
            name=p.name, memory_gb=float(p.memory_gb), compute_slices=p.compute_slices, memory_slices=p.memory_slices
        )
        for p in model.mig_profiles.filter(recommendable=True, compute_slices__lt=total).order_by("memory_gb")
    ]
    return options, total, model.mig_memory_slices or 0


def request_advice(*, request: GpuRequest, summary: dict[str, Any]) -> list[dict[str, Any]]:
    """Right-sizing suggestions for a request from its measured use, with the monthly saving priced."""
    spec = request.allocation_spec
    model = spec.gpu_model
    if not model:
        return []
    profiles, slices, memory_slices = profile_options(model)
    rate = gpu_rates().get(model.casefold())
    if rate is not None and request.sla_tier_id:
        rate *= request.sla_tier.price_multiplier
    units = request.resource_units or spec.quantity * spec.replicas
    use = advice_rules.MeasuredUse(
        strategy=spec.strategy.value,
        gpu_model=model,
        units=max(1, units),
        quantity_per_replica=spec.quantity,
        mig_profile=spec.mig_profile,
        time_slice_replicas=spec.time_slice_replicas,
        observed_hours=summary["complete_gpu_hours"] / max(1, units),
        avg_utilization_pct=summary["avg_utilization_pct"],
        peak_memory_used_gb=summary["peak_memory_used_gb"],
        memory_pressure_hours=summary["memory_pressure_hours"],
    )
    found = advice_rules.right_size(
        use, profiles=profiles, gpu_compute_slices=slices, gpu_memory_slices=memory_slices, gpu_hourly_rate=rate
    )
    return [
        {
            "advice": item,
            "current_monthly": to_cents(item.current_monthly) if item.current_monthly is not None else None,
            "suggested_monthly": to_cents(item.suggested_monthly) if item.suggested_monthly is not None else None,
            "monthly_saving": to_cents(item.monthly_saving) if item.monthly_saving is not None else None,
            "monthly_extra_cost": (
                to_cents(-item.monthly_saving) if item.monthly_saving is not None and item.monthly_saving < 0 else None
            ),
            "currency": settings.PORTAL_CURRENCY,
        }
        for item in found
    ]


def request_coverage(*, start: datetime, end: datetime, cluster_id: int | None) -> dict[str, Any]:
    """``ingest_coverage`` of the request's one cluster (every read cluster when it has none yet)."""
    if cluster_id is None:
        return ingest_coverage(start=start, end=end)
    # Only the number of incomplete hours is shown: counted, not listed.
    missing = (
        UtilizationIngestHour.objects.filter(cluster_id=cluster_id, hour__gte=start, hour__lt=end)
        .exclude(status=IngestStatus.COMPLETE)
        .count()
    )
    last_complete = (
        UtilizationWatermark.objects.filter(cluster_id=cluster_id).values_list("last_complete_hour", flat=True).first()
    )
    through = last_complete + HOUR if last_complete is not None else None  # as ingested_through() for one cluster
    return {
        "incomplete_hours": missing,
        "ingested_through": through,
        "complete": not missing and through is not None and through >= end - HOUR,
    }


def request_utilization_context(
    *,
    user: User,
    request: GpuRequest,
    now: datetime | None = None,
    days: int = REQUEST_WINDOW_DAYS,
    visibility_checked: bool = False,
) -> dict[str, Any]:
    """Context of ``billing/_request_utilization.html``: ``{"utilization": {...}}`` (None when not visible).

    ``visibility_checked``: the caller read ``request`` through ``gpu_requests_visible_to(user=user)`` (the request
    page), so it is not read again."""
    if not visibility_checked and not gpu_requests_visible_to(user=user).filter(pk=request.pk).exists():
        return {"utilization": None}
    start, end = window(days=days, now=now)
    rollups = UtilizationRollup.objects.filter(request=request, hour__gte=start, hour__lt=end)
    row = rollups.aggregate(**summary_aggregates(), rows=Count("id"))
    summary = summary_from(row)
    has_data = summary["gpu_hours"] > 0
    # Without rollups there is nothing to raise an alert on, and advice is shown only beside measured use: neither
    # is read then (a request that ran before the window, or never ran, is most of them).
    alerts = alerts_for(rollups) if row["rows"] else []
    return {
        "utilization": {
            "request": request,
            "start": start,
            "end": end,
            "days": days,
            "has_data": has_data,
            "rollups_in_window": row["rows"],
            "summary": summary,
            "alert_groups": alert_group_rows(alerts=alerts, team=request.team, now=now)[:MAX_ALERTS_SHOWN],
            "advice": request_advice(request=request, summary=summary) if has_data else [],
            **request_coverage(start=start, end=end, cluster_id=request.cluster_id),
        }
    }
