"""The requests API's rows: what ``GpuRequestSerializer`` answers, read as plain rows and converted through its fields.

A list page built model instances (and five related ones) per row and a 33-field serializer per call, which was most
of what a call cost (issue #15); the views read ``gpu_request_values`` and answer ``gpu_request_rows`` instead, and
``tests/allocations/api/test_requests.py`` checks both against the serializer field for field.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import datetime, tzinfo
from typing import Any

from django.db.models import OuterRef, QuerySet, Subquery
from django.utils import timezone
from rest_framework import ISO_8601, serializers

from allocations.api.serializers import GpuRequestSerializer
from allocations.models import GpuRequest

# Related fields read as correlated subqueries on the primary key, not joins: PostgreSQL spent 4-12 ms planning the
# five-way join of the list's page (longer than running it), and microseconds planning these (issue #15).
# Foreign key -> (the alias of the column read, the related model's column shown).
_RELATED_COLUMNS: dict[str, tuple[str, str]] = {
    "team": ("team_slug", "slug"),
    "requester": ("requester_username", "username"),
    "cluster": ("cluster_name", "name"),
    "node_pool": ("node_pool_name", "name"),
    "sla_tier": ("sla_tier_slug", "slug"),
}
# What each field of GpuRequestSerializer reads from a row of ``gpu_request_values``.
GPU_REQUEST_COLUMNS: dict[str, str] = {
    **{name: name for name in GpuRequestSerializer.Meta.fields},
    **{name: alias for name, (alias, _) in _RELATED_COLUMNS.items()},
    "gpu_model": "gpu_model_requested",
}


def gpu_request_values(queryset: QuerySet[GpuRequest], fields: Iterable[str]) -> QuerySet:
    """The requests as rows (dicts) with the id and the columns the fields show, and nothing else: no model
    instances, no related objects, not the ~4 KB spec unless asked for. ``gpu_request_rows`` turns them into the
    answer. The queryset may be a page's slice."""
    fields = set(fields)
    related = {alias: subquery for name, (alias, subquery) in _related_subqueries().items() if name in fields}
    return queryset.annotate(**related).values("id", *(GPU_REQUEST_COLUMNS[name] for name in fields))


@functools.cache
def _related_subqueries() -> dict[str, tuple[str, Subquery]]:
    """Each related field's alias and subquery, built once per process (annotate() resolves a copy each time)."""
    answer = {}
    for name, (alias, column) in _RELATED_COLUMNS.items():
        key = GpuRequest._meta.get_field(name)
        rows = key.related_model._base_manager.filter(pk=OuterRef(key.attname)).order_by().values(column)
        answer[name] = (alias, Subquery(rows))
    return answer


# Fields whose value is the column as read (a slug, the frozen spec): the others go through their DRF field.
_AS_READ = frozenset({*_RELATED_COLUMNS, "spec"})


@functools.cache
def _prototype_fields() -> dict[str, serializers.Field]:
    """GpuRequestSerializer's fields, bound once per process (building them cost more than reading a page)."""
    return dict(GpuRequestSerializer().fields)


def _iso_datetime(field: serializers.DateTimeField, zone: tzinfo) -> Callable[[datetime], Any]:
    """DateTimeField.to_representation with the current time zone looked up once per answer, not once a value."""

    def convert(value: datetime) -> Any:
        if value.tzinfo is None:
            return field.to_representation(value)
        text = value.astimezone(zone).isoformat()
        return text[:-6] + "Z" if text.endswith("+00:00") else text

    return convert


def gpu_request_rows(rows: Iterable[Mapping[str, Any]], fields: Sequence[str]) -> list[dict[str, Any]]:
    """What ``GpuRequestSerializer(fields=fields)`` answers for requests read by ``gpu_request_values``.

    The same conversions, through the same DRF fields, without building a serializer and its 33 fields for every
    call and a model instance (and five related ones) for every row: most of what a list call cost (issue #15).
    """
    prototype = _prototype_fields()
    zone = timezone.get_current_timezone()
    plan = []
    for name in fields:
        field = prototype[name]
        if name in _AS_READ:
            convert = None
        elif isinstance(field, serializers.DateTimeField) and getattr(field, "format", ISO_8601) == ISO_8601:
            convert = _iso_datetime(field, zone)
        else:
            convert = field.to_representation
        plan.append((name, GPU_REQUEST_COLUMNS[name], convert))
    answer = []
    for row in rows:
        item = {}
        for name, column, convert in plan:
            value = row[column]
            # DRF skips to_representation for None, as here.
            item[name] = value if convert is None or value is None else convert(value)
        answer.append(item)
    return answer
