"""Reads behind the cost dashboards: every chart's table, aggregated in SQL, scoped to the teams a user may see.

Each function returns ``(columns, rows)``: the table shown under the chart and served as its CSV. Closed months come
from the stored reports; the month in progress (or one not closed yet) from the live chargeback, which is computed
once per page from per-request aggregates, never from a Python loop over rollup rows.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from datetime import date, datetime
from decimal import Decimal
from typing import Any

from django.db.models import Count, Q, QuerySet, Sum

from allocations.models import NodePool, SharingMode, Team
from allocations.selectors import allocation_intervals
from billing.costs.selectors import closed_reports, month_bounds, month_chargeback
from billing.metering.selectors import rollups_between, utilization_samples, utilization_weighted_sum
from billing.models import ImportedUsage, MonthlyReport, MonthlyReportLine, OrganisationMonthSummary, ReportStatus
from gpucore.chargeback import Chargeback
from gpucore.pricing import to_cents

Table = tuple[list[str], list[list[Any]]]
IDLE_LABEL = "(idle capacity)"


def months_back(month: date, count: int) -> list[date]:
    """``count`` first-of-month dates ending with ``month``, oldest first."""
    out = []
    year, mon = month.year, month.month
    for _ in range(count):
        out.append(date(year, mon, 1))
        year, mon = (year - 1, 12) if mon == 1 else (year, mon - 1)
    return out[::-1]


@dataclass
class MonthRows:
    """A month's chargeback lines for the visible teams, grouped by team, request and strategy."""

    month: date
    closed: bool
    rows: list[dict[str, Any]]
    idle_cost: Decimal | None
    chargeback: Chargeback | None = None


class ChargebackMemo:
    """Each month's live chargeback computed once per page (several charts read the same month)."""

    def __init__(self, now: datetime) -> None:
        self.now = now
        self._months: dict[date, Chargeback] = {}

    def get(self, month: date) -> Chargeback:
        if month not in self._months:
            self._months[month] = month_chargeback(month=month, now=self.now)
        return self._months[month]


def month_rows(
    *, month: date, teams: QuerySet[Team], now: datetime, show_idle: bool, memo: ChargebackMemo | None = None
) -> MonthRows:
    """The month's lines for these teams: from the stored report where closed, else live (``closed_reports``)."""
    slugs = set(teams.values_list("slug", flat=True))
    closed = closed_reports(month=month, teams=teams)
    closed_slugs = set(closed.values_list("team__slug", flat=True))
    rows: list[dict[str, Any]] = []
    if closed_slugs:
        grouped = (
            MonthlyReportLine.objects.filter(report__in=closed)
            .values("report__team__slug", "request_ref", "name", "strategy", "gpu_model")
            .annotate(
                amount=Sum("amount"),
                dedicated=Sum("dedicated_amount"),
                gpu_hours=Sum("allocated_gpu_hours"),
            )
            .order_by()
        )
        rows = [
            {
                "team": r["report__team__slug"],
                "request": r["request_ref"],
                "name": r["name"],
                "strategy": r["strategy"],
                "gpu_model": r["gpu_model"],
                "amount": r["amount"] or Decimal(0),
                "dedicated": r["dedicated"] or Decimal(0),
                "gpu_hours": r["gpu_hours"] or Decimal(0),
            }
            for r in grouped
        ]
    summary = OrganisationMonthSummary.objects.filter(month=month).first()
    if slugs and closed_slugs == slugs:
        idle = summary.idle_cost if (summary and show_idle) else None
        return MonthRows(month=month, closed=True, rows=rows, idle_cost=idle)
    chargeback = (memo or ChargebackMemo(now)).get(month)
    merged: dict[tuple, dict[str, Any]] = {}
    for slug, charge in chargeback.teams.items():
        if slug not in slugs or slug in closed_slugs:
            continue
        for line in charge.lines:
            a = line.allocation
            key = (slug, a.key)
            row = merged.setdefault(
                key,
                {
                    "team": slug,
                    "request": a.request_id,
                    "name": a.name,
                    "strategy": a.strategy,
                    "gpu_model": a.gpu_model,
                    "amount": Decimal(0),
                    "dedicated": Decimal(0),
                    "gpu_hours": Decimal(0),
                },
            )
            row["amount"] += line.amount
            row["dedicated"] += line.dedicated_amount
            row["gpu_hours"] += line.allocated_gpu_hours
    idle_cost = summary.idle_cost if summary else chargeback.total_idle_cost
    rows += merged.values()
    return MonthRows(
        month=month, closed=False, rows=rows, idle_cost=idle_cost if show_idle else None, chargeback=chargeback
    )


def cost_over_time(
    *,
    month: date,
    teams: QuerySet[Team],
    now: datetime,
    show_idle: bool,
    months: int = 12,
    memo: ChargebackMemo | None = None,
) -> Table:
    """Cost per team per month for the last ``months`` months (and idle capacity for those who may see it)."""
    span = months_back(month, months)
    slugs = list(teams.values_list("slug", flat=True))
    stored = (
        MonthlyReport.objects.filter(month__in=span, status=ReportStatus.CLOSED, team__slug__in=slugs)
        .values("month", "team__slug")
        .annotate(total=Sum("total"))
        .order_by()
    )
    totals: dict[tuple[date, str], Decimal] = {(r["month"], r["team__slug"]): r["total"] for r in stored}
    closed_months = {m for m, _ in totals}
    idle: dict[date, Decimal] = {}
    if show_idle:
        for s in OrganisationMonthSummary.objects.filter(month__in=span):
            idle[s.month] = Decimal(0) if s.idle_shared else s.idle_cost
    for m in span:
        if m in closed_months or month_bounds(m)[0] > now:
            continue
        if m != span[-1] and not _had_activity(m):
            continue
        charge = (memo or ChargebackMemo(now)).get(m)
        for slug in slugs:
            team = charge.teams.get(slug)
            if team is not None and team.total:
                totals[(m, slug)] = team.total
        if show_idle and not charge.idle_shared:
            idle[m] = charge.total_idle_cost
    rows = [[f"{m:%Y-%m}", slug, to_cents(amount)] for (m, slug), amount in sorted(totals.items())]
    rows += [[f"{m:%Y-%m}", IDLE_LABEL, to_cents(amount)] for m, amount in sorted(idle.items()) if amount]
    return ["month", "team", "cost"], rows


def _had_activity(month: date) -> bool:
    """Whether any request held GPUs in the month (``allocation_intervals``), or imported usage falls in it."""
    start, end = month_bounds(month)
    held = allocation_intervals(start=start, end=end)
    return bool(held) or ImportedUsage.objects.filter(start__lt=end, end__gt=start).exists()


def allocation_vs_utilization(*, data: MonthRows, teams: QuerySet[Team]) -> Table:
    """Per team: allocated GPU-hours (what is paid for), measured GPU-hours and the time-weighted utilization."""
    start, end = month_bounds(data.month)
    measured = (
        rollups_between(start=start, end=end)
        .filter(team__in=teams)
        .values("team__slug")
        .annotate(
            samples=Sum("sample_count"),
            util_weighted=utilization_weighted_sum(),
            util_samples=utilization_samples(),
        )
        .order_by()
    )
    by_team = {r["team__slug"]: r for r in measured}
    allocated: dict[str, Decimal] = defaultdict(Decimal)
    for row in data.rows:
        allocated[row["team"]] += row["gpu_hours"]
    rows = []
    for slug in sorted(set(allocated) | set(by_team)):
        m = by_team.get(slug, {})
        util = m["util_weighted"] / m["util_samples"] if m.get("util_samples") else None
        hours = (m.get("samples") or 0) / 60.0
        busy = hours * util / 100 if util is not None else None
        rows.append(
            [
                slug,
                round(float(allocated.get(slug, 0)), 1),
                round(hours, 1),
                round(busy, 1) if busy is not None else None,
                round(util, 1) if util is not None else None,
            ]
        )
    return ["team", "allocated_gpu_hours", "measured_gpu_hours", "busy_gpu_hours", "avg_utilization_pct"], rows


def strategy_mix(*, data: MonthRows) -> Table:
    """Per strategy: GPU-hours, cost, the all-dedicated baseline and the saving against it."""
    acc: dict[str, list[Decimal]] = defaultdict(lambda: [Decimal(0), Decimal(0), Decimal(0)])
    for row in data.rows:
        acc[row["strategy"]][0] += row["gpu_hours"]
        acc[row["strategy"]][1] += row["amount"]
        acc[row["strategy"]][2] += row["dedicated"]
    rows = [
        [s, round(float(h), 1), to_cents(a), to_cents(d), to_cents(d - a)]
        for s, (h, a, d) in sorted(acc.items(), key=lambda kv: kv[0])
    ]
    return ["strategy", "allocated_gpu_hours", "cost", "dedicated_baseline", "saving"], rows


def cost_per_request(*, data: MonthRows, limit: int = 25) -> Table:
    """The ``limit`` most expensive requests of the month (imported usage included, by its label)."""
    rows = sorted(data.rows, key=lambda r: r["amount"], reverse=True)[:limit]
    return ["team", "request", "name", "strategy", "gpu_model", "allocated_gpu_hours", "cost"], [
        [
            r["team"],
            r["request"] if r["request"] is not None else "import",
            r["name"],
            r["strategy"],
            r["gpu_model"],
            round(float(r["gpu_hours"]), 1),
            to_cents(r["amount"]),
        ]
        for r in rows
    ]


def pool_heatmap(*, month: date, teams: QuerySet[Team] | None, now: datetime) -> Table:
    """Average utilization per pool and hour of the month (pools known by cluster, GPU model and MIG or not)."""
    start, end = month_bounds(month)
    qs = rollups_between(start=start, end=min(end, now))
    if teams is not None:
        qs = qs.filter(team__in=teams)
    grouped = (
        qs.values("cluster_id", "gpu_model_name", "hour")
        .annotate(
            util_weighted=utilization_weighted_sum(),
            util_samples=utilization_samples(),
            mig=Count("id", filter=~Q(mig_instance="")),
        )
        .order_by("hour")
    )
    names = _pool_names()
    rows = []
    for r in grouped:
        if not r["util_samples"]:
            continue
        pool = names.get((r["cluster_id"], r["gpu_model_name"].casefold(), bool(r["mig"])))
        label = pool or f"{r['gpu_model_name'] or 'unknown'}@{r['cluster_id']}"
        rows.append([label, r["hour"].isoformat(), round(r["util_weighted"] / r["util_samples"], 1)])
    return ["pool", "hour", "avg_utilization_pct"], rows


def _pool_names() -> dict[tuple[int, str, bool], str]:
    names: dict[tuple[int, str, bool], str] = {}
    for pool in NodePool.objects.select_related("cluster", "gpu_model"):
        is_mig = pool.sharing_mode == SharingMode.MIG
        for dcgm in [pool.gpu_model.name, *(pool.gpu_model.dcgm_model_names or [])]:
            names.setdefault((pool.cluster_id, str(dcgm).casefold(), is_mig), str(pool))
    return names
