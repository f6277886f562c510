"""Each past day's chargeback priced once and stored (``DayCharge``), so a month not closed yet is read as sums.

Pricing a month live means pricing every allocation it held: seconds at thousands of requests, on every view of the
cost dashboards. Instead the ``billing.price_past_days`` task prices each day once it is over (one chargeback of
that day, ``billing.costs.chargeback.chargeback_between``) and stores one row per allocation and day; a month's
figures are then a SUM over its stored days plus the live chargeback of the days not stored (today, or days whose
inputs changed). The idle capacity is worked out from the summed base costs as ``gpucore.chargeback`` does, so the
month's figures are the live chargeback's, summed by day.

A stored day is removed (its ``PricedDay``) when anything it was priced from changes: prices, the catalog, pools and
teams; a request's priced fields, its events and imported usage from the day they start. Pricing that raced such a
change stores nothing.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, time, timedelta
from decimal import Decimal
from typing import Any

from django.db import transaction
from django.db.models import QuerySet, Sum
from django.utils import timezone

from allocations.models import Team
from billing.costs.charge_sums import day_groups_store, month_sums_forget, month_sums_remove_before, month_sums_store
from billing.costs.chargeback import capacity_gpus_by_model, chargeback_between, month_bounds, share_idle_cost
from billing.costs.selectors import catalog_fallback_rates, price_periods
from billing.models import DayCharge, DayChargeGroup, PricedDay
from gpucore.chargeback import ZERO, Chargeback, capacity_cost
from gpucore.months import add_months

# A request's fields a day's charge depends on: saves that change only others (its status, timestamps) keep the
# stored days; its events, which say when it held GPUs, remove them from their day on.
PRICED_REQUEST_FIELDS = frozenset(
    {
        "team",
        "team_id",
        "name",
        "sla_tier",
        "sla_tier_id",
        "node_pool",
        "node_pool_id",
        "resource_name",
        "gpu_count",
        "replicas",
        "gpu_model_requested",
        "held_spec_json",
    }
)
# How far back the pricing task stores days: the month in progress and the two before, which may not be closed yet.
MONTHS_PRICED = 3
_BATCH = 2000


def _day_start(day: date) -> datetime:
    return datetime.combine(day, time(0), tzinfo=UTC)


def day_charges_forget(*, since: date | None = None) -> None:
    """Something a day is priced from changed: its stored days from ``since`` on (None: every day) are priced live
    until stored again."""
    days = PricedDay.objects.all() if since is None else PricedDay.objects.filter(day__gte=since)
    with transaction.atomic():  # the days first: summing a month holds them locked (billing.costs.charge_sums)
        days.delete()
        month_sums_forget(since=since)


def day_charges_store(*, day: date) -> int:
    """Price ``day`` (a UTC day already over) and store its charges, replacing any stored before; returns the rows
    stored, or -1 when a change to its inputs raced the pricing (nothing stored: the next run prices it again)."""
    token = uuid.uuid4()
    PricedDay.objects.update_or_create(day=day, defaults={"token": token, "complete": False})
    start = _day_start(day)
    chargeback = chargeback_between(start=start, end=start + timedelta(days=1), share_idle=False)
    team_ids = dict(Team.objects.values_list("slug", "pk"))
    rows: dict[tuple[str, str], DayCharge] = {}
    for slug, charge in chargeback.teams.items():
        for line in charge.lines:
            allocation = line.allocation
            row = rows.get((slug, allocation.key))
            if row is None:
                row = rows[(slug, allocation.key)] = DayCharge(
                    day=day,
                    team_id=team_ids[slug],
                    request_id=allocation.request_id,
                    imported_id=int(allocation.key.partition(":")[2]) if allocation.imported else None,
                    name=allocation.name,
                    strategy=allocation.strategy,
                    gpu_model=allocation.gpu_model,
                    sla_tier=allocation.sla_tier or "",
                    amount=ZERO,
                    dedicated_amount=ZERO,
                    base_amount=ZERO,
                    allocated_gpu_hours=ZERO,
                )
            row.amount += line.amount
            row.dedicated_amount += line.dedicated_amount
            row.base_amount += line.base_amount
            row.allocated_gpu_hours += line.allocated_gpu_hours
    with transaction.atomic():
        # Row-locks the marker: a change that removed it meanwhile (committed or not) leaves nothing to complete.
        if not PricedDay.objects.filter(day=day, token=token).update(complete=True):
            transaction.set_rollback(True)
            return -1
        DayCharge.objects.filter(day=day).delete()
        DayCharge.objects.bulk_create(rows.values(), batch_size=_BATCH)
        day_groups_store(day)
        month_sums_forget(since=day)  # a day stored again: the sums over it are of its former rows
    return len(rows)


def day_charges_catch_up(*, now: datetime | None = None, max_days: int | None = None) -> dict[str, int]:
    """Store every day over since the first of ``MONTHS_PRICED`` months ago that is not stored (at most
    ``max_days`` of them, oldest first), sum each month's run of stored days per request, and remove the stored
    days before it (those months are closed, or priced live if not); idempotent. Returns the days stored and those
    that raced a change."""
    now = now or timezone.now()
    today = now.astimezone(UTC).date()
    first = add_months(today.replace(day=1), -(MONTHS_PRICED - 1))
    PricedDay.objects.filter(day__lt=first).delete()
    DayCharge.objects.filter(day__lt=first).delete()
    DayChargeGroup.objects.filter(day__lt=first).delete()
    month_sums_remove_before(first)
    stored = set(PricedDay.objects.filter(day__gte=first, complete=True).values_list("day", flat=True))
    todo = [d for d in (first + timedelta(days=n) for n in range((today - first).days)) if d not in stored]
    result = {"stored": 0, "raced": 0}
    for day in todo[:max_days]:
        result["stored" if day_charges_store(day=day) >= 0 else "raced"] += 1
    today_start = _day_start(today)
    month = first
    while month <= today:
        start, end = month_bounds(month)
        month_sums_store(month=month, through=_stored_through(start, min(end, today_start)).date())
        month = add_months(month, 1)
    return result


@dataclass
class MonthCharges:
    """A month's charges so far per team and allocation (keyed ``(team slug, allocation)``), as dashboard rows, and
    the organisation's idle capacity cost over the same window."""

    rows: dict[tuple[str, str], dict[str, Any]] = field(default_factory=dict)
    idle_cost: Decimal = ZERO
    idle_shared: bool = False
    stored_days: int = 0


def _stored_through(start: datetime, end: datetime) -> datetime:
    """The end of the run of stored days from ``start`` (``start`` itself when its first day is not stored)."""
    stored = set(
        PricedDay.objects.filter(day__gte=start.date(), day__lt=end.date(), complete=True).values_list("day", flat=True)
    )
    through = start
    while through.date() in stored and through + timedelta(days=1) <= end:
        through += timedelta(days=1)
    return through


def _row(slug: str, request_id: int | None, name: str, strategy: str, gpu_model: str, tier: str) -> dict[str, Any]:
    return {
        "team": slug,
        "request": request_id,
        "name": name,
        "strategy": strategy,
        "gpu_model": gpu_model,
        "tier": tier,
        "amount": ZERO,
        "dedicated": ZERO,
        "gpu_hours": ZERO,
    }


def _add_live(rows: dict[tuple[str, str], dict[str, Any]], chargeback: Chargeback, base: dict[str, Decimal]) -> None:
    for slug, charge in chargeback.teams.items():
        for line in charge.lines:
            a = line.allocation
            row = rows.get((slug, a.key))
            if row is None:
                row = rows[(slug, a.key)] = _row(slug, a.request_id, a.name, a.strategy, a.gpu_model, a.sla_tier or "")
            row["amount"] += line.amount
            row["dedicated"] += line.dedicated_amount
            row["gpu_hours"] += line.allocated_gpu_hours
    for model, amount in chargeback.allocated_base_cost.items():
        base[model.casefold()] = base.get(model.casefold(), ZERO) + amount


@dataclass
class MonthParts:
    """A month up to now in two parts: its stored days [``start``, ``through``), read from ``DayCharge`` by whoever
    needs them (grouped as they need), and the days not stored priced live (``live``, keyed as ``MonthCharges``);
    with the organisation's idle capacity cost over the whole window."""

    start: datetime
    through: datetime
    live: dict[tuple[str, str], dict[str, Any]] = field(default_factory=dict)
    idle_cost: Decimal = ZERO
    idle_shared: bool = False

    @property
    def stored_days(self) -> int:
        return (self.through - self.start).days

    def stored(self) -> QuerySet[DayCharge]:
        """The month's stored day charges (empty when no day is stored)."""
        return DayCharge.objects.filter(day__gte=self.start.date(), day__lt=self.through.date())

    def stored_groups(self) -> QuerySet[DayChargeGroup]:
        """The month's stored days summed per team and dashboard group (empty when no day is stored)."""
        return DayChargeGroup.objects.filter(day__gte=self.start.date(), day__lt=self.through.date())


def month_parts(*, month: date, now: datetime) -> MonthParts:
    """``month`` up to ``now``: the run of stored days from its start, the rest priced live, and its idle cost. The
    stored days are summed in SQL per GPU model only (for the idle cost), never read per allocation here."""
    start, end = month_bounds(month)
    end = min(end, max(now, start))
    through = _stored_through(start, end)
    parts = MonthParts(start=start, through=through, idle_shared=share_idle_cost())
    base: dict[str, Decimal] = {}
    if through > start:
        by_model = parts.stored_groups().values("gpu_model").annotate(base=Sum("base_amount")).order_by()
        for model, amount in by_model.values_list("gpu_model", "base"):
            base[model.casefold()] = base.get(model.casefold(), ZERO) + amount
    if through < end:
        live = chargeback_between(start=through, end=end, share_idle=False)
        _add_live(parts.live, live, base)
        if through == start:  # nothing stored: the live chargeback's idle is the month's
            parts.idle_cost = live.total_idle_cost
            return parts
    periods, fallback = price_periods(until=end), catalog_fallback_rates()
    for model, gpus in capacity_gpus_by_model().items():
        capacity = capacity_cost(
            gpus, model, window_start=start, window_end=end, periods=periods, fallback_rates=fallback
        )
        # As the chargeback: allocations beyond the capacity leave no idle, never a negative one.
        parts.idle_cost += max(capacity - base.get(model.casefold(), ZERO), ZERO)
    return parts


def month_charges(*, month: date, now: datetime) -> MonthCharges:
    """Every team's charges for ``month`` up to ``now``, one row per allocation: stored days summed in SQL, the rest
    priced live."""
    parts = month_parts(month=month, now=now)
    charges = MonthCharges(idle_cost=parts.idle_cost, idle_shared=parts.idle_shared, stored_days=parts.stored_days)
    grouped = (
        parts.stored()
        .values("team__slug", "request_id", "imported_id", "name", "strategy", "gpu_model", "sla_tier")
        .annotate(amount=Sum("amount"), dedicated=Sum("dedicated_amount"), gpu_hours=Sum("allocated_gpu_hours"))
        .order_by()
    )
    for r in grouped if parts.stored_days else ():
        key = f"request:{r['request_id']}" if r["request_id"] is not None else f"import:{r['imported_id']}"
        row = charges.rows.setdefault(
            (r["team__slug"], key),
            _row(r["team__slug"], r["request_id"], r["name"], r["strategy"], r["gpu_model"], r["sla_tier"]),
        )
        row["amount"] += r["amount"]
        row["dedicated"] += r["dedicated"]
        row["gpu_hours"] += r["gpu_hours"]
    for key, live in parts.live.items():
        row = charges.rows.setdefault(key, {**live, "amount": ZERO, "dedicated": ZERO, "gpu_hours": ZERO})
        row["amount"] += live["amount"]
        row["dedicated"] += live["dedicated"]
        row["gpu_hours"] += live["gpu_hours"]
    return charges


# Models whose change reprices every day: what prices a charge (price books, tiers, catalog, pools' sharing).
_REPRICES_EVERY_DAY = (
    "billing.PriceBook",
    "billing.GpuPrice",
    "billing.SlaMultiplier",
    "allocations.SlaTier",
    "allocations.GpuModel",
    "allocations.MigProfileDefinition",
    "allocations.NodePool",
)
# A request's fields that say when it held GPUs: set to the moment of the change, so they reprice from their value.
_HELD_FROM_FIELDS = ("activated_at", "ended_at")


def _request_saved(sender: type, instance: Any, created: bool, update_fields: Any = None, **kwargs: Any) -> None:
    if created:
        return  # a new request held nothing before today
    if update_fields is None or PRICED_REQUEST_FIELDS & set(update_fields):
        held_from = min(m for m in (instance.created_at, instance.activated_at) if m is not None)
        day_charges_forget(since=held_from.astimezone(UTC).date())
        return
    moments = [getattr(instance, name) for name in _HELD_FROM_FIELDS if name in update_fields]
    if earliest := min((moment for moment in moments if moment is not None), default=None):
        day_charges_forget(since=earliest.astimezone(UTC).date())


def _request_deleted(sender: type, instance: Any, **kwargs: Any) -> None:
    # Its stored day charges went with it; the days' group sums still count them until priced again.
    held_from = min(m for m in (instance.created_at, instance.activated_at) if m is not None)
    day_charges_forget(since=held_from.astimezone(UTC).date())


def _event_saved(sender: type, instance: Any, **kwargs: Any) -> None:
    day_charges_forget(since=instance.at.astimezone(UTC).date())


def _import_changed(sender: type, instance: Any, **kwargs: Any) -> None:
    day_charges_forget(since=instance.start.astimezone(UTC).date())


def _reprice_every_day(sender: type, **kwargs: Any) -> None:
    day_charges_forget()


def connect_day_charge_receivers() -> None:
    """Remove the stored days a saved or deleted row was priced from (``BillingConfig.ready``)."""
    from django.apps import apps
    from django.db.models.signals import post_delete, post_save

    for label in _REPRICES_EVERY_DAY:
        for signal in (post_save, post_delete):
            signal.connect(_reprice_every_day, sender=apps.get_model(label), dispatch_uid=f"day-charges:{label}")
    request_model = apps.get_model("allocations.GpuRequest")
    post_save.connect(_request_saved, sender=request_model, dispatch_uid="day-charges:req")
    post_delete.connect(_request_deleted, sender=request_model, dispatch_uid="day-charges:req-deleted")
    post_save.connect(_event_saved, sender=apps.get_model("allocations.RequestEvent"), dispatch_uid="day-charges:ev")
    for signal in (post_save, post_delete):
        signal.connect(_import_changed, sender=apps.get_model("billing.ImportedUsage"), dispatch_uid="day-charges:imp")
