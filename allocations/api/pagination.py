"""Pagination of the API lists: page numbers with a bounded page size and a bounded count, and a keyset mode.

``count`` is a ``COUNT(*)`` of every row the list matches, which grows with the table (the requests list was 10x
slower at 100,000 requests than at 1,000): it counts at most ``COUNT_LIMIT`` rows (more when the page asked for lies
beyond them) and says so with ``count_exact``. A notebook that pages through every request with ``?page=N`` makes
the database skip ever more rows; ``?after=<id>`` instead answers the rows with a larger id, oldest first, with no
count and no offset, so each page costs the same however deep it is (issue #15).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Sequence
from typing import Any

from django.core.paginator import Paginator
from django.db.models import QuerySet
from django.db.models.expressions import RawSQL
from django.utils.functional import cached_property
from rest_framework import exceptions
from rest_framework.pagination import PageNumberPagination
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.utils.urls import remove_query_param, replace_query_param

MAX_PAGE_SIZE = 200
# Rows counted at most for ``count``: beyond it ``count`` is this and ``count_exact`` false.
COUNT_LIMIT = 1000

RowReader = Callable[[QuerySet], QuerySet]
# The column that carries the bounded count on each row of a page read with it.
_COUNTED = "_bounded_count"


class BoundedCountPaginator(Paginator):
    """Django's paginator counting at most ``COUNT_LIMIT`` rows, or up to the page asked for when it lies deeper.

    ``read`` turns the page's slice of the queryset into its rows (``.values(...)``); with it, the page and its count
    are read in one query.
    """

    def __init__(self, object_list: QuerySet, per_page: int, *, read: RowReader | None = None) -> None:
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
        if not isinstance(self.object_list, QuerySet):
            return len(self.object_list)
        return self.object_list.order_by()[: self.limit + 1].count()

    @property
    def count_exact(self) -> bool:
        """Whether ``count`` is every row (else there are more than ``limit``)."""
        return self.count <= self.limit

    def page(self, number: Any) -> Any:
        self.rows = None
        with contextlib.suppress(TypeError, ValueError):  # validate_number refuses it
            asked = int(number)
            self.reach = asked * self.per_page
            if asked >= 1 and self.read is not None and "count" not in self.__dict__:
                self._read_with_count(asked)
        return super().page(number)

    def _read_with_count(self, number: int) -> None:
        """Read the page's rows and the bounded count in one query: one round trip less, which on a loaded server
        is most of what a query costs (issue #15). An empty page leaves the count to its own query."""
        start = (number - 1) * self.per_page
        bounded = self.object_list.order_by()[: self.limit + 1].values("pk")
        sql, params = bounded.query.sql_with_params()
        # The SQL is our own queryset's, compiled by Django; every value in it is a bound parameter.
        counted = RawSQL(f"SELECT COUNT(*) FROM ({sql}) AS bounded", params)  # noqa: S608, S611
        rows = list(self.read(self.object_list[start : start + self.per_page]).annotate(**{_COUNTED: counted}))
        if rows:
            self.__dict__["count"] = rows[0][_COUNTED]
            self.rows = rows

    def _get_page(self, object_list: Any, number: int, paginator: Paginator) -> Any:
        if self.rows is not None:
            return super()._get_page(self.rows, number, paginator)
        rows = object_list if self.read is None else list(self.read(object_list))
        return super()._get_page(rows, number, paginator)


class BoundedPageNumberPagination(PageNumberPagination):
    """``?page=`` with the default size of 25, ``?page_size=`` up to ``MAX_PAGE_SIZE`` (larger is clamped), and a
    bounded ``count`` with ``count_exact``.

    A view with a ``read_page`` method (a queryset slice in, its rows out) reads each page through it.
    """

    page_size_query_param = "page_size"
    max_page_size = MAX_PAGE_SIZE

    def paginate_queryset(self, queryset: QuerySet, request: Request, view: Any = None) -> Sequence[Any] | None:
        read = getattr(view, "read_page", None)
        self.django_paginator_class = lambda rows, size: BoundedCountPaginator(rows, size, read=read)
        return super().paginate_queryset(queryset, request, view)

    def get_paginated_response(self, data: Any) -> Response:
        paginator = self.page.paginator
        return Response(
            {
                "count": min(paginator.count, paginator.limit),
                "count_exact": paginator.count_exact,
                "next": self.get_next_link(),
                "previous": self.get_previous_link(),
                "results": data,
            }
        )

    def get_paginated_response_schema(self, schema: dict[str, Any]) -> dict[str, Any]:
        answer = super().get_paginated_response_schema(schema)
        properties = answer["properties"]
        properties["count"]["description"] = (
            f"The matching rows, counted up to {COUNT_LIMIT:,} (or to the end of the page asked for, when deeper): "
            "with more, `count_exact` is false and `count` is that limit."
        )
        count_exact = {"type": "boolean", "description": "False when there are more rows than `count`."}
        answer["properties"] = {"count": properties.pop("count"), "count_exact": count_exact, **properties}
        answer["required"] = [*answer["required"], "count_exact"]
        return answer


class KeysetPageNumberPagination(BoundedPageNumberPagination):
    """Page numbers as above, or with ``?after=<id>`` the next rows by ascending id and ``count`` null."""

    after_query_param = "after"

    def paginate_queryset(self, queryset: QuerySet, request: Request, view: Any = None) -> Sequence[Any] | None:
        raw = request.query_params.get(self.after_query_param)
        self.keyset = raw is not None
        if not self.keyset:
            return super().paginate_queryset(queryset, request, view)
        try:
            after = int(raw)
        except ValueError:
            raise exceptions.ValidationError(
                {self.after_query_param: ["A whole number (the last id you read)."]}
            ) from None
        size = self.get_page_size(request) or self.page_size
        self.request = request
        # One more row than asked tells whether a next page exists without counting.
        window = queryset.filter(pk__gt=after).order_by("pk")[: size + 1]
        read = getattr(view, "read_page", None)
        rows = list(window if read is None else read(window))
        self.has_next_keyset = len(rows) > size
        self.keyset_rows = rows[:size]
        return self.keyset_rows

    def get_paginated_response(self, data: Any) -> Response:
        if not getattr(self, "keyset", False):
            return super().get_paginated_response(data)
        next_url = None
        if self.has_next_keyset:
            url = remove_query_param(self.request.build_absolute_uri(), self.page_query_param)
            last = self.keyset_rows[-1]
            next_url = replace_query_param(
                url, self.after_query_param, last["id"] if isinstance(last, dict) else last.pk
            )
        return Response({"count": None, "count_exact": False, "next": next_url, "previous": None, "results": data})

    def get_paginated_response_schema(self, schema: dict[str, Any]) -> dict[str, Any]:
        answer = super().get_paginated_response_schema(schema)
        answer["properties"]["count"]["nullable"] = True
        answer["properties"]["count"]["description"] += " Null in the keyset mode (`?after=`), which does not count."
        return answer

    def get_schema_operation_parameters(self, view: Any) -> list[dict[str, Any]]:
        parameters = super().get_schema_operation_parameters(view)
        parameters.append(
            {
                "name": self.after_query_param,
                "required": False,
                "in": "query",
                "description": (
                    "Keyset mode: the rows whose id is greater than this one, by ascending id, `count` null and "
                    "`next` carrying the last id (constant cost at any depth; `page` and `ordering` are ignored)."
                ),
                "schema": {"type": "integer"},
            }
        )
        return parameters
