"""Model rows read with SQL the ORM compiled once per process (issue #15).

Some reads run on every view or API call with SQL that depends on a value or a few only: a token and its user (each
token-authenticated call), a user's teams, their quotas and latest requests (every home page), the approval queue's
pending extensions, a request page's utilization summary and ingest coverage. Building and compiling such a query
through the ORM cost ten times or more what PostgreSQL takes to run it, and the same on every call. A ``CompiledRead``
builds its queryset once per database for a stand-in value, keeps the SQL, and on each call runs it with the real value,
turning every row into what ``QuerySet.__iter__`` gives: model instances through Django's own converters, ``from_db``
and ``select_related`` populators, or the dicts of a ``values()`` queryset. Only the SQL is kept: every call reads the
rows as they are now (a revoked token, a decided extension, a new membership hold at once). The tests compare each read
with the ORM's own answer. On PostgreSQL the SQL's constants (a status, a limit) are written into it and only the
stand-ins stay parameters, so that PostgreSQL can plan the prepared statement once (``_constants_written_in``).

They run on ``allocations.prepared_cursors.prepared_cursor`` (PostgreSQL prepares them on the connection).
Beside them: ``values_list_rows``, a ``values_list()`` read with psycopg's own timestamp loader
(``psycopg_timestamps``) for reads of tens of thousands of rows.

A read takes one value (``stand_in``: a key or an id) or several by name (``stand_ins``: ids and a window's
datetimes, as the request page's utilization reads). A datetime is looked for, and its value put in, as the backend
adapts a ``DateTimeField``'s value: PostgreSQL keeps the datetime, SQLite and MySQL compile it to text in the
connection's zone, so the stand-in's own datetime is not in their parameters and a real one would not match the column.
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from types import MappingProxyType
from typing import Any, Generic, TypeVar

import orjson
from django.contrib.postgres.fields import ArrayField
from django.core.exceptions import EmptyResultSet
from django.db import connections, router
from django.db.models import BigIntegerField, F, JSONField, Lookup, Model, QuerySet, TextField, Value
from django.db.models.fields.json import KeyTransform
from django.db.models.query import ValuesIterable, get_related_populators

from allocations.prepared_cursors import DATETIME_TIMESTAMPS, prepared_cursor, psycopg_timestamps

_M = TypeVar("_M", bound=Model)
# Stand-ins the queryset is compiled with, found again in its parameters: text no real key holds (the middleware
# refuses NULs), and an id inside the integer range (so Django compiles it as a real one) that no row has.
TEXT_STAND_IN = "\x00portal-compiled-read\x00"
ID_STAND_IN = -1_987_654_323
OTHER_ID_STAND_IN = -1_987_654_322  # a second id of the same read (``stand_ins``: they must differ)
# A window's two ends, for named stand-ins (``stand_ins={"cluster": ID_STAND_IN, **WINDOW_STAND_INS}``): distinct, so
# each is found again by its value, and long before any row.
WINDOW_STAND_INS = MappingProxyType(
    {"start": datetime(1901, 1, 1, tzinfo=UTC), "end": datetime(1901, 1, 2, tzinfo=UTC)}
)
# The name a read of one value gives it; positional-only arguments keep it apart from the names of ``stand_ins``.
_ONE = "value"
_ABSENT: Any = object()


@dataclass(frozen=True)
class _Compiled:
    sql: str
    params: tuple[Any, ...]
    slots: tuple[tuple[int, str], ...]  # (position in params, name of the stand-in found there)
    converters: list[tuple[int, tuple[list[Any], Any]]]
    # A model's rows: its class, the row's slice holding its own columns and their names, the related populators.
    model: type[Model] | None = None
    fields: tuple[int, int] = (0, 0)
    attnames: tuple[str, ...] = ()
    populators: tuple[Any, ...] = ()
    annotations: tuple[tuple[str, int], ...] = ()  # (attribute, position in the row), as ModelIterable sets them
    # A values() query's rows: the names of its columns.
    names: tuple[str, ...] = ()


def fits_bigint(value: int) -> bool:
    """Whether an id lies in a primary key's range (bigint): one outside it names no row, and PostgreSQL would refuse
    it as a parameter."""
    return -(2**63) <= value < 2**63


def _adapted(ops: Any, value: Any) -> Any:
    # As the backend adapts a DateTimeField's value (see the module's docstring), a list of values (``id_in``,
    # ``text_in``) as ``_EqualsAny`` binds it; other values go in as they are.
    if isinstance(value, datetime):
        return ops.adapt_datetimefield_value(value)
    if isinstance(value, tuple | list):
        return _list_param(ops.connection, value)
    return value


def _list_param(connection: Any, values: Sequence[Any]) -> Any:
    """A list of values as one parameter: an array on PostgreSQL, JSON text elsewhere (``json_each``)."""
    return list(values) if connection.vendor == "postgresql" else json.dumps(list(values))


def values_list_rows(queryset: QuerySet) -> list[tuple[Any, ...]]:
    """What ``list(queryset)`` answers for a ``values_list()`` queryset, with the timestamps read by psycopg's own
    loader (``psycopg_timestamps``): for reads of tens of thousands of rows (a month's holding spans)."""
    compiler = queryset.query.get_compiler(queryset.db)
    try:
        sql, params = compiler.as_sql()
    except EmptyResultSet:
        return []
    connection = connections[queryset.db]
    with connection.cursor() as cursor:
        psycopg_timestamps(cursor, connection)
        cursor.execute(sql, params)
        fetched = cursor.fetchall()
    return list(compiler.results_iter(results=[fetched], tuple_expected=True))


def values_names(query: Any) -> tuple[str, ...]:
    """The keys of a ``values()`` query's rows, in column order, as ``ValuesIterable`` names them."""
    if query.selected:
        return tuple(query.selected)
    return (*query.extra_select, *query.values_select, *query.annotation_select)


def column_converters(compiler: Any) -> list[tuple[int, tuple[list[Any], Any]]]:
    """The ORM's converters of the compiled query's selected columns (position -> (functions, expression)), as
    ``SQLCompiler.results_iter`` applies them, plain JSON columns read by orjson (``through_orjson``: the same
    values); ``converted_rows`` takes them. Call after ``as_sql()``."""
    converters = compiler.get_converters([column[0] for column in compiler.select[: compiler.col_count]])
    return [
        (position, ([through_orjson(function) for function in functions], expression))
        for position, (functions, expression) in converters.items()
    ]


# Digits as "9", everything else as a space: a run of 19 nines is a number orjson would read otherwise than json.
_DIGITS = bytes(0x39 if 0x30 <= byte <= 0x39 else 0x20 for byte in range(256))
_LONG_NUMBER = b"9" * 19


def through_orjson(convert: Callable[..., Any]) -> Callable[..., Any]:
    """A plain JSONField's from_db_value (json.loads) through orjson, any other converter as it is: the ~4 KB specs of
    a page read ~2x faster (issue #15). orjson reads an integer over 64 bits as a float: text with 19 digits in a
    row, and whatever orjson refuses, go to the field's own converter, so the values are json.loads's."""
    field = getattr(convert, "__self__", None)
    plain = isinstance(field, JSONField) and field.decoder is None
    if not plain or type(field).from_db_value is not JSONField.from_db_value:
        return convert

    def loads(value: Any, expression: Any, connection: Any) -> Any:
        if isinstance(value, str) and not isinstance(expression, KeyTransform):
            text = value.encode()
            if _LONG_NUMBER not in text.translate(_DIGITS):
                try:
                    return orjson.loads(text)
                except orjson.JSONDecodeError:
                    pass
        return convert(value, expression, connection)

    return loads


def prepared_values(queryset: QuerySet) -> list[dict[str, Any]]:
    """What ``list(queryset)`` answers for a ``values()`` queryset, its parameters bound on the server
    (``prepared_cursor``): PostgreSQL plans the statement once per connection, not on every page view. The requests
    page's rows with their count took 2.3 ms to plan and 0.5 ms to run (issue #15)."""
    compiler = queryset.query.get_compiler(queryset.db)
    try:
        sql, params = compiler.as_sql()
    except EmptyResultSet:
        return []
    names, converters = values_names(compiler.query), column_converters(compiler)
    connection = connections[queryset.db]
    with prepared_cursor(connection, timestamps=DATETIME_TIMESTAMPS) as cursor:
        cursor.execute(sql, params)
        fetched = cursor.fetchall()
    return [dict(zip(names, row, strict=True)) for row in converted_rows(fetched, converters, connection)]


def converted_rows(fetched: Iterable[Sequence[Any]], converters: Iterable[Any], connection: Any) -> list[list[Any]]:
    """Fetched rows with the ORM's converters applied (``compiler.get_converters``: position -> (functions,
    expression)), as ``QuerySet.__iter__`` applies them."""
    converters = tuple(converters)
    rows = []
    for row in fetched:
        row = list(row)
        for position, (functions, expression) in converters:
            cell = row[position]
            for convert in functions:
                cell = convert(cell, expression, connection)
            row[position] = cell
        rows.append(row)
    return rows


_PLACEHOLDER = re.compile(r"%%|%s")
# A list of ids or texts as one stand-in (``id_in``, ``text_in``): lists no real call passes.
IDS_STAND_IN = (ID_STAND_IN,)
TEXTS_STAND_IN = (TEXT_STAND_IN,)
OTHER_TEXTS_STAND_IN = (TEXT_STAND_IN, TEXT_STAND_IN)  # a second list of texts of the same read


class _EqualsAny(Lookup):
    # ``lhs = ANY(<one array>)`` on PostgreSQL, ``lhs IN (SELECT value FROM json_each(<JSON text>))`` elsewhere
    # (SQLite): not registered on any field, built by ``id_in`` and ``text_in`` alone.
    lookup_name = "equals_any"

    def __init__(self, lhs: Any, values: Sequence[Any], base_field: Any) -> None:
        super().__init__(lhs, Value(list(values), output_field=ArrayField(base_field)))

    def as_sql(self, compiler: Any, connection: Any) -> tuple[str, tuple[Any, ...]]:
        lhs, lhs_params = self.process_lhs(compiler, connection)
        if connection.vendor != "postgresql":
            # The column's SQL from the compiler; the values are one bound parameter.
            sql = f"{lhs} IN (SELECT value FROM json_each(%s))"  # noqa: S608
            return sql, (*lhs_params, _list_param(connection, self.rhs.value))
        rhs, rhs_params = self.process_rhs(compiler, connection)
        return f"{lhs} = ANY({rhs})", (*lhs_params, *rhs_params)


class _AmongAny(_EqualsAny):
    # ``lhs IN (SELECT value FROM json_array_elements_text(array_to_json(<one array>)))`` on PostgreSQL: the same
    # rows as ``_EqualsAny``, through a function whose row estimate is the same whatever the array holds, so that the
    # plan made for one list (a "custom" plan) costs what the plan for any list (the "generic" one) costs.
    lookup_name = "among_any"

    def as_sql(self, compiler: Any, connection: Any) -> tuple[str, tuple[Any, ...]]:
        if connection.vendor != "postgresql":
            return super().as_sql(compiler, connection)
        lhs, lhs_params = self.process_lhs(compiler, connection)
        rhs, rhs_params = self.process_rhs(compiler, connection)
        cast = "::bigint" if isinstance(self.rhs.output_field.base_field, BigIntegerField) else ""
        sql = f"{lhs} IN (SELECT value{cast} FROM json_array_elements_text(array_to_json({rhs})))"  # noqa: S608
        return sql, (*lhs_params, *rhs_params)


def id_in(field: str, ids: Sequence[int]) -> Lookup:
    """A filter: ``field`` is one of ``ids``, bound as one parameter whatever their number (an array on PostgreSQL,
    JSON text elsewhere), so that a ``CompiledRead`` takes them as one stand-in (``IDS_STAND_IN``) where
    ``field__in`` compiles one placeholder per id."""
    return _EqualsAny(F(field), ids, BigIntegerField())


def text_in(field: str, texts: Sequence[str]) -> Lookup:
    """``id_in`` for texts (stand-ins ``TEXTS_STAND_IN`` and ``OTHER_TEXTS_STAND_IN``)."""
    return _EqualsAny(F(field), texts, TextField())


def id_among(field: str, ids: Sequence[int]) -> Lookup:
    """``id_in`` for a statement whose cost grows with the rows the ids choose (a correlated subquery per row):
    PostgreSQL plans a prepared statement for the values at hand five times, then keeps one plan for any values
    only if it looks no costlier; ``field = ANY(ids)`` is estimated from the list's length when it is known and as
    ten otherwise, so a short list's plan always looked cheaper and the statement was planned again on every run
    (0.3 ms: issue #15). Here both estimates are the same."""
    return _AmongAny(F(field), ids, BigIntegerField())


def text_among(field: str, texts: Sequence[str]) -> Lookup:
    """``id_among`` for texts (stand-ins as ``text_in``'s)."""
    return _AmongAny(F(field), texts, TextField())


def _constants_written_in(
    connection: Any, sql: str, params: Sequence[Any], slots: tuple[tuple[int, str], ...]
) -> tuple[str, tuple[Any, ...], tuple[tuple[int, str], ...]]:
    """On PostgreSQL, the SQL with every parameter that is not a stand-in written into it as a literal (psycopg
    quotes it), and the stand-ins' slots renumbered. A prepared statement then carries only the values that vary:
    PostgreSQL plans one whose values are all known (a status, a limit) once per connection, where a statement
    with ``status = $1`` was planned again on every run (custom plans: the generic one cannot know the status is
    rare), 1.0 of the approval queue's 1.5 ms first page (issue #15). Elsewhere, as compiled."""
    if connection.vendor != "postgresql":
        return sql, tuple(params), slots
    from psycopg import sql as psycopg_sql

    connection.ensure_connection()
    stand_in_at = dict(slots)
    position = -1
    kept: list[Any] = []
    renumbered: list[tuple[int, str]] = []

    def written(match: re.Match[str]) -> str:
        nonlocal position
        if match.group() == "%%":
            return "%%"
        position += 1
        if position in stand_in_at:
            renumbered.append((len(kept), stand_in_at[position]))
            kept.append(params[position])
            return "%s"
        # A literal's own % would read as a placeholder: the remaining statement still goes through psycopg.
        return psycopg_sql.Literal(params[position]).as_string(connection.connection).replace("%", "%%")

    written_sql = _PLACEHOLDER.sub(written, sql)
    if position != len(params) - 1:
        raise ValueError(f"The SQL has {position + 1} placeholders for {len(params)} parameters: {sql}")
    return written_sql, tuple(kept), tuple(renumbered)


class CompiledRead(Generic[_M]):
    """``build(value)`` read with one query whose SQL is compiled once per database: the first instance
    (``first``), every instance with its ``select_related`` objects (``instances``), or the dicts of a ``values()``
    queryset (``values``). ``stand_in`` is what ``build`` is compiled with: ``TEXT_STAND_IN`` for a key,
    ``ID_STAND_IN`` for an id; the value must be the query's only parameter that varies.

    With ``stand_ins`` (name -> stand-in, e.g. ``{"request": ID_STAND_IN, **WINDOW_STAND_INS}``) the read is
    ``build(**stand_ins)`` and each call names its values the same way (``values(request=7, start=..., end=...)``);
    they must be the query's only parameters that vary, and the stand-ins distinct from each other."""

    def __init__(
        self,
        model: type[_M],
        build: Callable[..., QuerySet[_M]],
        *,
        stand_in: Any = TEXT_STAND_IN,
        stand_ins: Mapping[str, Any] | None = None,
    ):
        if stand_ins is not None and stand_in is not TEXT_STAND_IN:
            raise TypeError("A CompiledRead takes a stand_in or named stand_ins, not both.")
        self._model = model  # the queryset is built on first use: models may not be ready when this is created
        self._build = build
        self._named = stand_ins is not None
        self._stand_ins = dict(stand_ins) if stand_ins is not None else {_ONE: stand_in}
        self._compiled: dict[tuple[str, bool], _Compiled] = {}
        self._lock = threading.Lock()

    def first(self, value: Any = _ABSENT, /, **named: Any) -> _M | None:
        """The instance the ORM would answer for ``build(...).first()``, read now."""
        found = self._instances(self._values_of(value, named), first=True)
        return found[0] if found else None

    def instances(self, value: Any = _ABSENT, /, **named: Any) -> list[_M]:
        """What ``list(build(...))`` answers for a queryset of model instances, read now."""
        return self._instances(self._values_of(value, named), first=False)

    def values(self, value: Any = _ABSENT, /, **named: Any) -> list[dict[str, Any]]:
        """What ``list(build(...))`` answers for a ``values()`` queryset, read now."""
        _, compiled, rows = self._read(self._values_of(value, named), first=False)
        return [dict(zip(compiled.names, row, strict=False)) for row in rows]

    def _values_of(self, value: Any, named: dict[str, Any]) -> dict[str, Any]:
        """The call's values by stand-in name: one value, or exactly the names of ``stand_ins``."""
        if not self._named:
            if value is _ABSENT or named:
                raise TypeError("This CompiledRead takes one value, by position.")
            return {_ONE: value}
        if value is not _ABSENT or named.keys() != self._stand_ins.keys():
            raise TypeError(f"This CompiledRead takes its values by name: {', '.join(self._stand_ins)}.")
        return named

    def _instances(self, values: dict[str, Any], *, first: bool) -> list[_M]:
        alias, compiled, rows = self._read(values, first=first)
        start, end = compiled.fields
        answer = []
        for row in rows:
            instance = compiled.model.from_db(alias, compiled.attnames, row[start:end])  # type: ignore[union-attr]
            for populator in compiled.populators:
                populator.populate(row, instance)
            for name, position in compiled.annotations:
                setattr(instance, name, row[position])
            answer.append(instance)
        return answer  # type: ignore[return-value]

    def _read(self, values: dict[str, Any], *, first: bool) -> tuple[str, _Compiled, list[list[Any]]]:
        alias = router.db_for_read(self._model)
        compiled = self._compiled.get((alias, first)) or self._compile(alias, first=first)
        connection = connections[alias]
        params = list(compiled.params)
        for position, name in compiled.slots:
            params[position] = _adapted(connection.ops, values[name])
        with prepared_cursor(connection, timestamps=DATETIME_TIMESTAMPS) as cursor:
            cursor.execute(compiled.sql, params)
            fetched = cursor.fetchall()
        return alias, compiled, converted_rows(fetched, compiled.converters, connection)

    def _compile(self, alias: str, *, first: bool) -> _Compiled:
        queryset = self._build(**self._stand_ins) if self._named else self._build(self._stand_ins[_ONE])
        if first:
            queryset = queryset[:1]
        compiler = queryset.query.get_compiler(using=alias)
        sql, params = compiler.as_sql()
        ops = connections[alias].ops
        adapted = {name: _adapted(ops, stand_in) for name, stand_in in self._stand_ins.items()}
        slots = tuple(
            (position, name)
            for position, param in enumerate(params)
            for name, stand_in in adapted.items()
            if type(param) is type(stand_in) and param == stand_in
        )
        if len({position for position, _ in slots}) != len(slots):
            raise ValueError(f"The stand-ins are not distinct from each other: {self._stand_ins!r}")
        if missing := adapted.keys() - {name for _, name in slots}:
            raise ValueError(f"The queryset does not take {', '.join(sorted(missing))} as a parameter: {params!r}")
        sql, params, slots = _constants_written_in(connections[alias], sql, params, slots)
        select, klass_info = compiler.select, compiler.klass_info
        converters = column_converters(compiler)
        if queryset._iterable_class is ValuesIterable:
            names = values_names(compiler.query)
            compiled = _Compiled(sql=sql, params=tuple(params), slots=slots, converters=converters, names=names)
        else:
            fields = klass_info["select_fields"]
            compiled = _Compiled(
                sql=sql,
                params=tuple(params),
                slots=slots,
                converters=converters,
                model=klass_info["model"],
                fields=(fields[0], fields[-1] + 1),
                attnames=tuple(column[0].target.attname for column in select[fields[0] : fields[-1] + 1]),
                populators=tuple(get_related_populators(klass_info, select, alias)),
                annotations=tuple(compiler.annotation_col_map.items()),
            )
        with self._lock:
            self._compiled[(alias, first)] = compiled
        return compiled
