"""Pagination of the API lists: page numbers with a bounded page size, and a keyset mode for reading everything.

A notebook that pages through every request with ``?page=N`` makes the database count and skip ever more rows;
``?after=<id>`` instead answers the rows with a larger id, oldest first, with no ``COUNT(*)`` and no offset, so each
page costs the same however deep it is (issue #15).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from django.db.models import QuerySet
from rest_framework import exceptions
from rest_framework.pagination import PageNumberPagination
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.utils.urls import remove_query_param, replace_query_param

MAX_PAGE_SIZE = 200


class BoundedPageNumberPagination(PageNumberPagination):
    """``?page=`` with the default size of 25 and ``?page_size=`` up to ``MAX_PAGE_SIZE`` (larger is clamped)."""

    page_size_query_param = "page_size"
    max_page_size = MAX_PAGE_SIZE


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
        rows = list(queryset.filter(pk__gt=after).order_by("pk")[: size + 1])
        self.has_next_keyset = len(rows) > size
        self.keyset_rows = rows[:size]
        return self.keyset_rows

    def get_paginated_response(self, data: Any) -> Response:
        if not getattr(self, "keyset", False):
            return super().get_paginated_response(data)
        next_url = None
        if self.has_next_keyset:
            url = remove_query_param(self.request.build_absolute_uri(), self.page_query_param)
            next_url = replace_query_param(url, self.after_query_param, self.keyset_rows[-1].pk)
        return Response({"count": None, "next": next_url, "previous": None, "results": data})

    def get_paginated_response_schema(self, schema: dict[str, Any]) -> dict[str, Any]:
        answer = super().get_paginated_response_schema(schema)
        answer["properties"]["count"]["nullable"] = True
        answer["properties"]["count"]["description"] = "Null in the keyset mode (`?after=`), which does not count."
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
