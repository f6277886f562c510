"""Pagination of the API lists: page numbers with a bounded page size and a bounded count, and a keyset mode.

``count`` stops at ``COUNT_LIMIT`` rows (``infra.pagination``; more when the page asked for lies beyond them)
and says so with ``count_exact``. A notebook that pages through every request with ``?page=N`` makes the database
skip ever more rows; ``?after=<id>`` instead answers the rows with a larger id, oldest first, with no count and no
offset, so each page costs the same however deep it is.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from django.core.exceptions import ValidationError as DjangoValidationError
from django.db.models import QuerySet
from rest_framework import exceptions
from rest_framework.pagination import PageNumberPagination
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.utils.urls import remove_query_param, replace_query_param

from infra.pagination import COUNT_LIMIT, BoundedCountPaginator

MAX_PAGE_SIZE = 200
WHOLE_NUMBER = re.compile(r"[0-9]+")


class StrictPageParameters(PageNumberPagination):
    """``?page=`` and ``?page_size=`` as the schema states them: a malformed value is a 400 naming the parameter,
    where DRF would silently answer the default page size (``page_size=null``) or 404 (``page=x``).

    A page number past the last (or 0) is still 404, as DRF answers it; a page size over the maximum is clamped.
    """

    def get_page_size(self, request: Request) -> int | None:
        raw = request.query_params.get(self.page_size_query_param)
        if raw is None:
            return self.page_size
        if not WHOLE_NUMBER.fullmatch(raw) or int(raw) < 1:
            raise exceptions.ValidationError(
                {self.page_size_query_param: [f"A whole number from 1 (over {self.max_page_size} counts as that)."]}
            )
        return min(int(raw), self.max_page_size)

    def paginate_queryset(self, queryset: QuerySet, request: Request, view: Any = None) -> Sequence[Any] | None:
        raw = request.query_params.get(self.page_query_param)
        if raw is not None and raw not in self.last_page_strings and not WHOLE_NUMBER.fullmatch(raw):
            raise exceptions.ValidationError({self.page_query_param: ["A page number from 1, or `last`."]})
        return super().paginate_queryset(queryset, request, view)

    def get_schema_operation_parameters(self, view: Any) -> list[dict[str, Any]]:
        parameters = super().get_schema_operation_parameters(view)
        for parameter in parameters:
            if parameter["name"] == self.page_query_param:
                parameter["schema"] = {"type": "integer", "minimum": 1}
                parameter["description"] = "A page number from 1 (`last` also reads the last page); past the last: 404."
            elif parameter["name"] == self.page_size_query_param:
                parameter["schema"] = {"type": "integer", "minimum": 1}
                parameter["description"] = (
                    f"Rows a page, {self.page_size} when left out; over {self.max_page_size} counts as "
                    f"{self.max_page_size}."
                )
        return parameters


class BoundedPageNumberPagination(StrictPageParameters):
    """``?page=`` with the default size of 25, ``?page_size=`` up to ``MAX_PAGE_SIZE`` (larger is clamped), and a
    bounded ``count`` with ``count_exact``. With ``count_with_page``, a page and its count are one query.

    A view with a ``read_page`` method (a queryset slice in, its rows out: ``.values()`` of what the list shows) has
    each page read through it.
    """

    page_size_query_param = "page_size"
    max_page_size = MAX_PAGE_SIZE
    count_with_page = False

    def paginate_queryset(self, queryset: QuerySet, request: Request, view: Any = None) -> Sequence[Any] | None:
        self.read = getattr(view, "read_page", None)
        return super().paginate_queryset(queryset, request, view)

    def django_paginator_class(self, object_list: Any, per_page: int) -> BoundedCountPaginator:
        return BoundedCountPaginator(object_list, per_page, count_with_page=self.count_with_page, read=self.read)

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
    """Page numbers as above (each page and its count in one query), or with ``?after=<id>`` the next rows by
    ascending id and ``count`` null."""

    after_query_param = "after"
    count_with_page = True

    def paginate_queryset(self, queryset: QuerySet, request: Request, view: Any = None) -> Sequence[Any] | None:
        raw = request.query_params.get(self.after_query_param)
        self.keyset = raw is not None
        if not self.keyset:
            return super().paginate_queryset(queryset, request, view)
        after = self._after(raw, queryset)
        size = self.get_page_size(request) or self.page_size
        self.request = request
        # One more row than asked tells whether a next page exists without counting.
        window = queryset.filter(pk__gt=after).order_by("pk")[: size + 1]
        read = getattr(view, "read_page", None)
        rows = list(window if read is None else read(window))
        self.has_next_keyset = len(rows) > size
        self.keyset_rows = rows[:size]
        return self.keyset_rows

    def _after(self, raw: str, queryset: QuerySet) -> int:
        """``?after=`` as an id the table's primary key can hold; a 400 naming the parameter for anything else."""
        try:
            after = int(raw)
            queryset.model._meta.pk.run_validators(after)
        except (ValueError, DjangoValidationError):
            raise exceptions.ValidationError(
                {self.after_query_param: ["A whole number (the last id you read)."]}
            ) from None
        return after

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
