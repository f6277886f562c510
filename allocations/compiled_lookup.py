"""Model rows read with SQL the ORM compiled once per process (issue #15).

Some reads run on every view or API call with SQL that depends on one value only: a token and its user (each
token-authenticated call), the approval queue's pending extensions (every view of the queue). Building and compiling
such a query through the ORM costs ten times or more what PostgreSQL takes to run it, and the same on every call. The
SQL, the columns and the model instances here are exactly the ORM's: the queryset is compiled once per database with
a placeholder value, and each row goes through Django's own converters and related-object populators, as
``QuerySet.__iter__`` does. Nothing is cached but the SQL: every call reads the rows as they are now (revocation,
expiry, deactivation, a decided extension hold at once). First written for tokens (portal/tokens/lookup.py, which
re-exports it); here so that the apps below ``portal`` may use it too.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from django.db import connections, router
from django.db.models import Model, QuerySet
from django.db.models.query import get_related_populators

_M = TypeVar("_M", bound=Model)
_PLACEHOLDER = "\x00portal-compiled-lookup\x00"  # no real key holds a NUL (the middleware refuses them)


@dataclass(frozen=True)
class _Compiled:
    sql: str
    model: type[Model]
    fields: tuple[int, int]  # the row's slice holding the model's own columns
    attnames: list[str]
    converters: list[tuple[int, tuple[list[Any], Any]]]
    populators: list[Any]


class CompiledLookup(Generic[_M]):
    """``build(value)``'s rows as model instances (with their ``select_related`` objects): the first, or all."""

    def __init__(self, model: type[_M], build: Callable[[Any], QuerySet[_M]]) -> None:
        self._model = model
        self._build = build
        self._compiled: dict[tuple[str, bool], _Compiled] = {}
        self._lock = threading.Lock()

    def first(self, value: Any) -> _M | None:
        """The instance the ORM would answer for ``build(value).first()``, read with one query."""
        rows = self._read(value, many=False)
        return rows[0] if rows else None

    def all(self, value: Any) -> list[_M]:
        """The instances the ORM would answer for ``list(build(value))``, read with one query."""
        return self._read(value, many=True)

    def _read(self, value: Any, *, many: bool) -> list[_M]:
        alias = router.db_for_read(self._model)
        compiled = self._compiled.get((alias, many)) or self._compile(alias, many=many)
        connection = connections[alias]
        with connection.cursor() as cursor:
            cursor.execute(compiled.sql, [value])
            rows = cursor.fetchall() if many else [cursor.fetchone()]
        return [self._instance(compiled, alias, connection, row) for row in rows if row is not None]

    @staticmethod
    def _instance(compiled: _Compiled, alias: str, connection: Any, fetched: Any) -> _M:
        row = list(fetched)
        for position, (converters, expression) in compiled.converters:
            cell = row[position]
            for converter in converters:
                cell = converter(cell, expression, connection)
            row[position] = cell
        start, end = compiled.fields
        instance = compiled.model.from_db(alias, compiled.attnames, row[start:end])
        for populator in compiled.populators:
            populator.populate(row, instance)
        return instance  # type: ignore[return-value]

    def _compile(self, alias: str, *, many: bool) -> _Compiled:
        queryset = self._build(_PLACEHOLDER)
        if not many:
            queryset = queryset[:1]
        compiler = queryset.query.get_compiler(using=alias)
        sql, params = compiler.as_sql()
        if list(params) != [_PLACEHOLDER]:
            raise ValueError(f"A compiled lookup takes exactly one parameter, the value: {params!r}")
        select, klass_info = compiler.select, compiler.klass_info
        fields = klass_info["select_fields"]
        compiled = _Compiled(
            sql=sql,
            model=klass_info["model"],
            fields=(fields[0], fields[-1] + 1),
            attnames=[column[0].target.attname for column in select[fields[0] : fields[-1] + 1]],
            converters=list(compiler.get_converters([column[0] for column in select]).items()),
            populators=get_related_populators(klass_info, select, alias),
        )
        with self._lock:
            self._compiled[(alias, many)] = compiled
        return compiled
