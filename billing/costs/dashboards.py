"""Reads behind the cost dashboards: every chart's table, aggregated in SQL, scoped to the teams a user may see.

Each function returns ``(columns, rows)``: the table shown under the chart and served as its CSV. Closed months come
from the stored reports; a month not closed yet (the one in progress) from its days' stored charges and the live
chargeback of the days not stored (``billing.costs.day_charges.month_parts``), read once per page. A month is read as
sums per team, pool, GPU model, strategy and tier (``billing.costs.dashboard_rows``), never a row per request, except
the days priced live. The charts of measured use are in ``billing.costs.dashboard_usage``.
"""

from __future__ import annotations

import hashlib
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import fields
from datetime import date, datetime
from decimal import Decimal
from typing import Any

from django.conf import settings
from django.core.cache import cache
from django.db import connection
from django.db.models import Count, Q, QuerySet, Sum

from allocations.models import GpuModel, GpuRequest, NodePool, SlaTier, Team
from allocations.requests.held_intervals import windows_held
from billing.costs.charge_sums import month_sums_exist
from billing.costs.chargeback import closed_reports, month_bounds
from billing.costs.dashboard_query import DashboardQuery
from billing.costs.dashboard_rows import (
    IMPORTED_POOL,
    NO_POOL,
    NO_TIER,
    MonthRows,
    closed_line_rows,
    day_charge_group_rows,
    grouped_rows,
    merged_groups,
    top_requests,
)
from billing.costs.day_charges import MonthParts, month_parts
from billing.models import ImportedUsage, MonthlyReport, OrganisationMonthSummary, ReportStatus, TeamBudget
from gpucore.pricing import to_cents
from gpucore.vocabulary import Strategy

Table = tuple[list[str], list[list[Any]]]
IDLE_LABEL = "(idle capacity)"
CLOSED_MONTH_CACHE_SECONDS = 7 * 24 * 3600
# Part of a cached month's key: rows cached by a release whose MonthRows had other fields are never read back.
MONTH_ROWS_SHAPE = tuple(field.name for field in fields(MonthRows))


class ChargebackMemo:
    """Each month's charges (``billing.costs.day_charges.month_parts``) read once per page (several charts read
    the same month)."""

    def __init__(self, now: datetime) -> None:
        self.now = now
        self._months: dict[date, MonthParts] = {}
        self.rows: dict[date, MonthRows | None] = {}  # range_rows' months (None: left out), for the page's charts

    def get(self, month: date) -> MonthParts:
        if month not in self._months:
            self._months[month] = month_parts(month=month, now=self.now)
        return self._months[month]


def filter_choices(*, teams: QuerySet[Team]) -> dict[str, list[tuple[str, str]]]:
    """The (value, label) pairs each dashboard filter offers: visible teams and SLA tiers by name (the URL keeps
    their slugs), node pools, catalog models, strategies."""
    pools = NodePool.objects.order_by("cluster__name", "name").values_list("cluster__name", "name")
    pool_names = [f"{cluster}/{pool}" for cluster, pool in pools] + [IMPORTED_POOL]
    models = GpuModel.objects.order_by("name").values_list("name", flat=True)
    return {
        "team": list(teams.order_by("slug").values_list("slug", "name")),
        "pool": [(name, name) for name in pool_names],
        "gpu_model": [(name, name) for name in models],
        "strategy": [(strategy.value, strategy.value) for strategy in Strategy],
        "tier": [*SlaTier.objects.order_by("slug").values_list("slug", "name"), (NO_TIER, NO_TIER)],
    }


def _pools_of(request_ids: Iterable[int]) -> dict[int, str]:
    """Request id -> "cluster/pool" of the node pool it ran on (imports and unplaced requests have none)."""
    ids = sorted(set(request_ids))
    if connection.vendor == "postgresql":
        # One array parameter: an IN list of thousands of ids costs more to send and plan than to answer.
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT r.id, c.name, p.name FROM allocations_gpurequest r"
                " JOIN allocations_nodepool p ON p.id = r.node_pool_id"
                " JOIN allocations_cluster c ON c.id = p.cluster_id WHERE r.id = ANY(%s)",
                [ids],
            )
            rows = cursor.fetchall()
    else:
        rows = GpuRequest.objects.filter(pk__in=ids, node_pool__isnull=False).values_list(
            "pk", "node_pool__cluster__name", "node_pool__name"
        )
    return {pk: f"{cluster}/{pool}" for pk, cluster, pool in rows}


def _with_groups(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    pools = _pools_of(r["request"] for r in rows if r["request"] is not None)
    for row in rows:
        row["pool"] = pools.get(row["request"], IMPORTED_POOL if row["request"] is None else NO_POOL)
        row["tier"] = row["tier"] or NO_TIER
    return rows


def _closed_cache_keys(months: list[date], teams: QuerySet[Team], show_idle: bool) -> tuple[dict[date, str], set[date]]:
    """Per month every visible team that existed by its end has closed, a key naming exactly the closed reports it is
    read from; and the months with any closed report.

    Closed reports never change, so a key (those teams, the newest report id and close time) stays valid for as long
    as they exist; closing another team's month or a flushed database gives a new key, never stale rows. Closing a
    month reports every team there is, so a team created after the month was closed has no report and needs none: it
    neither keeps the month from being cached nor changes its key. One query for every month.
    """
    created = dict(teams.values_list("pk", "created_at"))
    reports = MonthlyReport.objects.filter(month__in=months, status=ReportStatus.CLOSED, team__in=teams)
    by_month: dict[date, list[tuple[int, int, datetime]]] = {}
    for month, team_id, pk, closed_at in reports.values_list("month", "team_id", "pk", "closed_at").order_by():
        by_month.setdefault(month, []).append((team_id, pk, closed_at))
    keys = {}
    for month, closed in by_month.items():
        first_close = min(at for _, _, at in closed)
        required = {pk for pk, since in created.items() if since < first_close}
        closed_teams = {team_id for team_id, _, _ in closed}
        if required and required <= closed_teams:
            stamp = (sorted(closed_teams), max(pk for _, pk, _ in closed), max(at for _, _, at in closed), show_idle,
                     MONTH_ROWS_SHAPE)  # fmt: skip
            digest = hashlib.sha256(repr(stamp).encode()).hexdigest()[:32]
            keys[month] = f"dashboards:closed:{month:%Y-%m}:{digest}"
    return keys, set(by_month)


def month_rows(
    *,
    month: date,
    teams: QuerySet[Team],
    now: datetime,
    show_idle: bool,
    memo: ChargebackMemo | None = None,
    cache_key: str | None = None,
) -> MonthRows:
    """The month's lines for these teams: from the stored report where closed, else live (``closed_reports``).

    With ``cache_key`` (``range_rows``), a month every visible team has closed is stored in the cache.
    """
    team_rows = list(teams.values_list("slug", "created_at", "pk"))
    created = {slug: at for slug, at, _ in team_rows}
    slugs = set(created)
    closed = closed_reports(month=month, teams=teams)
    closed_at = {slug: (pk, at) for pk, slug, at in closed.values_list("pk", "team__slug", "closed_at")}
    closed_slugs = set(closed_at)
    # Teams created after the month was closed have no report and need none (see _closed_cache_keys).
    first_close = min((at for _, at in closed_at.values()), default=None)
    required = {slug for slug, since in created.items() if first_close is None or since < first_close}
    report_ids = sorted(pk for pk, _ in closed_at.values())
    rows = grouped_rows(closed_line_rows(report_ids)) if report_ids else []
    summary = OrganisationMonthSummary.objects.filter(month=month).first()
    if required and closed_slugs >= required:
        idle = (Decimal(0) if summary.idle_shared else summary.idle_cost) if (summary and show_idle) else None
        data = MonthRows(month=month, closed=True, rows=merged_groups(rows), idle_cost=idle, report_ids=report_ids)
        if cache_key is not None:
            cache.set(cache_key, data, CLOSED_MONTH_CACHE_SECONDS)
        return data
    parts = (memo or ChargebackMemo(now)).get(month)
    open_slugs = slugs - closed_slugs
    open_ids = sorted(pk for slug, _, pk in team_rows if slug in open_slugs)  # by id: no join to the teams per row
    stored = summed = None
    if parts.stored_days:
        stored = Q(day__gte=parts.start.date(), day__lt=parts.through.date(), team_id__in=open_ids)
        rows += grouped_rows(day_charge_group_rows(stored))
        if month_sums_exist(month=month, through=parts.through.date()):
            summed = Q(month=month, through=parts.through.date(), team_id__in=open_ids)
    live = _with_groups([dict(row) for (slug, _), row in parts.live.items() if slug in open_slugs])
    idle_cost = summary.idle_cost if summary else parts.idle_cost
    if parts.idle_shared:
        idle_cost = Decimal(0)  # already in the teams' totals
    return MonthRows(
        month=month,
        closed=False,
        rows=merged_groups([*rows, *live]),
        idle_cost=idle_cost if show_idle else None,
        report_ids=report_ids,
        stored=stored,
        summed=summed,
        live=live,
    )


def range_rows(
    *, query: DashboardQuery, months: Iterable[date], teams: QuerySet[Team], now: datetime, memo: ChargebackMemo
) -> list[MonthRows]:
    """Each month's rows, closed months from the cache when there (months not begun yet, and past months nobody
    held GPUs in, are left out). Months already read for this page (``memo``) are not read again."""
    months = [month for month in months if month_bounds(month)[0] <= now]
    todo = [m for m in months if m not in memo.rows or (m == months[-1] and memo.rows[m] is None)]
    if todo:
        keys, with_reports = _closed_cache_keys(todo, teams, query.show_idle)
        cached = cache.get_many(list(keys.values())) if keys else {}
        unsure = [m for m in todo if keys.get(m) not in cached and m != months[-1] and m not in with_reports]
        active = _active_months(unsure)
        for month in todo:
            key = keys.get(month)
            if key in cached:
                memo.rows[month] = cached[key]
            elif month in unsure and month not in active:
                memo.rows[month] = None
            else:
                memo.rows[month] = month_rows(
                    month=month, teams=teams, now=now, show_idle=query.show_idle, memo=memo, cache_key=key
                )
    return [data for month in months if (data := memo.rows[month]) is not None]


def _active_months(months: list[date]) -> set[date]:
    """Those of ``months`` in which any request held GPUs (``windows_held``) or imported usage falls: a count per
    month in one query each, and a few requests read per month anyone held GPUs in."""
    if not months:
        return set()
    windows = [month_bounds(month) for month in months]
    imported = ImportedUsage.objects.aggregate(
        **{f"m{n}": Count("pk", filter=Q(start__lt=last, end__gt=first)) for n, (first, last) in enumerate(windows)}
    )
    held = windows_held(windows)
    return {month for n, month in enumerate(months) if imported[f"m{n}"] or held[n]}


def filtered(rows: Iterable[dict[str, Any]], query: DashboardQuery) -> list[dict[str, Any]]:
    """The rows matching every filter of the query (team, pool, GPU model, strategy, tier)."""
    return [row for row in rows if all(str(row[name]) == value for name, value in query.filters.items())]


def range_bounds(query: DashboardQuery, now: datetime) -> tuple[datetime, datetime]:
    """The query's months as [start, end), cut at ``now``."""
    start, end = month_bounds(query.first)[0], month_bounds(query.last)[1]
    return start, max(start, min(end, now))


def cost_over_time(*, query: DashboardQuery, data: list[MonthRows]) -> Table:
    """Cost per month and group (team, pool, ...) over the months, and idle capacity when asked for."""
    totals: dict[tuple[str, str], Decimal] = defaultdict(Decimal)
    idle: dict[str, Decimal] = {}
    for month in data:
        label = f"{month.month:%Y-%m}"
        for row in filtered(month.rows, query):
            totals[(label, str(row[query.group]))] += row["amount"]
        if query.show_idle and month.idle_cost:
            idle[label] = month.idle_cost
    rows = [[m, group, to_cents(amount)] for (m, group), amount in sorted(totals.items())]
    rows += [[m, IDLE_LABEL, to_cents(amount)] for m, amount in sorted(idle.items())]
    return ["month", query.group, "cost"], rows


def strategy_mix(*, rows: list[dict[str, Any]]) -> Table:
    """Per strategy: GPU-hours, cost, the all-dedicated baseline and the saving against it."""
    acc: dict[str, list[Decimal]] = defaultdict(lambda: [Decimal(0), Decimal(0), Decimal(0)])
    for row in rows:
        acc[row["strategy"]][0] += row["gpu_hours"]
        acc[row["strategy"]][1] += row["amount"]
        acc[row["strategy"]][2] += row["dedicated"]
    table = [
        [s, round(float(h), 1), to_cents(a), to_cents(d), to_cents(d - a)]
        for s, (h, a, d) in sorted(acc.items(), key=lambda kv: kv[0])
    ]
    return ["strategy", "allocated_gpu_hours", "cost", "dedicated_baseline", "saving"], table


def cost_per_request(*, query: DashboardQuery, data: list[MonthRows], limit: int = 25) -> Table:
    """The ``limit`` most expensive requests of the range (imported usage included, by its label)."""
    columns = ["team", "request", "name", "strategy", "gpu_model", "pool", "tier", "allocated_gpu_hours", "cost"]
    return columns, [
        [
            r["team"],
            r["request"] if r["request"] is not None else "import",
            r["name"],
            r["strategy"],
            r["gpu_model"],
            r["pool"],
            r["tier"],
            round(float(r["gpu_hours"]), 1),
            to_cents(r["amount"]),
        ]
        for r in top_requests(query=query, data=data, limit=limit)
    ]


def money_budget(*, query: DashboardQuery, teams: QuerySet[Team]) -> Decimal | None:
    """The monthly spending budget of the teams in view (``TeamBudget``), summed; None when none has one or when a
    filter other than team narrows the costs below what a team's budget covers."""
    if set(query.filters) - {"team"}:
        return None
    if "team" in query.filters:
        teams = teams.filter(slug=query.filters["team"])
    total = TeamBudget.objects.filter(team__in=teams, currency__in=["", settings.PORTAL_CURRENCY]).aggregate(
        total=Sum("monthly_amount")
    )["total"]
    return total


def team_budgets(*, teams: QuerySet[Team], months: int) -> dict[str, Decimal]:
    """Slug -> GPU-hour budget over ``months`` months, for teams that have a monthly budget."""
    budgets = teams.filter(monthly_gpu_hour_budget__isnull=False).values_list("slug", "monthly_gpu_hour_budget")
    return {slug: budget * months for slug, budget in budgets}
