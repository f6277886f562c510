"""The cost dashboards' charts of measured use: allocation against measured utilization per group, and the pools'
utilization by day. Read from the usage totals (``billing.metering.selectors.usage_totals``), scoped to the teams a
user may see; each returns ``(columns, rows)`` like the cost charts (``billing.costs.dashboards``).
"""

from __future__ import annotations

from collections import defaultdict
from datetime import date, datetime
from decimal import Decimal

from django.db.models import QuerySet

from allocations.models import NodePool, SharingMode, Team
from billing.costs.dashboard_query import DashboardQuery
from billing.costs.dashboard_rows import FILTERED_OUT, NOT_STORED, MonthRows, live_groups, measured_group_key
from billing.costs.dashboards import Table, filtered, range_bounds
from billing.metering.selectors import usage_totals


def allocation_vs_utilization(
    *, query: DashboardQuery, data: list[MonthRows], teams: QuerySet[Team], now: datetime
) -> Table:
    """Per group: allocated GPU-hours (what is paid for), measured GPU-hours and the time-weighted utilization.

    Measured use is grouped like the request's charge (``measured_group_key``: in the database, a few rows per
    group), so a filter on pool, model, strategy or tier selects the same requests on both sides; idle devices
    belong to no group, and a request measured but never charged in the range belongs to its team.
    """
    start, end = range_bounds(query, now)
    measured = usage_totals(
        start=start, end=end, by=("group_key",), teams=teams,
        keys={"group_key": measured_group_key(query=query, data=data)},
    )  # fmt: skip
    slugs = dict(teams.values_list("pk", "slug"))
    live = live_groups(query=query, data=data)
    allocated: dict[str, Decimal] = defaultdict(Decimal)
    for row in filtered((row for month in data for row in month.rows), query):
        allocated[str(row[query.group])] += row["gpu_hours"]
    usage: dict[str, list[float]] = defaultdict(lambda: [0.0, 0.0, 0.0])
    for (key,), total in measured.items():
        group = _measured_group(key, query, live, slugs)
        if group is None:
            continue
        acc = usage[group]
        acc[0] += total["samples"]
        acc[1] += total["util_weighted"]
        acc[2] += total["util_samples"]
    table = []
    for group in sorted(set(allocated) | set(usage)):
        samples, weighted, util_samples = usage.get(group, (0.0, 0.0, 0.0))
        util = weighted / util_samples if util_samples else None
        hours = samples / 60.0
        busy = hours * util / 100 if util is not None else None
        table.append(
            [
                group,
                round(float(allocated.get(group, 0)), 1),
                round(hours, 1),
                round(busy, 1) if busy is not None else None,
                round(util, 1) if util is not None else None,
            ]
        )
    return [query.group, "allocated_gpu_hours", "measured_gpu_hours", "busy_gpu_hours", "avg_utilization_pct"], table


def _measured_group(
    key: str | None, query: DashboardQuery, live: dict[int, str | None], slugs: dict[int, str]
) -> str | None:
    """The group a ``measured_group_key`` belongs to (None: left out of the chart)."""
    if key is None or key == FILTERED_OUT:
        return None
    if not key.startswith(NOT_STORED):
        return key
    request_text, _, team_text = key.removeprefix(NOT_STORED).partition(":")
    if not request_text:
        return None  # an idle device: no request
    request_id = int(request_text)
    if request_id in live:
        return live[request_id]
    if query.group == "team" and set(query.filters) <= {"team"}:
        group = slugs.get(int(team_text), "") if team_text else ""  # measured, not charged (held before the range)
        if group and query.filters.get("team", group) == group:
            return group
    return None


def pool_heatmap(*, query: DashboardQuery, teams: QuerySet[Team] | None, now: datetime) -> Table:
    """Average utilization per pool and UTC day of the range (pools known by cluster, GPU model and MIG or not)."""
    start, end = range_bounds(query, now)
    if teams is not None and "team" in query.filters:
        teams = teams.filter(slug=query.filters["team"])
    elif "team" in query.filters:
        teams = Team.objects.filter(slug=query.filters["team"])
    totals = usage_totals(start=start, end=end, by=("cluster_id", "gpu_model_name", "is_mig", "day"), teams=teams)
    names = _pool_names()
    cells: dict[tuple[str, date], list[float]] = defaultdict(lambda: [0.0, 0.0])
    for (cluster_id, model_name, is_mig, day), row in totals.items():
        if not row["util_samples"]:
            continue
        pool = names.get((cluster_id, model_name.casefold(), bool(is_mig)))
        label = pool or f"{model_name or 'unknown'}@{cluster_id}"
        if query.filters.get("pool") not in (None, label):
            continue
        cell = cells[(label, day)]
        cell[0] += row["util_weighted"]
        cell[1] += row["util_samples"]
    rows = [[pool, day.isoformat(), round(w / n, 1)] for (pool, day), (w, n) in sorted(cells.items())]
    return ["pool", "day", "avg_utilization_pct"], rows


def _pool_names() -> dict[tuple[int, str, bool], str]:
    names: dict[tuple[int, str, bool], str] = {}
    for pool in NodePool.objects.select_related("cluster", "gpu_model"):
        is_mig = pool.sharing_mode == SharingMode.MIG
        for dcgm in [pool.gpu_model.name, *(pool.gpu_model.dcgm_model_names or [])]:
            names.setdefault((pool.cluster_id, str(dcgm).casefold(), is_mig), str(pool))
    return names
