"""The request list's columns: which exist, which a user shows (saved per user), what each reads, and its header.

A column reads what it shows in the list's one statement (a field, a join, a key of the frozen spec), except a
*batch* column, whose values another app computes for a page's requests at once (billing's utilization:
``register_batch_column`` in its ``ready()``, so allocations never imports billing). No column reads per row.

The choice is kept in ``SavedListColumns`` and mirrored in the session, so a list view reads no row for it once a
session has seen it; saving writes both.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode

from django.db.models import CharField, F, QuerySet, Value
from django.db.models.fields.json import KT
from django.db.models.functions import Coalesce, NullIf
from django.http import HttpRequest

from allocations.models import GpuRequest, SavedListColumns
from allocations.requests.listing import REQUEST_LIST_SORTS

REQUEST_LIST = "requests"
_SESSION_KEY = "request_list_columns"


@dataclass(frozen=True)
class ListColumn:
    """A column of the request list: ``sort`` is its key in ``REQUEST_LIST_SORTS`` (None: not sortable); ``fields``
    and ``related`` what the list's statement reads for it beyond the always-read fields."""

    key: str
    label: str
    sort: str | None = None
    default: bool = False
    fields: tuple[str, ...] = ()
    related: tuple[str, ...] = ()
    numeric: bool = False


# In the table's order. The defaults are the columns the list has always shown.
REQUEST_LIST_COLUMN_REGISTRY: tuple[ListColumn, ...] = (
    ListColumn("id", "#", sort="id", default=True),
    ListColumn("name", "Name", sort="name", default=True),
    ListColumn("workload_name", "Workload name"),
    ListColumn("team", "Team", sort="team", default=True),
    ListColumn("namespace", "Namespace", fields=("team__namespace",)),
    ListColumn("requester", "Requester", sort="requester", default=True),
    ListColumn("workload", "Workload", sort="workload", default=True),
    ListColumn("allocation", "Allocation", default=True),
    ListColumn("gpu_model", "GPU model", fields=("gpu_model_requested",)),
    ListColumn(
        "pool",
        "Pool",
        fields=("node_pool", "cluster", "node_pool__name", "cluster__name"),
        related=("node_pool", "cluster"),
    ),
    ListColumn("tier", "Tier", sort="tier", default=True),
    ListColumn("status", "Status", sort="status", default=True),
    ListColumn("cost", "Cost / month", numeric=True),
    ListColumn("utilization", "GPU utilization, 7 days", numeric=True),
    ListColumn("expires", "Expires", fields=("expires_at",)),
    ListColumn("created", "Created", sort="created", default=True),
)
_BY_KEY = {column.key: column for column in REQUEST_LIST_COLUMN_REGISTRY}
DEFAULT_REQUEST_LIST_COLUMNS: tuple[str, ...] = tuple(c.key for c in REQUEST_LIST_COLUMN_REGISTRY if c.default)

# key -> function(request ids) -> {request id: value}; filled by the apps that own the values.
_BATCH_VALUES: dict[str, Callable[[list[int]], dict[int, Any]]] = {}


def register_batch_column(key: str, values: Callable[[list[int]], dict[int, Any]]) -> None:
    """Let ``values`` fill the column ``key`` for a page of requests (one read for all of them)."""
    if key not in _BY_KEY:
        raise ValueError(f"{key!r} is not a request list column")
    _BATCH_VALUES[key] = values


def available_columns() -> list[ListColumn]:
    """The columns a user may choose: every column whose values some app provides."""
    return [c for c in REQUEST_LIST_COLUMN_REGISTRY if c.key != "utilization" or c.key in _BATCH_VALUES]


def clean_column_keys(keys: Iterable[str]) -> list[str]:
    """``keys`` that name available columns, in the table's order; ValueError when none does."""
    wanted = set(keys)
    chosen = [c.key for c in available_columns() if c.key in wanted]
    if not chosen:
        raise ValueError("columns: Choose at least one column.")
    return chosen


def chosen_columns(request: HttpRequest) -> list[str]:
    """The columns the signed-in user shows: from the session, else their saved choice (kept in the session), else
    the defaults."""
    kept = request.session.get(_SESSION_KEY)
    if kept is None:
        saved = (
            SavedListColumns.objects.filter(user=request.user, list_name=REQUEST_LIST)
            .values_list("columns", flat=True)
            .first()
        )
        kept = list(saved) if saved else list(DEFAULT_REQUEST_LIST_COLUMNS)
        request.session[_SESSION_KEY] = kept
    try:
        return clean_column_keys(kept)
    except ValueError:
        return list(DEFAULT_REQUEST_LIST_COLUMNS)


def save_columns(request: HttpRequest, keys: Iterable[str]) -> list[str]:
    """Keep the user's choice (ValueError naming ``columns`` when it names no column); the defaults on ``reset``."""
    chosen = clean_column_keys(keys)
    SavedListColumns.objects.update_or_create(user=request.user, list_name=REQUEST_LIST, defaults={"columns": chosen})
    request.session[_SESSION_KEY] = chosen
    return chosen


def with_columns(requests: QuerySet[GpuRequest], keys: Sequence[str]) -> QuerySet[GpuRequest]:
    """The list's statement reading what ``keys`` show as well (still one statement)."""
    fields = [field for key in keys for field in _BY_KEY[key].fields]
    related = [name for key in keys for name in _BY_KEY[key].related]
    if related:
        requests = requests.select_related(*related)
    if fields:
        requests = requests.only(*requests.query.deferred_loading[0], *fields)
    annotations: dict[str, Any] = {}
    if "gpu_model" in keys:
        # The model placed (frozen in the spec), else the one asked for.
        annotations["gpu_model_shown"] = Coalesce(
            NullIf(KT("spec__gpu_model"), Value("")), F("gpu_model_requested"), output_field=CharField()
        )
    if "cost" in keys:
        annotations["cost_month_amount"] = KT("spec__estimated_monthly_cost__amount")
        annotations["cost_month_currency"] = KT("spec__estimated_monthly_cost__currency")
    return requests.annotate(**annotations) if annotations else requests


def attach_batch_values(rows: Sequence[GpuRequest], keys: Sequence[str]) -> None:
    """Set each batch column's value on the rows (``row.utilization``), one call per column for all of them."""
    ids = [row.pk for row in rows]
    for key in keys:
        values = _BATCH_VALUES.get(key)
        if values is None:
            continue
        found = values(ids) if ids else {}
        for row in rows:
            setattr(row, key, found.get(row.pk))


def header_cells(keys: Sequence[str], *, sort: str, query: list[tuple[str, str]]) -> list[dict[str, Any]]:
    """The header cells of the shown columns: label, the link sorting by it (flipped when it is the current one) with
    the other filters kept (``query``: the URL's name/value pairs), and ``aria-sort`` on the current one."""
    kept = [(name, value) for name, value in query if name not in ("sort", "page")]
    descending = sort.startswith("-")
    cells: list[dict[str, Any]] = []
    for key in keys:
        column = _BY_KEY[key]
        cell: dict[str, Any] = {"key": key, "label": column.label, "href": None, "aria_sort": None}
        cell["numeric"] = column.numeric
        if column.sort is not None and column.sort in REQUEST_LIST_SORTS:
            current = sort.removeprefix("-") == column.sort
            next_sort = (column.sort if descending else f"-{column.sort}") if current else column.sort
            cell["aria_sort"] = ("descending" if descending else "ascending") if current else None
            cell["href"] = "?" + urlencode([*kept, ("sort", next_sort)])
        cells.append(cell)
    return cells


def column_choices(keys: Sequence[str]) -> list[dict[str, Any]]:
    """The chooser's boxes: every available column, ticked when shown."""
    return [{"key": c.key, "label": c.label, "shown": c.key in keys} for c in available_columns()]


def csv_header(keys: Sequence[str]) -> list[str]:
    """The export's first line: the shown columns' labels (the allocation in two columns, cost with its currency)."""
    header: list[str] = []
    for key in keys:
        if key == "allocation":
            header += ["Resource", "Units"]
        elif key == "cost":
            header += ["Cost / month", "Currency"]
        elif key == "utilization":
            header.append("GPU utilization, 7 days (%)")
        elif key in ("created", "expires"):
            header.append(f"{_BY_KEY[key].label} (UTC)")
        else:
            header.append(_BY_KEY[key].label)
    return header


def csv_cells(row: GpuRequest, keys: Sequence[str]) -> list[Any]:
    """One request's cells in the export, plain values (ISO times, numbers without grouping)."""
    cells: list[Any] = []
    for key in keys:
        cells += _CSV_CELLS[key](row)
    return cells


def _iso(value: Any) -> str:
    return value.isoformat() if value else ""


_CSV_CELLS: dict[str, Callable[[Any], list[Any]]] = {
    "id": lambda r: [r.pk],
    "name": lambda r: [r.name],
    "workload_name": lambda r: [r.workload_object_name],
    "team": lambda r: [r.team.name],
    "namespace": lambda r: [r.team.namespace],
    "requester": lambda r: [r.requester.get_username()],
    "workload": lambda r: [r.get_workload_type_display()],
    "allocation": lambda r: [r.resource_name, r.resource_units if r.resource_name else ""],
    "gpu_model": lambda r: [r.gpu_model_shown or ""],
    "pool": lambda r: [f"{r.cluster.name}/{r.node_pool.name}" if r.node_pool_id and r.cluster_id else ""],
    "tier": lambda r: [r.sla_tier.name if r.sla_tier_id else ""],
    "status": lambda r: [r.get_status_display()],
    "cost": lambda r: [r.cost_month_amount or "", r.cost_month_currency or ""],
    "utilization": lambda r: ["" if r.utilization is None else f"{r.utilization:.1f}"],
    "expires": lambda r: [_iso(r.expires_at)],
    "created": lambda r: [_iso(r.created_at)],
}
