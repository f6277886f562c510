"""Where the cost dashboards' figures are read from, grouped in SQL as each chart draws them.

A month's charges come from up to three places: closed reports' lines (``MonthlyReportLine``), the stored days of a
month not closed (``DayCharge``, and their sums per team and group, ``DayChargeGroup``) and the days not stored yet,
priced live (``billing.costs.day_charges``). The stored ones are read through the same named columns (``c_team``,
``c_pool``, ...), so each chart asks them for what it draws: sums per team, pool, GPU model, strategy and tier
(``MonthRows.rows``, from the group sums for stored days), or the most expensive requests (from the stored days
summed per request, ``MonthRequestCharge``, where the pricing task has summed them).
Only the live days are rows per allocation, and only for as long as they are not stored.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import date
from decimal import Decimal
from functools import reduce
from operator import or_
from typing import Any

from django.db.models import (
    Case,
    CharField,
    Exists,
    Expression,
    F,
    Max,
    OuterRef,
    Q,
    QuerySet,
    Subquery,
    Sum,
    Value,
    When,
)
from django.db.models.functions import Cast, Coalesce, Concat, NullIf

from allocations.models import GpuRequest
from billing.costs.dashboard_query import DashboardQuery
from billing.models import DayCharge, DayChargeGroup, MonthlyReportLine, MonthRequestCharge

IMPORTED_POOL = "(imported)"
NO_POOL = "(no pool)"
NO_TIER = "(no tier)"
DIMENSIONS = ("team", "pool", "gpu_model", "strategy", "tier")
SUMS = ("amount", "dedicated", "gpu_hours")


@dataclass
class MonthRows:
    """A month's charges for the visible teams: ``rows`` summed per team, pool, GPU model, strategy and tier (a few
    per team, however many requests it ran), and where they were read from, for the charts that need requests."""

    month: date
    closed: bool
    rows: list[dict[str, Any]]
    idle_cost: Decimal | None
    report_ids: list[int] = field(default_factory=list)  # closed reports read
    stored: Q | None = None  # the stored days read (``DayCharge``, ``DayChargeGroup``)
    summed: Q | None = None  # the same days summed per request (``MonthRequestCharge``), where summed
    live: list[dict[str, Any]] = field(default_factory=list)  # days not stored: a row per allocation, with groups


def _tier(column: str) -> Coalesce:
    return Coalesce(NullIf(F(column), Value("")), Value(NO_TIER), output_field=CharField())


def _pool_label(prefix: str) -> Concat:
    return Concat(F(f"{prefix}cluster__name"), Value("/"), F(f"{prefix}name"), output_field=CharField())


def _pool_column(imported: Q, pool: str) -> Case:
    """A charge's pool as the dashboards name it: "cluster/pool" of ``pool`` (a path to a node pool), or the label
    of imported usage or of a request placed on none."""
    return Case(
        When(imported, then=Value(IMPORTED_POOL)),
        When(**{f"{pool}__isnull": True}, then=Value(NO_POOL)),
        default=_pool_label(f"{pool}__"),
        output_field=CharField(),
    )


def _annotated(qs: QuerySet, columns: dict[str, Any], only: set[str] | None) -> QuerySet:
    # Only the columns asked for: an annotation's joins stay in the query even where it is not selected.
    return qs.annotate(**{name: value for name, value in columns.items() if only is None or name in only})


def _request_charge_columns(pool: str) -> dict[str, Any]:
    """The dashboards' columns of a per-request charge row whose request ran on ``pool`` (a path to a node pool)."""
    return {
        "c_team": F("team__slug"),
        "c_request": F("request_id"),
        "c_pool": _pool_column(Q(request__isnull=True), pool),
        "c_tier": _tier("sla_tier"),
        "c_dedicated": F("dedicated_amount"),
    }


def day_charge_rows(stored: Q, only: set[str] | None = None) -> QuerySet[DayCharge]:
    """Stored day charges with the dashboards' columns (``only`` those named)."""
    return _annotated(DayCharge.objects.filter(stored), _request_charge_columns("request__node_pool"), only)


def month_sum_rows(summed: Q, only: set[str] | None = None) -> QuerySet[MonthRequestCharge]:
    """A month's stored days summed per request (``billing.costs.charge_sums``), with the dashboards' columns
    (``only`` those named; the pool is the one the request ran on when summed)."""
    return _annotated(MonthRequestCharge.objects.filter(summed), _request_charge_columns("node_pool"), only)


def day_charge_group_rows(stored: Q) -> QuerySet[DayChargeGroup]:
    """Stored days summed per team and group (``DayChargeGroup``), with the dashboards' columns: what the charts
    that draw sums read, a few rows per team and day."""
    return DayChargeGroup.objects.filter(stored).annotate(
        c_team=F("team__slug"),
        c_pool=_pool_column(Q(imported=True), "node_pool"),
        c_tier=_tier("sla_tier"),
        c_dedicated=F("dedicated_amount"),
    )


def closed_line_rows(report_ids: list[int], only: set[str] | None = None) -> QuerySet[MonthlyReportLine]:
    """Closed reports' lines with the dashboards' columns (``only`` those named; the pool is the request's, as for
    the stored days)."""
    pool = GpuRequest.objects.filter(pk=OuterRef("request_ref"), node_pool__isnull=False).values(
        label=_pool_label("node_pool__")
    )
    columns = {
        "c_team": F("report__team__slug"),
        "c_request": F("request_ref"),
        "c_pool": Case(
            When(request_ref__isnull=True, then=Value(IMPORTED_POOL)),
            default=Coalesce(Subquery(pool), Value(NO_POOL)),
            output_field=CharField(),
        ),
        "c_tier": _tier("sla_tier"),
        "c_dedicated": F("dedicated_amount"),
    }
    return _annotated(MonthlyReportLine.objects.filter(report_id__in=report_ids), columns, only)


_COLUMNS = {"team": "c_team", "pool": "c_pool", "gpu_model": "gpu_model", "strategy": "strategy", "tier": "c_tier"}


def _filtered_qs(qs: QuerySet, query: DashboardQuery | None) -> QuerySet:
    if query is None:
        return qs
    return qs.filter(**{_COLUMNS[name]: value for name, value in query.filters.items()})


def grouped_rows(qs: QuerySet) -> list[dict[str, Any]]:
    """The rows summed per team, pool, GPU model, strategy and tier."""
    grouped = (
        qs.values("c_team", "c_pool", "gpu_model", "strategy", "c_tier")
        .annotate(s_amount=Sum("amount"), s_dedicated=Sum("c_dedicated"), s_hours=Sum("allocated_gpu_hours"))
        .order_by()
    )
    return [
        {
            "team": r["c_team"],
            "pool": r["c_pool"],
            "gpu_model": r["gpu_model"],
            "strategy": r["strategy"],
            "tier": r["c_tier"],
            "amount": r["s_amount"] or Decimal(0),
            "dedicated": r["s_dedicated"] or Decimal(0),
            "gpu_hours": r["s_hours"] or Decimal(0),
        }
        for r in grouped
    ]


def merged_groups(rows: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """Rows of the same team, pool, GPU model, strategy and tier (from several places) as one."""
    merged: dict[tuple[str, ...], dict[str, Any]] = {}
    for row in rows:
        key = tuple(row[name] for name in DIMENSIONS)
        into = merged.setdefault(key, {**{name: row[name] for name in DIMENSIONS}, **dict.fromkeys(SUMS, Decimal(0))})
        for name in SUMS:
            into[name] += row[name]
    return list(merged.values())


def _stored_sources(data: list[MonthRows], only: set[str] | None = None) -> list[QuerySet]:
    sources = []
    report_ids = [pk for month in data for pk in month.report_ids]
    if report_ids:
        sources.append(closed_line_rows(report_ids, only))
    summed = [month.summed for month in data if month.summed is not None]
    if summed:
        sources.append(month_sum_rows(reduce(or_, summed), only))
    stored = [month.stored for month in data if month.stored is not None and month.summed is None]
    if stored:
        sources.append(day_charge_rows(reduce(or_, stored), only))
    return sources


def _request_key(row: dict[str, Any]) -> tuple[str, int | None, str]:
    # A request is one row however it was named; an import is known by its label.
    return (row["team"], row["request"], row["name"] if row["request"] is None else "")


def _with_import_label(qs: QuerySet) -> QuerySet:
    return qs.annotate(c_import=Case(When(c_request__isnull=True, then=F("name")), default=Value("")))


def _by_request(qs: QuerySet) -> QuerySet:
    """Summed per team and request (imports: per label), most expensive first: the sums only, so the ranking reads
    no pool, name or tier of the requests it passes over (``_details`` reads them for the ones shown)."""
    return (
        _with_import_label(qs)
        .values("c_team", "c_request", "c_import")
        .annotate(s_amount=Sum("amount"), s_hours=Sum("allocated_gpu_hours"))
        .order_by("-s_amount", "c_team", "c_request", "c_import")
    )


def _request_row(r: dict[str, Any]) -> dict[str, Any]:
    return {
        "team": r["c_team"],
        "request": r["c_request"],
        "name": r["c_import"],
        "amount": r["s_amount"] or Decimal(0),
        "gpu_hours": r["s_hours"] or Decimal(0),
    }


def _details(qs: QuerySet, keys: set[tuple[str, int | None, str]]) -> dict[tuple[str, int | None, str], dict]:
    """The name, strategy, GPU model, pool and tier of these requests (imports: labels) as charged."""
    rows = (
        _with_import_label(_these_requests(qs, keys))
        .values("c_team", "c_request", "c_import", "c_pool")
        .annotate(m_name=Max("name"), m_strategy=Max("strategy"), m_model=Max("gpu_model"), m_tier=Max("c_tier"))
        .order_by()
    )
    found = {}
    for r in rows:
        key = (r["c_team"], r["c_request"], r["c_import"])
        found[key] = {"name": r["m_name"], "strategy": r["m_strategy"], "gpu_model": r["m_model"],
                      "pool": r["c_pool"], "tier": r["m_tier"]}  # fmt: skip
    return found


def _these_requests(qs: QuerySet, keys: set[tuple[str, int | None, str]]) -> QuerySet:
    ids = {request for _, request, _ in keys if request is not None}
    labels = {name for _, request, name in keys if request is None}
    return qs.filter(Q(c_request__in=ids) | Q(c_request__isnull=True, name__in=labels))


def top_requests(*, query: DashboardQuery, data: list[MonthRows], limit: int = 25) -> list[dict[str, Any]]:
    """The ``limit`` most expensive requests of the months (imports by their label), exact to the cent.

    Each place is asked for its ``depth`` most expensive; a request in none of those lists costs at most the sum of
    their last amounts, so once the ``limit``-th candidate costs that much or more the candidates are the answer.
    Otherwise the lists go deeper: a few rows per chart, not one per request.
    """
    sources = [_filtered_qs(qs, query) for qs in _stored_sources(data)]
    live: dict[tuple[str, int | None, str], dict[str, Any]] = {}
    for row in (r for month in data for r in month.live if _passes(r, query)):
        into = live.setdefault(_request_key(row), {**row, "amount": Decimal(0), "gpu_hours": Decimal(0)})
        into["amount"] += row["amount"]
        into["gpu_hours"] += row["gpu_hours"]
    live_order = sorted(live.values(), key=lambda r: r["amount"], reverse=True)
    depth = limit
    while True:
        tops = [[_request_row(r) for r in _by_request(qs)[:depth]] for qs in sources]
        tops.append(live_order[:depth])
        bound = sum((rows[-1]["amount"] for rows in tops if len(rows) == depth), start=Decimal(0))
        exhausted = all(len(rows) < depth for rows in tops)
        candidates = {_request_key(row) for rows in tops for row in rows}
        if not exhausted and _cannot_settle(tops, live, candidates, depth, bound, limit):
            depth *= 2
            continue
        totals: dict[tuple[str, int | None, str], dict[str, Any]] = {}
        for index, qs in enumerate(sources):
            seen = {_request_key(row): row for row in tops[index]}
            missing = candidates - set(seen)
            rows = list(seen.values())
            if missing and len(tops[index]) == depth:
                fetched = map(_request_row, _by_request(_these_requests(qs, missing)))
                rows += [row for row in fetched if _request_key(row) in missing]
            for row in rows:
                _add_request(totals, row)
        for key in candidates:
            if key in live:
                _add_request(totals, live[key])
        ranked = sorted(totals.values(), key=_rank)[:limit]
        if exhausted or (len(ranked) == limit and ranked[-1]["amount"] >= bound):
            return _described(ranked, sources, live)
        depth *= 2


def _described(
    ranked: list[dict[str, Any]], sources: list[QuerySet], live: dict[tuple[str, int | None, str], dict[str, Any]]
) -> list[dict[str, Any]]:
    """The ranked requests with what they were charged as, from the first place that has them (closed months, then
    stored days, then live days)."""
    wanted = {_request_key(row) for row in ranked}
    described: dict[tuple[str, int | None, str], dict[str, Any]] = {}
    for qs in sources:
        for key, details in _details(qs, wanted - set(described)).items():
            described.setdefault(key, details)
    for key in wanted - set(described):
        row = live[key]
        described[key] = {name: row[name] for name in ("name", "strategy", "gpu_model", "pool", "tier")}
    return [{**row, **described[_request_key(row)]} for row in ranked]


def _cannot_settle(
    tops: list[list[dict[str, Any]]],
    live: dict[tuple[str, int | None, str], dict[str, Any]],
    candidates: set[tuple[str, int | None, str]],
    depth: int,
    bound: Decimal,
    limit: int,
) -> bool:
    """Whether the candidates' most they can cost (what the lists give, plus the last amount of each list a candidate
    is missing from) already says the ``limit``-th of them costs less than ``bound``: then reading what the lists
    miss would not settle the ranking, and the lists go deeper first."""
    most: dict[tuple[str, int | None, str], Decimal] = dict.fromkeys(candidates, Decimal(0))
    for index, rows in enumerate(tops):
        given = {_request_key(row): row["amount"] for row in rows}
        full = len(rows) == depth
        for key in candidates:
            if key in given:
                most[key] += given[key]
            elif index == len(tops) - 1:
                most[key] += live[key]["amount"] if key in live else Decimal(0)
            elif full:
                most[key] += rows[-1]["amount"]
    ranked = sorted(most.values(), reverse=True)
    return len(ranked) < limit or ranked[limit - 1] < bound


def _add_request(totals: dict[tuple[str, int | None, str], dict[str, Any]], row: dict[str, Any]) -> None:
    into = totals.get(_request_key(row))
    if into is None:
        totals[_request_key(row)] = {**row}
        return
    into["amount"] += row["amount"]
    into["gpu_hours"] += row["gpu_hours"]


def _rank(row: dict[str, Any]) -> tuple[Decimal, str, int, str]:
    return (-row["amount"], row["team"], row["request"] if row["request"] is not None else -1, row["name"])


def _passes(row: dict[str, Any], query: DashboardQuery | None) -> bool:
    return query is None or all(str(row[name]) == value for name, value in query.filters.items())


# Measured use's group keys other than a group's value: a request charged under a group the filters leave out, and
# a request no stored charge names (followed by "<request id>:<team id>"). PostgreSQL text holds no NUL.
FILTERED_OUT = "\x01filtered"
NOT_STORED = "\x01request:"


def measured_group_key(*, query: DashboardQuery, data: list[MonthRows]) -> Expression:
    """What a usage totals row's measured use is grouped by, as an expression over its ``request_id`` and
    ``team_id`` for ``usage_totals(keys=...)``: the value of the query's group (team, pool, ...) its request was
    charged under in the stored charges of the months, ``FILTERED_OUT`` when those charges do not pass the query's
    filters, else ``NOT_STORED`` with the request and team (charged only live, or not at all: the caller decides).
    The database looks each request up in the charges, so no row per request reaches Python. Imports have no
    measured use."""
    column = _COLUMNS[query.group]
    # Looked up once per usage row: only the columns the lookup reads, so only their joins.
    sources = _stored_sources(data, only={"c_request", column, *(_COLUMNS[name] for name in query.filters)})
    not_stored = Concat(
        Value(NOT_STORED), Cast("request_id", CharField()), Value(":"), Cast("team_id", CharField()),
        output_field=CharField(),
    )  # fmt: skip
    if not sources:
        return not_stored
    passing = [
        Subquery(_filtered_qs(qs, query).filter(c_request=OuterRef("request_id")).values(column)[:1]) for qs in sources
    ]
    charged = reduce(or_, (Exists(qs.filter(c_request=OuterRef("request_id"))) for qs in sources))
    other = Case(When(charged, then=Value(FILTERED_OUT)), default=not_stored, output_field=CharField())
    return Coalesce(*passing, other, output_field=CharField())


def live_groups(*, query: DashboardQuery, data: list[MonthRows]) -> dict[int, str | None]:
    """Request id -> the value of the query's group it was charged under on the days priced live (None: those
    charges do not pass the query's filters)."""
    groups: dict[int, str | None] = {}
    for row in (row for month in data for row in month.live if row["request"] is not None):
        groups[row["request"]] = str(row[query.group]) if _passes(row, query) else None
    return groups
