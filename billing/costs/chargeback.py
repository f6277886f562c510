"""Reads of a chargeback: the month's window, the chargeback's inputs and a month's chargeback and curves.

The arithmetic is pure (``gpucore.chargeback``, ``gpucore.month_curves``); this module gathers its inputs: the spans
each request held GPUs (``allocations.requests.held_intervals.allocation_intervals``) with what it held
(``GpuRequest.allocation_spec``), imported usage, the price books in effect (``billing.costs.selectors``), the
capacity of the pools and the measured use (``billing.metering``). Which months are read from their stored report
instead (``closed_reports``) is decided here too.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import UTC, date, datetime, time
from decimal import Decimal
from typing import Any, TypeVar

from django.conf import settings
from django.db.models import F, Max, QuerySet, Sum
from django.utils import timezone

from allocations.models import GpuModel, GpuRequest, NodePool, Team
from allocations.reference_data import catalog_from_db
from allocations.requests.held_intervals import held_span_rows
from billing.costs.selectors import catalog_fallback_rates, price_periods
from billing.metering.selectors import usage_by_request
from billing.models import ImportedUsage, MonthlyReport, ReportStatus
from gpucore.chargeback import Allocation, Chargeback, PricePeriod, TeamCharge, compute_chargeback
from gpucore.manifests import AllocationSpec
from gpucore.month_curves import MonthCurves
from infra.reference_cache import MONTH_HELD, MONTH_PRICES, ROLLUPS, cached

_T = TypeVar("_T")


def next_month(month: date) -> date:
    """The first day of the calendar month after the one containing ``month``."""
    return date(month.year + (month.month == 12), month.month % 12 + 1, 1)


def month_bounds(month: date) -> tuple[datetime, datetime]:
    """The aware UTC start and end of the calendar month containing ``month``."""
    start = datetime(month.year, month.month, 1, tzinfo=UTC)
    return start, datetime.combine(next_month(month), time(0), tzinfo=UTC)


def closed_reports(*, month: date, teams: Iterable[Team]) -> QuerySet[MonthlyReport]:
    """The stored reports of ``month`` for these teams: the one rule of which figures a month shows.

    A team whose month is closed is read from its stored report, never recomputed (prices may have changed since);
    every other team gets a live estimate from the month's chargeback. Report pages, the reports API and the cost
    dashboards all start here (``billing.costs.reports.month_reports``, ``billing.costs.dashboards.month_rows``).
    """
    return MonthlyReport.objects.filter(month=month, status=ReportStatus.CLOSED, team__in=teams)


def last_closed_month() -> date | None:
    """The first day of the latest month with a closed report (None: no month is closed)."""
    return MonthlyReport.objects.filter(status=ReportStatus.CLOSED).aggregate(last=Max("month"))["last"]


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
    # The layout its nodes run since MIG plans when the configured one lacks the profile; a pool edited since (no
    # longer holding the profile anywhere) bills the instance's own weight, never fails the month.
    return pool.mig_layout_holding(mig_profile) if pool is not None and mig_profile else None


# What ``request_allocations`` reads of each request (``held_span_rows``): no model instances.
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
    "node_pool__live_mig_layouts",
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
    live_mig_layouts: list[dict[str, Any]] | None,
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
            mig_devices=mig_devices or {},
            live_mig_layouts=live_mig_layouts or [],
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
    """Requests that held GPUs in [start, end) (``allocations.requests.held_intervals.allocation_intervals``), as
    allocations; ``teams`` keeps only theirs; ``with_usage`` False spares reading their measured use (no charge
    depends on it).

    The rows are plain tuples (``held_span_rows``) and what each held (``GpuRequest.allocation_spec_of``) is worked
    out once per distinct spec, pool and columns: a month holds tens of thousands of requests but few such
    combinations, and building a model instance per request would dominate rebuilding a month's curves."""
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
    organisation's: read only ``teams[slug]`` of those teams from it (a member's home page need not read every team's).
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


def build_month_curves(*, month: date, teams: list[Team] | None, share_idle: bool) -> MonthCurves:
    """The curves of the month's chargeback (``gpucore.month_curves``): allocations still held run to its end."""
    start, end = month_bounds(month)
    priced = _priced(start=start, end=end, teams=teams, share_idle=share_idle, with_usage=False)
    return MonthCurves.of_chargeback(
        priced.chargeback, capacity_gpus=priced.capacity, periods=priced.periods, fallback_rates=priced.fallback_rates
    )


def team_month_charge(*, team: Team, now: datetime | None = None, share_idle: bool | None = None) -> TeamCharge:
    """The team's charge for the month up to the start of ``now``'s hour (``priced_to``), as the team page's waste
    table and a lead's home show it.

    Pricing every allocation of the month takes a second for a team holding thousands, so the answer is kept in the
    reference cache for that hour (while prices, what the teams held and the rollups are unchanged). Priced to the
    hour's start, the kept answer is exact for the whole hour: the budget figures beside it read the same moment."""
    to = priced_to(now or timezone.now())
    month = to.date().replace(day=1)

    def build() -> TeamCharge:
        charge = month_chargeback(month=month, now=to, share_idle=share_idle, for_teams=[team])
        return charge.teams.get(team.slug) or TeamCharge(team.slug)

    return kept_for_the_hour(f"team-month-charge:{team.pk}:{share_idle}", to, build)


def priced_to(now: datetime) -> datetime:
    """The start of ``now``'s UTC hour: the moment a page's month-so-far money is priced to, so that a figure kept for
    the hour (``team_month_charge``) and one read from the curves beside it agree to the cent, and the page can say
    which time they are to."""
    return now.astimezone(UTC).replace(minute=0, second=0, microsecond=0)


def kept_for_the_hour(key: str, now: datetime, build: Callable[[], _T]) -> _T:
    """``build()`` for the month so far, kept in the reference cache for the hour of ``now`` while what a month's
    charge is priced from (prices, what the teams held, the rollups) is unchanged."""
    hour = now.astimezone(UTC).strftime("%Y-%m-%dT%H")
    return cached((MONTH_PRICES, MONTH_HELD, ROLLUPS), f"{key}:{hour}", build, shared=True)
