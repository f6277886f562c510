"""Filter backends of the API.

PostgreSQL text cannot hold NUL characters: a query parameter the FilterSets do not declare (``search``,
``ordering``) carrying one would reach the database and end in a 500, so ``RejectNulCharacters`` answers 400 first.
"""

from __future__ import annotations

from typing import Any

from django.db.models import QuerySet
from rest_framework.exceptions import ValidationError
from rest_framework.filters import BaseFilterBackend
from rest_framework.request import Request

NUL_MESSAGE = "Null characters are not allowed."


class RejectNulCharacters(BaseFilterBackend):
    """Answer 400 naming each query parameter that contains a NUL character; filter nothing otherwise."""

    def filter_queryset(self, request: Request, queryset: QuerySet, view: Any) -> QuerySet:
        params = request.query_params
        bad = sorted({key for key in params for value in [key, *params.getlist(key)] if "\x00" in value})
        if bad:
            raise ValidationError({key.replace("\x00", ""): [NUL_MESSAGE] for key in bad})
        return queryset
