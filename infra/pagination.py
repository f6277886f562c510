"""A page-number paginator whose count stops at a bound, shared by the API lists and the request pages.

``COUNT(*)`` of every row a list matches grows with the table: the count stops at ``COUNT_LIMIT`` rows, or at the end
of the page asked for when it lies deeper, so a list costs the same at any size and its last pages are still
reachable.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from django.core.paginator import Page, Paginator
from django.db.models import IntegerField, QuerySet, Subquery
from django.utils.functional import cached_property

# Rows counted at most for ``count``: beyond it ``count`` is this and ``count_exact`` false.
COUNT_LIMIT = 1000
# The deepest row a page may reach. No table holds that many rows, and a LIMIT or OFFSET past it would overflow the
# 64-bit integers of the databases (SQLite refuses them before running the query).
MAX_REACH = 2**62
# The name the bounded count is read under, beside a page's rows.
COUNTED = "bounded_count"

RowReader = Callable[[QuerySet], Iterable[Any]]


class BoundedCount(Subquery):
    """``queryset[:upto].count()`` as an expression: the count of the queryset's first ``upto`` rows, read in the
    same query as something else (a page of the queryset)."""

    template = "(SELECT COUNT(*) FROM (%(subquery)s) AS bounded)"

    def __init__(self, queryset: QuerySet, upto: int) -> None:
        super().__init__(queryset.order_by().values("pk")[:upto], output_field=IntegerField())


class BoundedCountPaginator(Paginator):
    """Django's paginator counting at most ``COUNT_LIMIT`` rows, or up to the page asked for when it lies deeper.

    With ``count_with_page``, a page and the count are read in one query (the count annotated on the page's rows); an
    empty page leaves the count to its own query. ``read`` turns a page's slice of the queryset into the rows the page
    holds (``.values(...)`` of the columns a list shows); the count is of the queryset itself.
    """

    def __init__(
        self, object_list: Any, per_page: int, *, count_with_page: bool = False, read: RowReader | None = None
    ) -> None:
        super().__init__(object_list, per_page)
        self.count_with_page = count_with_page and isinstance(object_list, QuerySet)
        self.read = read
        self.reach = 0  # rows up to the end of the page asked for

    @cached_property
    def limit(self) -> int:
        """How many rows ``count`` may report: ``COUNT_LIMIT``, or the end of the page asked for when deeper."""
        return max(COUNT_LIMIT, self.reach)

    @cached_property
    def count(self) -> int:
        """The rows, counted up to one beyond ``limit`` (then there are more pages than the limit's)."""
        if not isinstance(self.object_list, QuerySet):
            return len(self.object_list)
        return self.object_list.order_by()[: self.limit + 1].count()

    @property
    def count_exact(self) -> bool:
        """Whether ``count`` is every row (else there are more than ``limit``)."""
        return self.count <= self.limit

    def _asked(self, number: Any) -> int | None:
        """The page number asked for, as an integer (None for anything else), and the reach it sets."""
        try:
            asked = int(number)
        except (TypeError, ValueError):
            return None
        self.reach = min(max(asked, 0) * self.per_page, MAX_REACH)
        return asked

    def get_page(self, number: Any) -> Page:
        """Django's forgiving ``get_page`` (a bad number is page 1, one past the end the last page), with the reach
        set before the count is read, so a page deeper than ``COUNT_LIMIT`` is counted to its end."""
        self._asked(number)
        return super().get_page(number)

    def page(self, number: Any) -> Page:
        asked = self._asked(number)
        if asked is not None and self.count_with_page and "count" not in self.__dict__:
            rows = self._rows_with_count(asked)
            if rows:
                return self._get_page(rows, self.validate_number(asked), self)
        return super().page(number)

    def _rows_with_count(self, number: int) -> list[Any]:
        """The rows of page ``number`` with the bounded count read beside them (kept as ``count``); none for a page
        that cannot exist or lies past the end."""
        start = (number - 1) * self.per_page
        if number < 1 or start >= MAX_REACH:
            return []
        window = self.object_list[start : start + self.per_page]
        if self.read is not None:
            window = self.read(window)
        rows = list(window.annotate(**{COUNTED: BoundedCount(self.object_list, self.limit + 1)}))
        if rows:
            first = rows[0]
            self.count = first[COUNTED] if isinstance(first, dict) else getattr(first, COUNTED)
        return rows

    def _get_page(self, object_list: Any, number: int, paginator: Paginator) -> Page:
        if self.read is not None and isinstance(object_list, QuerySet):
            object_list = list(self.read(object_list))
        return super()._get_page(object_list, number, paginator)
