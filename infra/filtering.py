"""django-filter's DRF backend, building its FilterSet only when the query string asks for a filter."""

from __future__ import annotations

from typing import Any

from django.db.models import QuerySet
from django_filters import filters
from django_filters.rest_framework import DjangoFilterBackend
from django_filters.utils import translate_validation
from rest_framework import exceptions
from rest_framework.request import Request


class FilterBackend(DjangoFilterBackend):
    """``FilterBackend`` that answers the queryset as it is when no parameter names one of its filters.

    A FilterSet builds a form and deep-copies every filter each call: for an unfiltered list, the most common call,
    that was more work than reading the page, to filter nothing. A parameter is a filter's when it is the filter's
    name or that name with a widget's suffix (``created_after``, ``price_min``, ``when_0``).

    An empty filter value (``?status=``) is a 400 naming the parameter, as the schema states, where django-filter
    would read it as no filter at all."""

    def filter_queryset(self, request: Request, queryset: QuerySet, view: Any) -> QuerySet:
        filterset_class = self.get_filterset_class(view, queryset)
        if filterset_class is None:
            return super().filter_queryset(request, queryset, view)
        if not asks_for_a_filter(request.query_params, filterset_class.base_filters):
            return queryset
        names = tuple(filterset_class.base_filters)
        empty = sorted(
            param
            for param, values in request.query_params.lists()
            if asks_for_a_filter([param], names) and any(value == "" for value in values)
        )
        if empty:
            raise exceptions.ValidationError({param: ["Give a value, or leave the parameter out."] for param in empty})
        filterset = self.get_filterset(request, queryset, view)
        if filterset is None:
            return queryset
        if not filterset.is_valid():
            unknown = unknown_objects(filterset)
            if unknown:
                raise exceptions.NotFound(f"{', '.join(unknown)}: no such object among yours.")
            raise translate_validation(filterset.errors)
        return filterset.qs


def unknown_objects(filterset: Any) -> list[str]:
    """The filters in error, when each names a stored object (a team, an SLA tier) that does not exist or is not
    the caller's: a 404 as a path naming it would be, where a malformed value is a 400."""
    errors = filterset.errors.as_data()
    model_filters = (filters.ModelChoiceFilter, filters.ModelMultipleChoiceFilter)
    if all(
        isinstance(filterset.filters.get(name), model_filters)
        and all(error.code in ("invalid_choice", "invalid_pk_value") for error in field_errors)
        for name, field_errors in errors.items()
    ):
        return sorted(errors)
    return []


def asks_for_a_filter(params: Any, filter_names: Any) -> bool:
    """Whether any of ``params`` (names) is one of ``filter_names`` or one of them with a ``_`` suffix."""
    names = tuple(filter_names)
    prefixes = tuple(f"{name}_" for name in names)
    return any(param in names or param.startswith(prefixes) for param in params)
