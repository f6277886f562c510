"""A page-number paginator whose count stops at a bound, shared by the API lists and the request pages.

``COUNT(*)`` of every row a list matches grows with the table (the requests list was 10x slower at 100,000 requests
than at 1,000, issue #15): the count stops at ``COUNT_LIMIT`` rows, or at the end of the page asked for when it lies
deeper, so a list costs the same at any size and the last pages are still reachable.
"""

from __future__ import annotations

import abc
import contextlib
from collections.abc import Callable
from typing import Any

from django.core.exceptions import EmptyResultSet
from django.core.paginator import Paginator
from django.db.models import QuerySet
from django.db.models.expressions import RawSQL
from django.utils.functional import cached_property

from allocations.compiled_reads import prepared_values

# Rows counted at most for ``count``: beyond it ``count`` is this and ``count_exact`` false.
COUNT_LIMIT = 1000

RowReader = Callable[[QuerySet], QuerySet]
# The column that carries the bounded count on each row of a page read with it.
COUNTED = "_bounded_count"


def bounded_count_sql(rows: QuerySet, upto: int) -> tuple[str, tuple[object, ...]]:
    """SQL counting ``rows`` up to ``upto`` (``COUNT(*)`` over their first ``upto`` ids), with its parameters; raises
    ``EmptyResultSet`` for a queryset that matches nothing by construction."""
    bounded = rows.order_by()[:upto].values("pk")
    sql, params = bounded.query.get_compiler(bounded.db).as_sql()
    # Our own queryset's SQL, compiled by Django; every value in it is a bound parameter.
    return f"SELECT COUNT(*) FROM ({sql}) AS bounded", tuple(params)  # noqa: S608


def with_bounded_count(page: QuerySet, rows: QuerySet, upto: int) -> QuerySet:
    """``page`` (a ``values()`` slice of ``rows``) with ``COUNTED`` on each row: ``rows`` counted up to ``upto`` in
    the same query, one round trip less, which on a loaded server is most of what a query costs (issue #15)."""
    return page.annotate(**{COUNTED: RawSQL(*bounded_count_sql(rows, upto))})  # noqa: S611


class RowSource(abc.ABC):
    """Rows a paginator may read instead of a queryset's, by position, in their one order (a reader with its own SQL,
    such as ``allocations.api.request_rows.VisibleRequestRows``)."""

    @abc.abstractmethod
    def count(self, upto: int) -> int:
        """The rows, counted up to ``upto``."""

    @abc.abstractmethod
    def rows(self, start: int, stop: int) -> list[Any]:
        """The rows from position ``start`` to ``stop`` (excluded)."""

    @abc.abstractmethod
    def rows_with_count(self, start: int, stop: int, upto: int) -> tuple[list[Any], int | None]:
        """The rows from ``start`` to ``stop`` and the count up to ``upto``, in one read; None for the count when
        there are no such rows."""

    def after(self, key: int, size: int) -> list[Any]:
        """At most ``size`` rows whose primary key is greater than ``key``, by ascending key: keyset paging, for the
        sources that offer it (the requests API's)."""
        raise NotImplementedError(f"{type(self).__name__} offers no keyset paging")


class BoundedCountPaginator(Paginator):
    """Django's paginator counting at most ``COUNT_LIMIT`` rows, or up to the page asked for when it lies deeper.

    ``read`` turns the page's slice of the queryset into its rows (``.values(...)``); with it, the page and its count
    are read in one query. ``object_list`` may also be a ``RowSource``, which reads the page and its count in one
    query its own way (``read`` is then not used).
    """

    def __init__(self, object_list: QuerySet | RowSource, per_page: int, *, read: RowReader | None = None) -> None:
        super().__init__(object_list, per_page)
        self.read = read
        self.reach = 0  # rows up to the end of the page asked for

    @cached_property
    def limit(self) -> int:
        """How many rows ``count`` may report: ``COUNT_LIMIT``, or the end of the page asked for when deeper."""
        return max(COUNT_LIMIT, self.reach)

    @cached_property
    def count(self) -> int:
        """The rows, counted up to one beyond ``limit`` (then there are more pages than the limit's)."""
        if isinstance(self.object_list, RowSource):
            return self.object_list.count(self.limit + 1)
        if not isinstance(self.object_list, QuerySet):
            return len(self.object_list)
        return self.object_list.order_by()[: self.limit + 1].count()

    @property
    def count_exact(self) -> bool:
        """Whether ``count`` is every row (else there are more than ``limit``)."""
        return self.count <= self.limit

    def get_page(self, number: Any) -> Any:
        """Django's forgiving ``get_page`` (a bad number is page 1, one past the end the last page), with the reach
        set before the count is read, so a page deeper than ``COUNT_LIMIT`` is counted to its end."""
        with contextlib.suppress(TypeError, ValueError):
            self.reach = int(number) * self.per_page
        return super().get_page(number)

    def page(self, number: Any) -> Any:
        self.rows = None
        with contextlib.suppress(TypeError, ValueError):  # validate_number refuses it
            asked = int(number)
            self.reach = asked * self.per_page
            if asked >= 1 and "count" not in self.__dict__:
                if isinstance(self.object_list, RowSource):
                    start = (asked - 1) * self.per_page
                    rows, count = self.object_list.rows_with_count(start, start + self.per_page, self.limit + 1)
                    if rows:
                        self.__dict__["count"], self.rows = count, rows
                elif self.read is not None:
                    self._read_with_count(asked)
        if isinstance(self.object_list, RowSource):
            # Django's page(), reading the rows from the source (it would slice the object list).
            number = self.validate_number(number)
            start = (number - 1) * self.per_page
            stop = start + self.per_page
            if stop + self.orphans >= self.count:
                stop = self.count
            if self.rows is None:
                self.rows = self.object_list.rows(start, stop)
            return self._get_page(self.rows, number, self)
        return super().page(number)

    def _read_with_count(self, number: int) -> None:
        """Read the page's rows and the bounded count in one query: one round trip less, which on a loaded server
        is most of what a query costs (issue #15). An empty page leaves the count to its own query."""
        start = (number - 1) * self.per_page
        page = self.read(self.object_list[start : start + self.per_page])
        try:
            counted = with_bounded_count(page, self.object_list, self.limit + 1)
        except EmptyResultSet:  # a queryset that matches nothing by construction (none()): no query at all
            self.__dict__["count"] = 0
            return
        rows = prepared_values(counted)
        if rows:
            self.__dict__["count"] = rows[0][COUNTED]
            self.rows = rows

    def _get_page(self, object_list: Any, number: int, paginator: Paginator) -> Any:
        if self.rows is not None:
            return super()._get_page(self.rows, number, paginator)
        rows = object_list if self.read is None else prepared_values(self.read(object_list))
        return super()._get_page(rows, number, paginator)
