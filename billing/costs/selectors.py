"""Reads of cost: who may see which costs, the price book in effect, the chargeback's inputs and a month's chargeback.

The arithmetic is pure (``gpucore.chargeback``, ``gpucore.pricing``); this module gathers its inputs: the spans each
request held GPUs (``allocations.selectors.allocation_intervals``) with what it held (``GpuRequest.allocation_spec``),
imported usage, the price books in effect, the capacity of the pools and the measured use (``billing.metering``).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta
from decimal import Decimal
from typing import Any

from django.conf import settings
from django.db.models import F, Max, QuerySet, Sum
from django.utils import timezone

from allocations.models import GpuModel, GpuRequest, NodePool, Team
from allocations.reference_cache import built_once
from allocations.selectors import User, catalog_from_db, held_span_rows, teams_of, user_is_approver
from billing.costs.month_to_date import month_curves
from billing.metering.selectors import usage_by_request
from billing.models import BudgetNotice, ImportedUsage, MonthlyReport, PriceBook, ReportStatus, TeamBudget
from gpucore.budget import RUN_RATE_WINDOW_HOURS, MoneyBudgetState, money_budget_state
from gpucore.chargeback import Allocation, Chargeback, PricePeriod, compute_chargeback
from gpucore.manifests import AllocationSpec
from gpucore.month_curves import MonthCurves, MonthSoFar, TeamSoFar
from gpucore.pricing import catalog_hourly_rate, to_cents

FINANCE_GROUP = "Finance"
VIEW_ALL_COSTS_PERMISSION = "billing.view_all_costs"


def next_month(month: date) -> date:
    """The first day of the calendar month after the one containing ``month``."""
    return date(month.year + (month.month == 12), month.month % 12 + 1, 1)


def month_bounds(month: date) -> tuple[datetime, datetime]:
    """The aware UTC start and end of the calendar month containing ``month``."""
    start = datetime(month.year, month.month, 1, tzinfo=UTC)
    return start, datetime.combine(next_month(month), time(0), tzinfo=UTC)


def user_can_view_all_costs(user: User) -> bool:
    """Approvers, platform admins and the Finance group (``billing.view_all_costs``) see every team's costs."""
    if user_is_approver(user):
        return True
    return bool(user.is_authenticated and user.is_active and user.has_perm(VIEW_ALL_COSTS_PERMISSION))


def cost_teams_visible_to(user: User) -> QuerySet[Team]:
    """Teams whose costs the user may see: their own, or every team for approvers and Finance."""
    if user_can_view_all_costs(user):
        return Team.objects.all()
    return teams_of(user)


def monthly_reports_visible_to(*, user: User) -> QuerySet[MonthlyReport]:
    """Monthly reports of the teams the user may see; every report page and endpoint starts here."""
    return MonthlyReport.objects.filter(team__in=cost_teams_visible_to(user)).select_related("team")


def closed_reports(*, month: date, teams: Iterable[Team]) -> QuerySet[MonthlyReport]:
    """The stored reports of ``month`` for these teams: the one rule of which figures a month shows.

    A team whose month is closed is read from its stored report, never recomputed (prices may have changed since);
    every other team gets a live estimate from the month's chargeback. Report pages, the reports API and the cost
    dashboards all start here (``billing.costs.reports.month_reports``, ``billing.costs.dashboards.month_rows``).
    """
    return MonthlyReport.objects.filter(month=month, status=ReportStatus.CLOSED, team__in=teams)


def price_book_in_effect(*, at: datetime | None = None) -> PriceBook | None:
    """The price book in effect at ``at`` (now by default): the latest whose date has begun, in UTC."""
    day = (at or timezone.now()).astimezone(UTC).date()
    return PriceBook.objects.filter(effective_from__lte=day).order_by("-effective_from").first()


def current_gpu_rates() -> dict[str, Decimal]:
    """Model name -> hourly price of one whole GPU in the price book in effect now (empty when there is none).

    Every recommendation asks: the books' rates are read once per process (``built_once``; a price book change
    bumps the reference version, billing.apps) and the one in effect is picked by today's date (UTC), so a book that
    takes effect at midnight applies without a write.
    """
    day = timezone.now().astimezone(UTC).date()
    for effective_from, rates in built_once("price-book-rates", _every_book_rates):
        if effective_from <= day:
            return dict(rates)
    return {}


def _every_book_rates() -> tuple[tuple[date, tuple[tuple[str, Decimal], ...]], ...]:
    """Each price book's (effective_from, GPU rates), latest first."""
    books = PriceBook.objects.order_by("-effective_from").prefetch_related("gpu_prices")
    return tuple(
        (book.effective_from, tuple((price.gpu_model, price.hourly_rate) for price in book.gpu_prices.all()))
        for book in books
    )


def price_periods(*, until: datetime) -> list[PricePeriod]:
    """Every price book that takes effect before ``until``, as pure price periods (starting 00:00 UTC)."""
    books = PriceBook.objects.filter(effective_from__lt=until.date() + timedelta(days=1)).prefetch_related(
        "gpu_prices", "sla_multipliers"
    )
    return [
        PricePeriod(
            starts=datetime.combine(book.effective_from, time(0), tzinfo=UTC),
            version=book.version,
            gpu_rates={p.gpu_model.casefold(): p.hourly_rate for p in book.gpu_prices.all()},
            sla_multipliers={m.tier_slug: m.multiplier for m in book.sla_multipliers.all()},
        )
        for book in books.order_by("effective_from")
    ]


def catalog_fallback_rates() -> dict[str, Decimal]:
    """Reference GPU-hour prices of catalog models, for hours no price book covers (USD only: never converted)."""
    if settings.PORTAL_CURRENCY != "USD":
        return {}
    # One basis for every model (gpucore.pricing.CATALOG_PRICE_BASIS): the list price, never TCO for some models.
    return {
        model.name.casefold(): rate for model in catalog_from_db() if (rate := catalog_hourly_rate(model)) is not None
    }


def capacity_gpus_by_model() -> dict[str, int]:
    """Whole GPUs per model in the node pools of active clusters (the asset whose unallocated part is idle)."""
    rows = (
        NodePool.objects.filter(cluster__is_active=True)
        .values("gpu_model__name")
        .annotate(gpus=Sum(F("node_count") * F("gpus_per_node")))
    )
    return {row["gpu_model__name"]: int(row["gpus"] or 0) for row in rows}


def _pool_layout(pool: NodePool | None, mig_profile: str | None) -> dict[str, int] | None:
    """The pool's per-GPU MIG layout, which scales the share so a fully partitioned GPU bills exactly once."""
    # A pool edited since (no longer holding the profile) bills the instance's own weight, never fails the month.
    layout = (pool.mig_devices or None) if pool is not None and mig_profile else None
    return layout if layout and mig_profile in layout else None


# What ``request_allocations`` reads of each request (``held_span_rows``): no model instances (issue #15).
_ALLOCATION_FIELDS = (
    "pk",
    "team__slug",
    "name",
    "sla_tier__slug",
    "sla_tier__price_multiplier",
    "node_pool_id",
    "resource_name",
    "gpu_count",
    "replicas",
    "gpu_model_requested",
    "held_spec_json",
    # The pool's columns ``allocation_spec_of`` and ``_pool_layout`` read, in the same statement.
    "node_pool__sharing_mode",
    "node_pool__time_slice_replicas",
    "node_pool__mig_devices",
    "node_pool__gpu_model__name",
)


def _what_was_held(
    pool_id: int | None,
    resource_name: str,
    gpu_count: int,
    replicas: int,
    requested: str,
    held_spec_json: str,
    sharing_mode: str | None,
    time_slice_replicas: int | None,
    mig_devices: dict[str, int] | None,
    pool_model: str | None,
) -> tuple[AllocationSpec, dict[str, int] | None]:
    """``GpuRequest.allocation_spec_of`` and the pool's MIG layout, from a request's and its pool's columns (the
    instances are built only to ask them: one definition of what a request held)."""
    pool = None
    if pool_id is not None:
        pool = NodePool(
            pk=pool_id,
            sharing_mode=sharing_mode,
            time_slice_replicas=time_slice_replicas,
            mig_devices=mig_devices,
            gpu_model=GpuModel(name=pool_model),
        )
    request = GpuRequest(
        node_pool=pool,
        resource_name=resource_name,
        gpu_count=gpu_count,
        replicas=replicas,
        gpu_model_requested=requested,
    )
    spec = request.allocation_spec_of(json.loads(held_spec_json))
    return spec, _pool_layout(pool, spec.mig_profile)


def request_allocations(
    *, start: datetime, end: datetime, teams: Iterable[Team] | None = None, with_usage: bool = True
) -> list[Allocation]:
    """Requests that held GPUs in [start, end) (``allocations.selectors.allocation_intervals``), as allocations;
    ``teams`` keeps only theirs; ``with_usage`` False spares reading their measured use (no charge depends on it).

    The rows are plain tuples (``held_span_rows``) and what each held (``GpuRequest.allocation_spec_of``) is worked
    out once per distinct spec, pool and columns: a month holds tens of thousands of requests but few such
    combinations (issue #15: model instances were 90 % of rebuilding a month's curves)."""
    usage = usage_by_request(start=start, end=end) if with_usage else {}
    rows = held_span_rows(start=start, end=end, fields=_ALLOCATION_FIELDS, teams=teams)
    held: dict[tuple[Any, ...], tuple[AllocationSpec, dict[str, int] | None]] = {}
    allocations = []
    for row, began, finished in rows:
        pk, team, name, tier, multiplier, *columns = row
        what = tuple(columns[:6])  # the request's columns and spec text; the pool's follow from its id
        if what not in held:
            held[what] = _what_was_held(*columns)
        spec, layout = held[what]
        util, energy = usage.get(pk, (None, None))
        allocations.append(
            Allocation(
                key=f"request:{pk}",
                team=team,
                name=name,
                gpu_model=spec.gpu_model,
                strategy=spec.strategy.value,
                resource_name=spec.resource_name,
                quantity=spec.quantity,
                replicas=spec.replicas,
                mig_profile=spec.mig_profile,
                mig_layout=layout,
                time_slice_replicas=spec.time_slice_replicas,
                sla_tier=tier,
                tier_multiplier=multiplier if tier is not None else Decimal("1"),
                start=began,
                end=finished,
                request_id=pk,
                avg_utilization_pct=util,
                energy_kwh=energy,
            )
        )
    return allocations


def imported_allocations(*, start: datetime, end: datetime, teams: Iterable[Team] | None = None) -> list[Allocation]:
    """Imported historical usage overlapping [start, end), as allocations with no SLA multiplier."""
    rows = ImportedUsage.objects.filter(start__lt=end, end__gt=start).select_related("team").order_by("pk")
    if teams is not None:
        rows = rows.filter(team__in=list(teams))
    return [
        Allocation(
            key=f"import:{row.pk}",
            team=row.team.slug,
            name=row.request_label,
            gpu_model=row.gpu_model,
            strategy=row.strategy,
            resource_name=row.resource_name,
            quantity=row.quantity,
            mig_profile=row.resource_name if row.strategy == "mig" else None,
            time_slice_replicas=row.time_slice_replicas,
            start=row.start,
            end=row.end,
            imported=True,
            avg_utilization_pct=row.avg_utilization_pct,
        )
        for row in rows
    ]


def share_idle_cost() -> bool:
    """Whether idle capacity is shared among teams by allocation (``BILLING_SHARE_IDLE_COST``; off by default)."""
    return bool(getattr(settings, "BILLING_SHARE_IDLE_COST", False))


def chargeback_between(
    *, start: datetime, end: datetime, share_idle: bool | None = None, for_teams: Iterable[Team] | None = None
) -> Chargeback:
    """Every team's chargeback for [start, end) with idle cost; the pure arithmetic is ``gpucore.chargeback``.

    ``for_teams``: only those teams' charges are wanted. Unless idle cost is shared (each team's share then depends
    on every allocation), only their allocations are read, and the answer's idle and capacity figures are not the
    organisation's: read only ``teams[slug]`` of those teams from it (issue #15: a member's home page read them all).
    """
    share_idle = share_idle_cost() if share_idle is None else share_idle
    teams = None if share_idle or for_teams is None else list(for_teams)
    slugs = Team.objects.values_list("slug", flat=True) if teams is None else [team.slug for team in teams]
    return _priced(start=start, end=end, teams=teams, share_idle=share_idle, team_slugs=slugs).chargeback


@dataclass(frozen=True)
class _Priced:
    """A chargeback and the price periods, capacity and fallback rates it was computed with."""

    chargeback: Chargeback
    periods: list[PricePeriod]
    capacity: dict[str, int]
    fallback_rates: dict[str, Decimal]


def _priced(
    *,
    start: datetime,
    end: datetime,
    teams: list[Team] | None,
    share_idle: bool,
    team_slugs: Iterable[str] = (),
    with_usage: bool = True,
) -> _Priced:
    """The chargeback of [start, end) for ``teams`` (None: every team) from the database's requests, imported usage,
    price books, capacity and catalog: the one place ``chargeback_between`` and the month's curves read them.
    ``team_slugs``: teams listed even with no charge; ``with_usage``: read the measured use (the curves need none)."""
    periods = price_periods(until=end)
    capacity = capacity_gpus_by_model()
    fallback = catalog_fallback_rates()
    chargeback = compute_chargeback(
        [
            *request_allocations(start=start, end=end, teams=teams, with_usage=with_usage),
            *imported_allocations(start=start, end=end, teams=teams),
        ],
        window_start=start,
        window_end=end,
        periods=periods,
        capacity_gpus=capacity,
        fallback_rates=fallback,
        teams=team_slugs,
        share_idle=share_idle,
        catalog=catalog_from_db(),
    )
    return _Priced(chargeback, periods, capacity, fallback)


def month_chargeback(
    *,
    month: date,
    now: datetime | None = None,
    share_idle: bool | None = None,
    for_teams: Iterable[Team] | None = None,
) -> Chargeback:
    """A calendar month's chargeback; for the month in progress, up to ``now`` (an estimate). ``for_teams``: see
    ``chargeback_between``."""
    start, end = month_bounds(month)
    now = now or timezone.now()
    return chargeback_between(start=start, end=min(end, max(now, start)), share_idle=share_idle, for_teams=for_teams)


def _build_month_curves(*, month: date, teams: list[Team] | None, share_idle: bool) -> MonthCurves:
    """The curves of the month's chargeback (``gpucore.month_curves``): allocations still held run to its end."""
    start, end = month_bounds(month)
    priced = _priced(start=start, end=end, teams=teams, share_idle=share_idle, with_usage=False)
    return MonthCurves.of_chargeback(
        priced.chargeback, capacity_gpus=priced.capacity, periods=priced.periods, fallback_rates=priced.fallback_rates
    )


def month_so_far(
    *, now: datetime | None = None, for_teams: Iterable[Team] | None = None, share_idle: bool | None = None
) -> MonthSoFar:
    """This month's chargeback up to ``now``, as ``month_chargeback`` gives it, read from curves kept per process
    until an input changes (``billing.costs.month_to_date``); each team's ``recent_amount`` is its spend in the
    run-rate window (the last ``RUN_RATE_WINDOW_HOURS``, within the month).

    ``for_teams``: only those teams' figures are wanted, each read from its own curves (unless idle cost is shared:
    each team's share then depends on every allocation); the idle figures are then not the organisation's.
    """
    now = now or timezone.now()
    month = now.astimezone(UTC).date().replace(day=1)
    start, _ = month_bounds(month)
    share_idle = share_idle_cost() if share_idle is None else share_idle
    recent_since = max(start, now - timedelta(hours=int(RUN_RATE_WINDOW_HOURS)))
    if share_idle or for_teams is None:
        curves = month_curves(
            team_id=None,
            month=month,
            share_idle=share_idle,
            build=lambda: _build_month_curves(month=month, teams=None, share_idle=share_idle),
        )
        slugs = [] if for_teams is None else [team.slug for team in for_teams]
        return curves.so_far(now, teams=slugs, recent_since=recent_since)
    teams: dict[str, TeamSoFar] = {}
    so_far = None
    for team in for_teams:
        curves = month_curves(
            team_id=team.pk,
            month=month,
            share_idle=False,
            build=lambda team=team: _build_month_curves(month=month, teams=[team], share_idle=False),
        )
        so_far = curves.so_far(now, teams=[team.slug], recent_since=recent_since)
        teams[team.slug] = so_far.teams[team.slug]
    return MonthSoFar(start=start, end=so_far.end if so_far else now, teams=teams, idle_cost={}, idle_shared=False)


def team_budget_states(
    *, teams: Iterable[Team], now: datetime | None = None, so_far: MonthSoFar | None = None
) -> dict[int, MoneyBudgetState]:
    """Team id -> this month's spend against its money budget (``None`` budget when it has none), with the run-rate
    projection to month end at the last day's pace; from ``month_so_far`` (pass ``so_far`` when already read)."""
    teams = list(teams)
    now = now or timezone.now()
    month = now.astimezone(UTC).date().replace(day=1)
    start, end = month_bounds(month)
    so_far = so_far or month_so_far(now=now, for_teams=teams)
    budgets = {b.team_id: b for b in TeamBudget.objects.filter(team__in=[team.pk for team in teams])}
    states = {}
    for team in teams:
        team_charge = so_far.teams.get(team.slug)
        budget = budgets.get(team.pk)
        states[team.pk] = money_budget_state(
            spent=to_cents(team_charge.total) if team_charge else Decimal("0.00"),
            budget=budget.monthly_amount if budget else None,
            month_start=start,
            month_end=end,
            now=now,
            # The last day's allocations, from the same chargeback: the pace the projection extrapolates.
            recent_spend=team_charge.recent_amount if team_charge else Decimal(0),
            **({"thresholds_pct": budget.thresholds_pct} if budget else {}),
        )
    return states


def team_month_to_date(*, team: Team, now: datetime | None = None) -> dict[str, Any]:
    """The team's allocated GPU-hours and estimated cost this month so far, against its monthly GPU-hour budget and
    its money budget (``money``: a ``MoneyBudgetState`` with the run-rate projection to month end)."""
    return teams_month_to_date(teams=[team], now=now)[team.pk]


def teams_month_to_date(
    *, teams: Iterable[Team], now: datetime | None = None, notices: bool = True
) -> dict[int, dict[str, Any]]:
    """``team_month_to_date`` of each of ``teams`` (team id -> its answer), in one query for their money budgets and
    one for their notices (``notices=False``: none read, an empty list each), whatever the number of teams."""
    teams = list(teams)
    now = now or timezone.now()
    month = now.astimezone(UTC).date().replace(day=1)
    so_far = month_so_far(now=now, for_teams=teams)
    money = team_budget_states(teams=teams, now=now, so_far=so_far)
    by_team: dict[int, list[BudgetNotice]] = {team.pk: [] for team in teams}
    if notices and teams:
        for notice in BudgetNotice.objects.filter(team__in=teams, month=month).order_by("threshold_pct"):
            by_team[notice.team_id].append(notice)
    answers = {}
    for team in teams:
        charge = so_far.teams.get(team.slug)
        gpu_hours = charge.gpu_hours if charge else Decimal(0)
        budget = team.monthly_gpu_hour_budget
        answers[team.pk] = {
            "month": month,
            "gpu_hours": gpu_hours,
            "amount": to_cents(charge.total) if charge else Decimal("0.00"),
            "currency": settings.PORTAL_CURRENCY,
            "budget": budget,
            "budget_used_pct": round(gpu_hours / budget * 100, 1) if budget else None,
            "over_budget": bool(budget is not None and gpu_hours > budget),
            "money": money[team.pk],
            "notices": by_team[team.pk],
        }
    return answers


def home_costs(*, user: User, teams: Iterable[Team], now: datetime | None = None) -> dict[str, Any]:
    """The home page's money, from one reading of the month so far: each of ``teams``' budget state (team id ->
    ``MoneyBudgetState``), and for those who see every team's costs the month's spend and idle cost."""
    now = now or timezone.now()
    month = now.astimezone(UTC).date().replace(day=1)
    teams = list(teams)
    sees_all = user_can_view_all_costs(user)
    if not teams and not sees_all:  # nothing of money to show
        return {"budgets": {}, "month_costs": None, "currency": settings.PORTAL_CURRENCY}
    so_far = month_so_far(now=now, for_teams=None if sees_all else teams)
    fleet = None
    if sees_all:
        allocated = sum((charge.total for charge in so_far.teams.values()), Decimal(0))
        # With idle cost shared, teams' totals already carry it: the month's spend is the allocated part plus idle.
        idle = Decimal(0) if so_far.idle_shared else so_far.total_idle_cost
        fleet = {
            "month": month,
            "spent": to_cents(allocated),
            "idle": to_cents(so_far.total_idle_cost),
            "total": to_cents(allocated + idle),
        }
    return {
        "budgets": team_budget_states(teams=teams, now=now, so_far=so_far),
        "month_costs": fleet,
        "currency": settings.PORTAL_CURRENCY,
    }


def catalog_models_by_name() -> dict[str, GpuModel]:
    """Catalog GPU models by case-folded name and alias, with their MIG profiles prefetched."""
    names: dict[str, GpuModel] = {}
    for model in GpuModel.objects.prefetch_related("mig_profiles"):
        for key in (model.name, *(model.aliases or [])):
            names[str(key).casefold()] = model
    return names


def last_closed_month() -> date | None:
    """The first day of the latest month with a closed report (None: no month is closed)."""
    return MonthlyReport.objects.filter(status=ReportStatus.CLOSED).aggregate(last=Max("month"))["last"]
