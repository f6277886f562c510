"""The stored days' charges summed, so the dashboards read a few rows instead of one per request and day: each day
per team and dashboard group (``DayChargeGroup``, written with the day), and a month's run of stored days per
request (``MonthRequestCharge``), for the charts that rank or group requests: the 25 most expensive, and which group
each request's measured use belongs to.

Summing a month reads every stored request-day of it; the pricing task does that once after storing days, and a
view reads one row per request. The sums name the run they cover (``through``), so a view uses them only when its
own run of stored days is the same, and reads the days otherwise. Forgetting days removes the sums over them, and
summing holds the run's ``PricedDay`` rows locked, so sums are never stored over a day forgotten meanwhile.
"""

from __future__ import annotations

from datetime import date
from typing import Any

from django.db import models, transaction
from django.db.models import BooleanField, ExpressionWrapper, F, Max, Q, Sum

from billing.models import DayCharge, DayChargeGroup, MonthRequestCharge, PricedDay

_BATCH = 2000
_MONEY = ("amount", "dedicated_amount", "allocated_gpu_hours")


def _store_sums(days: Q, into: type[models.Model], keys: dict[str, Any], sums: tuple[str, ...], **fixed: Any) -> None:
    """``DayCharge`` rows of ``days`` summed (``sums``) per ``keys`` (field of ``into`` -> column or expression of
    the day charge) and written as ``into`` rows, each with ``fixed`` fields too."""
    grouped = (
        DayCharge.objects.filter(days)
        .values(**{f"k_{name}": F(key) if isinstance(key, str) else key for name, key in keys.items()})
        .annotate(**{f"s_{name}": Sum(name) for name in sums})
        .order_by()
    )
    into.objects.bulk_create(
        (
            into(**fixed, **{name: row[f"k_{name}"] for name in keys}, **{name: row[f"s_{name}"] for name in sums})
            for row in grouped.iterator(chunk_size=_BATCH)
        ),
        batch_size=_BATCH,
    )


def day_groups_store(day: date) -> None:
    """Replace ``day``'s ``DayChargeGroup`` rows with its stored charges summed per team and dashboard group."""
    DayChargeGroup.objects.filter(day=day).delete()
    imported = ExpressionWrapper(Q(imported__isnull=False), output_field=BooleanField())
    keys = {"team_id": "team_id", "node_pool_id": "request__node_pool_id", "imported": imported,
            "strategy": "strategy", "gpu_model": "gpu_model", "sla_tier": "sla_tier"}  # fmt: skip
    _store_sums(Q(day=day), DayChargeGroup, keys, (*_MONEY, "base_amount"), day=day)


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
        keys = {name: name for name in ("team_id", "request_id", "imported_id", "name", "strategy", "gpu_model",
                                        "sla_tier")} | {"node_pool_id": "request__node_pool_id"}  # fmt: skip
        _store_sums(Q(day__gte=month, day__lt=through), MonthRequestCharge, keys, _MONEY, month=month, through=through)
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
