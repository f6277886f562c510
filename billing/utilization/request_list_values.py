"""Billing's values for the request list's columns (``allocations.requests.list_columns``): one read per page."""

from __future__ import annotations

from datetime import timedelta

from django.db.models import Sum
from django.utils import timezone

from allocations.requests.list_columns import register_batch_column
from billing.models import DailyUsage

# The utilization column averages the last this many UTC days, today included.
UTILIZATION_DAYS = 7


def requests_recent_utilization(request_ids: list[int]) -> dict[int, float]:
    """Each request's average GPU utilization (%) over the last ``UTILIZATION_DAYS`` days, weighted by the minutes
    measured; a request with no measured minute is absent."""
    since = timezone.now().date() - timedelta(days=UTILIZATION_DAYS - 1)
    totals = (
        DailyUsage.objects.filter(request_id__in=request_ids, day__gte=since)
        .values("request_id")
        .annotate(weighted=Sum("util_weighted"), minutes=Sum("util_samples"))
        .order_by()
    )
    return {
        row["request_id"]: row["weighted"] / row["minutes"]
        for row in totals
        if row["minutes"] and row["weighted"] is not None
    }


def register_request_list_values() -> None:
    """Give the request list its utilization column."""
    register_batch_column("utilization", requests_recent_utilization)
