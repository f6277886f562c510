"""Waste on the bill, read from what billing already stores: a report's lines (held GPU-hours, measured utilization
from the rollup totals, amount) per request, the team's month so far, and the fleet's reclaimable GPU-hours this
month (one SQL aggregate over the hourly rollups, kept until a rollup is written)."""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

from django.db.models import Q, Sum
from django.utils import timezone

from allocations.idle_policy import reclaim_thresholds
from allocations.models import Team, WorkloadType
from billing.costs.chargeback import month_bounds, team_month_charge
from billing.costs.reports import live_report_payload
from billing.models import UtilizationRollup
from gpucore.waste import ChargedHours, Waste, waste_by_request
from infra.reference_cache import ROLLUPS, cached


def report_waste(payload: dict[str, Any]) -> dict[str, Any]:
    """A report's (stored or estimated) waste per request and in total, from its lines."""
    lines = [
        ChargedHours(
            request=line["request"],
            name=line["name"],
            held_gpu_hours=Decimal(line["allocated_gpu_hours"]),
            avg_utilization_pct=line["avg_utilization_pct"],
            amount=Decimal(line["amount"]),
        )
        for line in payload["lines"]
    ]
    rows, total = waste_by_request(lines)
    return {"rows": rows, "total": total, "currency": payload["total"]["currency"]}


def team_month_waste(*, team: Team, now: datetime | None = None) -> dict[str, Any]:
    """The team's waste this month so far: its chargeback up to now (its own allocations only), line by line."""
    now = now or timezone.now()
    month = now.astimezone(UTC).date().replace(day=1)
    charge = team_month_charge(team=team, now=now, share_idle=False)
    payload = live_report_payload(team=team, month=month, charge=charge)
    return {**report_waste(payload), "month": month}


def month_reclaimable_gpu_hours(*, now: datetime | None = None) -> dict[str, Any]:
    """This month's GPU-hours of development workloads (the ones the idle reclaim may suspend) that were idle:
    complete hours under the idle thresholds. One aggregate over the month's rollups, kept until a rollup is
    written; an incomplete hour never counts, as it never counts for the reclaim."""
    now = now or timezone.now()
    month = now.astimezone(UTC).date().replace(day=1)
    start, end = month_bounds(month)
    thresholds = reclaim_thresholds("tier3_development")

    def build() -> dict[str, Any]:
        idle = Q(avg_utilization_pct__lt=thresholds.utilization_pct) & (
            Q(peak_memory_used_mib__lt=thresholds.memory_mib) | Q(peak_memory_used_mib__isnull=True)
        )
        totals = UtilizationRollup.objects.filter(
            hour__gte=start,
            hour__lt=min(end, now),
            is_complete=True,
            request__workload_type=WorkloadType.DEVELOPMENT,
        ).aggregate(minutes=Sum("sample_count"), idle_minutes=Sum("sample_count", filter=idle))
        minutes, idle_minutes = totals["minutes"] or 0, totals["idle_minutes"] or 0
        return {
            "month": month,
            "gpu_hours": Decimal(idle_minutes) / 60,
            "development_gpu_hours": Decimal(minutes) / 60,
            "utilization_pct": thresholds.utilization_pct,
            "memory_mib": thresholds.memory_mib,
        }

    return cached(ROLLUPS, f"reclaimable-gpu-hours:{month.isoformat()}:{now:%Y-%m-%dT%H}", build)


__all__ = ["Waste", "month_reclaimable_gpu_hours", "report_waste", "team_month_waste"]
