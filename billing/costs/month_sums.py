"""A month's run of stored days summed per request (``MonthRequestCharge``), for the charts that rank or group
requests: the 25 most expensive, and which group each request's measured use belongs to.

Summing a month reads every stored request-day of it; the pricing task does that once after storing days, and a
view reads one row per request. The sums name the run they cover (``through``), so a view uses them only when its
own run of stored days is the same, and reads the days otherwise. Forgetting days removes the sums over them, and
summing holds the run's ``PricedDay`` rows locked, so sums are never stored over a day forgotten meanwhile.
"""

from __future__ import annotations

from datetime import date

from django.db import transaction
from django.db.models import F, Max, Sum

from billing.models import DayCharge, MonthRequestCharge, PricedDay


def month_sums_store(*, month: date, through: date) -> bool:
    """Sum ``month``'s stored days [its first day, ``through``) per request, unless already summed; returns whether
    sums over that run now exist (False when a day of it is not stored, or was forgotten meanwhile)."""
    if through <= month:
        return False
    with transaction.atomic():
        run = PricedDay.objects.select_for_update().filter(day__gte=month, day__lt=through, complete=True)
        if len(run) != (through - month).days:
            return False  # a day of the run is not stored (or no longer): nothing to sum
        if MonthRequestCharge.objects.filter(month=month, through=through).exists():
            return True
        previous = MonthRequestCharge.objects.filter(month=month).aggregate(latest=Max("through"))["latest"]
        sums = (
            DayCharge.objects.filter(day__gte=month, day__lt=through)
            .values(
                "team_id",
                "request_id",
                "imported_id",
                "name",
                "strategy",
                "gpu_model",
                "sla_tier",
                pool_id=F("request__node_pool_id"),
            )
            .annotate(s_amount=Sum("amount"), s_dedicated=Sum("dedicated_amount"), s_hours=Sum("allocated_gpu_hours"))
            .order_by()
        )
        MonthRequestCharge.objects.bulk_create(
            (
                MonthRequestCharge(
                    month=month,
                    through=through,
                    team_id=row["team_id"],
                    request_id=row["request_id"],
                    imported_id=row["imported_id"],
                    node_pool_id=row["pool_id"],
                    name=row["name"],
                    strategy=row["strategy"],
                    gpu_model=row["gpu_model"],
                    sla_tier=row["sla_tier"],
                    amount=row["s_amount"],
                    dedicated_amount=row["s_dedicated"],
                    allocated_gpu_hours=row["s_hours"],
                )
                for row in sums.iterator(chunk_size=2000)
            ),
            batch_size=2000,
        )
        # The sums before stay one more run: a view that chose them a moment ago still finds them.
        MonthRequestCharge.objects.filter(month=month).exclude(through__in=[through, previous]).delete()
    return True


def month_sums_forget(*, since: date | None = None) -> None:
    """The sums over any day from ``since`` on (None: all); called with the days' own removal."""
    sums = MonthRequestCharge.objects.all() if since is None else MonthRequestCharge.objects.filter(through__gt=since)
    sums.delete()


def month_sums_remove_before(first: date) -> None:
    """The sums of months before ``first``, whose days are no longer kept."""
    MonthRequestCharge.objects.filter(month__lt=first).delete()


def month_sums_exist(*, month: date, through: date) -> bool:
    """Whether ``month``'s run of stored days up to ``through`` is summed."""
    return MonthRequestCharge.objects.filter(month=month, through=through).exists()
