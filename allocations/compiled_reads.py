"""Model rows of one user read with SQL the ORM compiled once per process (issue #15).

Building and compiling a queryset cost the home page more CPU than PostgreSQL took to answer it. A ``UserRows``
builds its queryset once per database for a stand-in user id, keeps the SQL, and on each call runs it with the real
id, turning every row into the model instances ``QuerySet.__iter__`` would give (Django's own converters, ``from_db``
and ``select_related`` populators). Only the SQL is kept: every call reads the rows as they are now.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from django.db import connections, router
from django.db.models import Model, QuerySet
from django.db.models.query import ValuesIterable, get_related_populators

_M = TypeVar("_M", bound=Model)
# Inside the integer range, so Django compiles it as it would a real id; no user has a negative id.
_USER_STAND_IN = -1_987_654_323


@dataclass(frozen=True)
class _Compiled:
    sql: str
    params: tuple[Any, ...]
    slots: tuple[int, ...]  # the positions of the stand-in in params
    converters: list[tuple[int, tuple[list[Any], Any]]]
    # A model's rows: its class, the row's slice holding its own columns and their names, the related populators.
    model: type[Model] | None = None
    fields: tuple[int, int] = (0, 0)
    attnames: tuple[str, ...] = ()
    populators: tuple[Any, ...] = ()
    # A values() query's rows: the names of its columns.
    names: tuple[str, ...] = ()


class UserRows(Generic[_M]):
    """``list(build(user_id))`` of a queryset whose only varying value is a user id, read with one query whose SQL is
    compiled once per database: model instances (with their ``select_related`` objects) from ``instances``, the dicts
    of a ``values()`` queryset from ``values``."""

    def __init__(self, model: type[_M], build: Callable[[int], QuerySet[_M]]) -> None:
        self._model = model  # the queryset is built on first use: models may not be ready when this is created
        self._build = build
        self._compiled: dict[str, _Compiled] = {}
        self._lock = threading.Lock()

    def instances(self, user_id: int) -> list[_M]:
        """What ``list(build(user_id))`` answers for a queryset of model instances, read now."""
        alias, compiled, rows = self._read(user_id)
        start, end = compiled.fields
        answer = []
        for row in rows:
            instance = compiled.model.from_db(alias, compiled.attnames, row[start:end])  # type: ignore[union-attr]
            for populator in compiled.populators:
                populator.populate(row, instance)
            answer.append(instance)
        return answer  # type: ignore[return-value]

    def values(self, user_id: int) -> list[dict[str, Any]]:
        """What ``list(build(user_id))`` answers for a ``values()`` queryset, read now."""
        _, compiled, rows = self._read(user_id)
        return [dict(zip(compiled.names, row, strict=False)) for row in rows]

    def _read(self, user_id: int) -> tuple[str, _Compiled, list[list[Any]]]:
        alias = router.db_for_read(self._model)
        compiled = self._compiled.get(alias) or self._compile(alias)
        connection = connections[alias]
        params = list(compiled.params)
        for position in compiled.slots:
            params[position] = int(user_id)
        with connection.cursor() as cursor:
            cursor.execute(compiled.sql, params)
            fetched = cursor.fetchall()
        rows = []
        for row in fetched:
            row = list(row)
            for position, (converters, expression) in compiled.converters:
                cell = row[position]
                for converter in converters:
                    cell = converter(cell, expression, connection)
                row[position] = cell
            rows.append(row)
        return alias, compiled, rows

    def _compile(self, alias: str) -> _Compiled:
        queryset = self._build(_USER_STAND_IN)
        compiler = queryset.query.get_compiler(using=alias)
        sql, params = compiler.as_sql()
        slots = tuple(i for i, value in enumerate(params) if type(value) is int and value == _USER_STAND_IN)
        if not slots:
            raise ValueError("The queryset does not take the user id as a parameter.")
        select, klass_info = compiler.select, compiler.klass_info
        converters = list(compiler.get_converters([column[0] for column in select[: compiler.col_count]]).items())
        if queryset._iterable_class is ValuesIterable:  # named as ValuesIterable names them
            query = compiler.query
            names = (
                tuple(query.selected)
                if query.selected
                else (*query.extra_select, *query.values_select, *query.annotation_select)
            )
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
            )
        with self._lock:
            self._compiled[alias] = compiled
        return compiled
