"""The requests API's rows: what ``GpuRequestSerializer`` answers, read as plain rows and converted through its fields.

A list page built model instances (and five related ones) per row and a 33-field serializer per call, which was most
of what a call cost (issue #15); the views read ``gpu_request_values`` and answer ``gpu_request_rows`` instead, and
``tests/allocations/api/test_requests.py`` checks both against the serializer field for field.

With no filter, search or ordering asked, ``VisibleRequestRows`` reads them with statements the ORM compiles once per
process per shape and runs with the ids of each call (``tests/allocations/api/test_request_reads.py`` checks its
answers against the querysets' path).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import datetime, tzinfo
from typing import Any

from django.core.exceptions import FieldDoesNotExist
from django.db import connections, models
from django.db.models import OuterRef, QuerySet, Subquery
from django.db.models.query import MAX_GET_RESULTS
from django.http import Http404
from django.utils import timezone
from rest_framework import ISO_8601, serializers

from allocations.api.renderers import JsonText
from allocations.api.serializers import GpuRequestSerializer
from allocations.compiled_reads import column_converters, converted_rows, fits_bigint, values_names
from allocations.models import GpuRequest
from allocations.pagination import COUNTED as _COUNTED
from allocations.pagination import RowSource, bounded_count_sql, with_bounded_count
from allocations.prepared_cursors import DATETIME_TIMESTAMPS, ISO_UTC_TIMESTAMPS, prepared_cursor
from allocations.selectors import gpu_request_scope, requests_of_member_teams

# Related fields read as correlated subqueries on the primary key, not joins: PostgreSQL spent 4-12 ms planning the
# five-way join of the list's page (longer than running it), and microseconds planning these (issue #15).
# Foreign key -> (the alias of the column read, the related model's column shown).
_RELATED_COLUMNS: dict[str, tuple[str, str]] = {
    "team": ("team_slug", "slug"),
    "requester": ("requester_username", "username"),
    "cluster": ("cluster_name", "name"),
    "node_pool": ("node_pool_name", "name"),
    "sla_tier": ("sla_tier_slug", "slug"),
}
# What each field of GpuRequestSerializer reads from a row of ``gpu_request_values``.
GPU_REQUEST_COLUMNS: dict[str, str] = {
    **{name: name for name in GpuRequestSerializer.Meta.fields},
    **{name: alias for name, (alias, _) in _RELATED_COLUMNS.items()},
    "gpu_model": "gpu_model_requested",
    # The frozen spec as the database keeps its JSON text (GpuRequest.spec_text), written into the answer as it is.
    "spec": "spec_text",
}


def gpu_request_values(queryset: QuerySet[GpuRequest], fields: Iterable[str]) -> QuerySet:
    """The requests as rows (dicts) with the id and the columns the fields show, and nothing else: no model
    instances, no related objects, not the ~4 KB spec unless asked for. ``gpu_request_rows`` turns them into the
    answer. The queryset may be a page's slice."""
    fields = set(fields)
    related = {alias: subquery for name, (alias, subquery) in _related_subqueries().items() if name in fields}
    return queryset.annotate(**related).values("id", *(GPU_REQUEST_COLUMNS[name] for name in fields))


@functools.cache
def _related_subqueries() -> dict[str, tuple[str, Subquery]]:
    """Each related field's alias and subquery, built once per process (annotate() resolves a copy each time)."""
    answer = {}
    for name, (alias, column) in _RELATED_COLUMNS.items():
        key = GpuRequest._meta.get_field(name)
        rows = key.related_model._base_manager.filter(pk=OuterRef(key.attname)).order_by().values(column)
        answer[name] = (alias, Subquery(rows))
    return answer


# Fields whose value is the column as read (a slug): the others go through their DRF field, and the spec's text
# goes into the answer as JSON text.
_AS_READ = frozenset(_RELATED_COLUMNS)


@functools.cache
def _prototype_fields() -> dict[str, serializers.Field]:
    """GpuRequestSerializer's fields, bound once per process (building them cost more than reading a page)."""
    return dict(GpuRequestSerializer().fields)


@functools.cache
def _shown_as_read(name: str) -> bool:
    """Whether the field's DRF conversion gives back what the column reads, whatever the value: a string column
    through CharField (str()) or string choices, a boolean through BooleanField, an integer through IntegerField, JSON
    through a plain JSONField. Skipping those calls was a fifth of converting a page."""
    field = _prototype_fields()[name]
    try:
        column = GpuRequest._meta.get_field(GPU_REQUEST_COLUMNS[name])
    except FieldDoesNotExist:
        return False
    kind = type(field)
    if kind is serializers.ChoiceField:
        return isinstance(column, (models.CharField, models.TextField)) and all(
            type(key) is str and field.choice_strings_to_values[key] == key for key in field.choice_strings_to_values
        )
    if kind is serializers.CharField:
        return isinstance(column, (models.CharField, models.TextField))
    if kind is serializers.BooleanField:
        return isinstance(column, models.BooleanField)
    if kind is serializers.IntegerField:
        return isinstance(column, models.IntegerField)  # the auto and big integer fields are IntegerFields
    if kind is serializers.JSONField:
        return isinstance(column, models.JSONField) and not field.binary
    return False


def _iso_datetime(field: serializers.DateTimeField, zone: tzinfo) -> Callable[[datetime], Any]:
    """DateTimeField.to_representation with the current time zone looked up once per answer, not once a value."""

    def convert(value: datetime | str) -> Any:
        if type(value) is str:  # read as its answer already (ISO_UTC_TIMESTAMPS, in UTC only)
            return value
        if value.tzinfo is None:
            return field.to_representation(value)
        text = value.astimezone(zone).isoformat()
        return text[:-6] + "Z" if text.endswith("+00:00") else text

    return convert


def _is_iso_datetime(field: serializers.Field) -> bool:
    return isinstance(field, serializers.DateTimeField) and getattr(field, "format", ISO_8601) == ISO_8601


@functools.cache
def _timestamps_answered_as_iso(fields: tuple[str, ...]) -> bool:
    """Whether every timestamp column these fields read is answered by ``_iso_datetime``: then read as its text."""
    for name in fields:
        try:
            column = GpuRequest._meta.get_field(GPU_REQUEST_COLUMNS[name])
        except FieldDoesNotExist:
            continue
        if isinstance(column, models.DateTimeField) and not _is_iso_datetime(_prototype_fields()[name]):
            return False
    return True


def gpu_request_rows(rows: Iterable[Mapping[str, Any]], fields: Sequence[str]) -> list[dict[str, Any]]:
    """What ``GpuRequestSerializer(fields=fields)`` answers for requests read by ``gpu_request_values``.

    The same conversions, through the same DRF fields, without building a serializer and its 33 fields for every
    call and a model instance (and five related ones) for every row: most of what a list call cost (issue #15).
    """
    prototype = _prototype_fields()
    zone = timezone.get_current_timezone()
    plan = []
    for name in fields:
        field = prototype[name]
        if name == "spec":
            convert = JsonText
        elif name in _AS_READ or _shown_as_read(name):
            convert = None
        elif _is_iso_datetime(field):
            convert = _iso_datetime(field, zone)
        else:
            convert = field.to_representation
        plan.append((name, GPU_REQUEST_COLUMNS[name], convert))
    answer = []
    for row in rows:
        item = {}
        for name, column, convert in plan:
            value = row[column]
            # DRF skips to_representation for None, as here.
            item[name] = value if convert is None or value is None else convert(value)
        answer.append(item)
    return answer


# Stand-ins for a user id and a request id, compiled into a statement's parameters once and replaced by the real ones
# on each run: inside the integer range, so Django compiles them as it would a real id.
_USER = -1_987_654_321
_KEY = -1_987_654_322


class _Statement:
    """A query compiled once and run with other ids: its SQL, parameters, column names and converters."""

    def __init__(self, queryset: QuerySet, *, count: int = 0) -> None:
        self.using = queryset.db
        if count:  # the statement counting the queryset's rows up to ``count``
            self.sql, self.params = bounded_count_sql(queryset, count)
            self.names, self.converters = (_COUNTED,), []
            return
        query = queryset.query
        compiler = query.get_compiler(self.using)
        self.sql, params = compiler.as_sql()
        self.params = tuple(params)
        # The columns named and converted as ValuesIterable and SQLCompiler.results_iter do.
        self.names = values_names(query)
        self.converters = column_converters(compiler)

    def rows(self, ids: Mapping[int, int], *, iso_text: bool = False) -> list[dict[str, Any]]:
        """The rows, run with each stand-in replaced by its id; with ``iso_text``, timestamps as DRF's UTC text."""
        params = [ids.get(value, value) if type(value) is int else value for value in self.params]
        connection = connections[self.using]
        timestamps = ISO_UTC_TIMESTAMPS if iso_text else DATETIME_TIMESTAMPS
        with prepared_cursor(connection, timestamps=timestamps) as cursor:
            cursor.execute(self.sql, params)
            fetched = cursor.fetchall()
        names = self.names
        return [dict(zip(names, row, strict=True)) for row in converted_rows(fetched, self.converters, connection)]


def _requests_in(scope: str) -> QuerySet[GpuRequest]:
    """The requests a scope (``gpu_request_scope``) sees, for the stand-in user."""
    if scope == "all":
        return GpuRequest.objects.all()
    return GpuRequest.objects.filter(requests_of_member_teams(user_id=_USER))


@functools.lru_cache(maxsize=512)
def _statement(kind: str, scope: str, fields: tuple[str, ...], ordering: tuple[str, ...], *bounds: int) -> _Statement:
    """The statement of one shape of read, compiled by the ORM once per process: building and compiling the querysets
    of a page was most of a detail call's CPU (issue #15). The bounds (LIMIT, OFFSET) are part of the SQL."""
    requests = _requests_in(scope)
    if kind == "count":
        (upto,) = bounds
        return _Statement(requests, count=upto)
    if kind == "page":
        # The page and its bounded count in one query, as BoundedCountPaginator reads a queryset's page.
        start, stop, upto = bounds
        window = gpu_request_values(requests.order_by(*ordering)[start:stop], fields)
        return _Statement(with_bounded_count(window, requests, upto))
    if kind == "slice":
        start, stop = bounds
        return _Statement(gpu_request_values(requests.order_by(*ordering)[start:stop], fields))
    if kind == "after":
        (size,) = bounds
        return _Statement(gpu_request_values(requests.filter(pk__gt=_KEY).order_by("pk")[:size], fields))
    # "get": as QuerySet.get() reads, with no ordering.
    return _Statement(gpu_request_values(requests.filter(pk=_KEY).order_by()[:MAX_GET_RESULTS], fields))


class VisibleRequestRows(RowSource):
    """The rows of the requests a user may see, for a list or detail with no filter, search or ordering asked: read
    with statements compiled once per process per shape (fields, page bounds) and run with the user's and the
    request's ids, the same SQL the querysets of ``gpu_requests_visible_to`` and ``gpu_request_values`` compile to.
    """

    def __init__(self, *, user: Any, fields: Sequence[str], ordering: Sequence[str]) -> None:
        self.scope = gpu_request_scope(user)
        self.ids = {_USER: user.pk}
        self.fields, self.ordering = tuple(fields), tuple(ordering)
        # Timestamps read as the text of their answer, where that answer is UTC's ISO text.
        self.iso_text = timezone.get_current_timezone_name() == "UTC" and _timestamps_answered_as_iso(self.fields)

    def _read(self, kind: str, *bounds: int, key: int | None = None) -> list[dict[str, Any]]:
        if self.scope == "none":
            return []
        statement = _statement(kind, self.scope, self.fields, self.ordering, *bounds)
        return statement.rows(self.ids if key is None else {**self.ids, _KEY: key}, iso_text=self.iso_text)

    def count(self, upto: int) -> int:
        if self.scope == "none":
            return 0
        return self._read("count", upto)[0][_COUNTED]

    def rows(self, start: int, stop: int) -> list[dict[str, Any]]:
        return self._read("slice", start, stop) if stop > start else []

    def rows_with_count(self, start: int, stop: int, upto: int) -> tuple[list[dict[str, Any]], int | None]:
        rows = self._read("page", start, stop, upto)
        return rows, (rows[0][_COUNTED] if rows else None)

    def after(self, key: int, size: int) -> list[dict[str, Any]]:
        return self._read("after", size, key=key)

    def get(self, raw_key: Any) -> dict[str, Any]:
        """The visible request with this id, or Http404 as ``get_object_or_404`` raises it (for a key that is no
        number, and for one that matches nothing)."""
        pk = GpuRequest._meta.pk
        try:
            key = pk.get_prep_value(raw_key)
        except (TypeError, ValueError):
            raise Http404 from None
        rows = self._read("get", key=key) if fits_bigint(key) else []
        if len(rows) != 1:  # the primary key: never more than one
            raise Http404(f"No {GpuRequest._meta.object_name} matches the given query.")
        return rows[0]
