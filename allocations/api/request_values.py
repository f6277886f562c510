"""The requests API's list and detail: the columns of the fields asked for, read with ``values()``, and the answer
built from those rows. ``GpuRequestSerializer`` documents the same fields and answers the actions; building it and a
model instance (and five related ones) for every row of a list cost more than reading the list, and
``tests/allocations/api/test_requests.py`` checks that both answer the same JSON."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any

from django.db.models import QuerySet
from django.utils import timezone

from allocations.api.serializers import GpuRequestSerializer
from allocations.models import GpuRequest
from infra.renderers import JsonText

# The column each field of GpuRequestSerializer reads (``values()`` names: related objects by what the answer shows).
GPU_REQUEST_COLUMNS: dict[str, str] = {
    **{name: name for name in GpuRequestSerializer.Meta.fields},
    "team": "team__slug",
    "requester": "requester__username",
    "cluster": "cluster__name",
    "node_pool": "node_pool__name",
    "sla_tier": "sla_tier__slug",
    "gpu_model": "gpu_model_requested",
    # The frozen spec as the database keeps its JSON text (GpuRequest.spec_text), written into the answer as it is.
    "spec": "spec_text",
}

_DECIMALS = frozenset({"gpu_memory_gb", "latency_p99_ms", "expected_utilization_pct", "duration_hours"})
_TIMES = frozenset(
    {"expires_at", "created_at", "updated_at", "submitted_at", "approved_at", "activated_at", "ended_at"}
)


def gpu_request_values(queryset: QuerySet[GpuRequest], fields: Iterable[str]) -> QuerySet:
    """The requests as rows (dicts) with the id and the columns of ``fields``, and nothing else: not the ~4 KB spec
    unless asked for. ``serialize_gpu_requests`` turns them into the answer."""
    return queryset.values("id", *(GPU_REQUEST_COLUMNS[name] for name in fields))


def serialize_gpu_requests(rows: Iterable[Mapping[str, Any]], fields: Sequence[str]) -> list[dict[str, Any]]:
    """What ``GpuRequestSerializer(fields=fields)`` answers, for rows of ``gpu_request_values``: decimals as numbers
    (the serializer's ``coerce_to_string=False``), times as DRF's ISO 8601 text in the current time zone, the spec's
    JSON text as it is, every other column as read."""
    times = iso_datetimes()
    convert: dict[str, Callable[[Any], Any]] = {}
    for name in fields:
        if name in _DECIMALS:
            convert[name] = float
        elif name in _TIMES:
            convert[name] = times
        elif name == "spec":
            convert[name] = JsonText
    plan = [(name, GPU_REQUEST_COLUMNS[name], convert.get(name)) for name in fields]
    answer = []
    for row in rows:
        item = {}
        for name, column, change in plan:
            value = row[column]
            item[name] = value if value is None or change is None else change(value)  # DRF skips None too
        answer.append(item)
    return answer


def iso_datetimes() -> Callable[[datetime], str]:
    """DRF's ``DateTimeField`` answer (ISO 8601 in the current time zone, UTC written ``Z``), the zone looked up once
    for a whole answer rather than once a value, as a list converts a few hundred."""
    zone = timezone.get_current_timezone()

    def convert(value: datetime) -> str:
        text = value.astimezone(zone).isoformat()
        return text[:-6] + "Z" if text.endswith("+00:00") else text

    return convert
