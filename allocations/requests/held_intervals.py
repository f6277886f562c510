"""When a request held GPUs: its spans of holding them, as model instances or plain rows (billing's chargeback and
capacity forecast read them here; ``GpuRequest.allocation_spec`` says what it held)."""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.db.models import Case, Count, F, Func, OuterRef, Q, QuerySet, Subquery, TextField, When

from allocations.models import TERMINAL_STATUSES, GpuRequest, RequestEvent, RequestStatus, Team

# Statuses after which a request with no ended_at holds nothing any more: its last status change ended it.
_HELD_NOTHING_SINCE_LAST_CHANGE = TERMINAL_STATUSES | {RequestStatus.FAILED}


@dataclass(frozen=True, slots=True)
class AllocationInterval:
    """A span during which a request held GPUs: ``[start, end)``, ``end`` None while it still holds them."""

    request: GpuRequest
    start: datetime
    end: datetime | None

    def overlaps(self, start: datetime, end: datetime) -> bool:
        """Whether the span meets ``[start, end)``."""
        return self.start < end and (self.end is None or self.end > start)


def _requests_holding(*, start: datetime, end: datetime, teams: Iterable[Team] | None) -> QuerySet[GpuRequest]:
    """Requests that may have held GPUs in ``[start, end)``, in request order, each with ``provisioning_started``
    (``_held_span`` decides, from the columns it names, whether and when they did)."""
    provisioning = (
        RequestEvent.objects.filter(request=OuterRef("pk"), to_status=RequestStatus.PROVISIONING)
        .order_by("at")
        .values("at")[:1]
    )
    requests = (
        # Only a request never activated needs its first provisioning: a CASE spares the subquery for every other
        # row (a month holds tens of thousands).
        GpuRequest.objects.annotate(
            provisioning_started=Case(When(activated_at__isnull=True, then=Subquery(provisioning)))
        )
        .filter(Q(activated_at__lt=end) | Q(activated_at__isnull=True, provisioning_started__lt=end))
        .filter(Q(ended_at__isnull=True) | Q(ended_at__gt=start))
        .order_by("pk")
    )
    if teams is not None:
        requests = requests.filter(team__in=list(teams))
    return requests


# The columns (and the annotation) ``_held_span`` reads, in its argument order.
_SPAN_COLUMNS = ("activated_at", "provisioning_started", "ended_at", "status", "updated_at")


def _held_span(
    activated_at: datetime | None,
    provisioning_started: datetime | None,
    ended_at: datetime | None,
    status: str,
    updated_at: datetime,
) -> tuple[datetime, datetime | None]:
    """When a request held GPUs: from its activation or, never activated, its first entry into provisioning, until
    ``ended_at``, else, failed, rejected, released or expired without one, its last status change."""
    finished = ended_at or (updated_at if status in _HELD_NOTHING_SINCE_LAST_CHANGE else None)
    return activated_at or provisioning_started, finished


Gap = tuple[datetime, datetime | None]


def _suspension_gaps(*, end: datetime, teams: Iterable[Team] | None) -> dict[int, list[Gap]]:
    """Per request, its suspensions before ``end``: from the move to ``suspended`` to the move out of it (None while
    still suspended). Few rows: only requests the idle reclaim policy ever suspended have any."""
    events = RequestEvent.objects.filter(
        Q(to_status=RequestStatus.SUSPENDED) | Q(from_status=RequestStatus.SUSPENDED), at__lt=end
    ).exclude(from_status=F("to_status"))
    if teams is not None:
        events = events.filter(request__team__in=list(teams))
    gaps: dict[int, list[Gap]] = {}
    for request_id, to_status, at in events.order_by("request_id", "at", "id").values_list(
        "request_id", "to_status", "at"
    ):
        spans = gaps.setdefault(request_id, [])
        if to_status == RequestStatus.SUSPENDED:
            spans.append((at, None))
        elif spans and spans[-1][1] is None:
            spans[-1] = (spans[-1][0], at)
    return gaps


def _minus_gaps(began: datetime, finished: datetime | None, gaps: list[Gap]) -> list[tuple[datetime, datetime | None]]:
    """``[began, finished)`` without the suspensions: the pieces during which the request held its GPUs."""
    pieces: list[tuple[datetime, datetime | None]] = []
    cursor: datetime | None = began
    for gap_start, gap_end in gaps:
        if cursor is None:
            break
        if finished is not None and gap_start >= finished:
            break
        if gap_end is not None and gap_end <= cursor:
            continue
        if gap_start > cursor:
            pieces.append((cursor, gap_start))
        cursor = None if gap_end is None else max(cursor, gap_end)
    if cursor is not None and (finished is None or cursor < finished):
        pieces.append((cursor, finished))
    return pieces


def allocation_intervals(
    *, start: datetime, end: datetime, teams: Iterable[Team] | None = None
) -> list[AllocationInterval]:
    """Every request's spans of holding GPUs that meet ``[start, end)``, in request order (the one definition).

    A request holds GPUs from its activation or, never activated, from the first time it entered provisioning (its
    pods may hold GPUs while pending), except while the idle reclaim policy had it suspended (one span per piece
    between suspensions), until it ended: ``ended_at``, else, for a request failed, rejected, released
    or expired without one, its last status change. Approval alone holds quota, not GPUs. The requests come with
    team, SLA tier and pool (and the pool's GPU model) loaded; ``teams`` keeps only theirs.

    Read for every request of a month, the frozen spec (about 4 KB of rationale and alternatives each) and the
    manifests (as much again) are not loaded:
    each request carries ``held_spec``, the keys ``allocation_spec_of`` reads (``GpuRequest.ALLOCATION_SPEC_KEYS``),
    (``HeldSpecJson``), and reading ``spec`` itself costs a query per request.
    A reader that needs only some columns of many requests reads ``held_span_rows`` (no model instances).
    """
    requests = (
        _requests_holding(start=start, end=end, teams=teams)
        .select_related("team", "sla_tier", "node_pool__gpu_model")
        .defer("spec", "manifests", "purpose", "command", "status_detail")
        .annotate(held_spec_json=HeldSpecJson())
    )
    gaps = _suspension_gaps(end=end, teams=teams)
    intervals = []
    for request in requests:
        request.held_spec = json.loads(request.held_spec_json)
        began, finished = _held_span(*(getattr(request, column) for column in _SPAN_COLUMNS))
        for piece_start, piece_end in _minus_gaps(began, finished, gaps.get(request.pk, [])):
            interval = AllocationInterval(request=request, start=piece_start, end=piece_end)
            if interval.overlaps(start, end):  # a request failed before the window, without ended_at, held nothing
                intervals.append(interval)
    return intervals


# The keys as SQL string literals and as SQLite key/value pairs: constants of the model, never user input.
_KEY_LITERALS = ", ".join(f"'{key}'" for key in GpuRequest.ALLOCATION_SPEC_KEYS)
_SQLITE_PAIRS = ", ".join(
    f"'{key}', json_extract(%(expressions)s, '$.{key}')" for key in GpuRequest.ALLOCATION_SPEC_KEYS
)


class HeldSpecJson(Func):
    """The spec's allocation keys (``GpuRequest.ALLOCATION_SPEC_KEYS``) as one JSON object's text: ``'{}'`` for a spec
    that is no object, a key's JSON null as null (never the text "null"), an object as an object; equal texts for
    equal keys. What ``held_span_rows`` and ``allocation_intervals`` read instead of the whole spec (kilobytes of
    rationale and alternatives each)."""

    output_field = TextField()
    postgresql_template = (
        "COALESCE((SELECT jsonb_object_agg(key, value) FROM jsonb_each(CASE WHEN jsonb_typeof(%(expressions)s) "
        "= 'object' THEN %(expressions)s END) WHERE key IN (%(keys)s)), '{}')::text"
    )

    def __init__(self) -> None:
        super().__init__(F("spec"))

    def as_postgresql(self, compiler: Any, connection: Any, **extra: Any) -> tuple[str, list[Any]]:
        # jsonb_each reads the (compressed) spec once; a -> per key would decompress it once per key.
        return self.as_sql(compiler, connection, template=self.postgresql_template, keys=_KEY_LITERALS, **extra)

    def as_sqlite(self, compiler: Any, connection: Any, **extra: Any) -> tuple[str, list[Any]]:
        # json_extract keeps an object's JSON subtype and gives a JSON null as SQL NULL: json_object writes both as
        # JSON (Django's key transforms give a null as the text 'null' here, which json_object then quotes).
        template = (
            "CASE WHEN json_type(%(expressions)s) = 'object' THEN json_object(" + _SQLITE_PAIRS + ") ELSE '{}' END"
        )
        return self.as_sql(compiler, connection, template=template, **extra)


def held_span_rows(
    *, start: datetime, end: datetime, fields: Sequence[str], teams: Iterable[Team] | None = None
) -> list[tuple[tuple[Any, ...], datetime, datetime | None]]:
    """``allocation_intervals`` as plain rows: for each request's span that meets ``[start, end)``, in request
    order, the ``fields`` asked for (``values_list`` names; ``held_spec_json`` is ``held_spec`` as JSON text, which
    a reader of many requests parses once per distinct text) and the span's start and end. No model instances: a
    month's chargeback curves read tens of thousands."""
    requests = _requests_holding(start=start, end=end, teams=teams)
    if "held_spec_json" in fields:
        requests = requests.annotate(held_spec_json=HeldSpecJson())
    gaps = _suspension_gaps(end=end, teams=teams)
    width = len(fields)
    rows = []
    for row in requests.values_list(*fields, *_SPAN_COLUMNS, "pk"):
        began, finished = _held_span(*row[width:-1])
        for piece_start, piece_end in _minus_gaps(began, finished, gaps.get(row[-1], [])):
            if piece_start < end and (piece_end is None or piece_end > start):  # AllocationInterval.overlaps
                rows.append((row[:width], piece_start, piece_end))
    return rows


def windows_held(windows: Sequence[tuple[datetime, datetime]], *, chunk: int = 100) -> list[bool]:
    """For each ``[start, end)`` window, whether any request held GPUs for a moment of it (as ``held_span_rows``).

    One grouped count says which windows any request may have held in; each of those is then read a chunk of
    requests at a time until one did, so a busy year's windows cost a few rows each, not every request's spans."""
    if not windows:
        return []
    requests = _requests_holding(start=min(s for s, _ in windows), end=max(e for _, e in windows), teams=None)
    may_hold = requests.aggregate(
        **{
            f"w{index}": Count(
                "pk",
                filter=(Q(activated_at__lt=end) | Q(activated_at__isnull=True, provisioning_started__lt=end))
                & (Q(ended_at__isnull=True) | Q(ended_at__gt=start)),
            )
            for index, (start, end) in enumerate(windows)
        }
    )
    if not any(may_hold.values()):
        return [False] * len(windows)
    gaps = _suspension_gaps(end=max(e for _, e in windows), teams=None)
    held = []
    for index, (start, end) in enumerate(windows):
        found = False
        candidates = _requests_holding(start=start, end=end, teams=None).values_list(*_SPAN_COLUMNS, "pk")
        offset = 0
        while may_hold[f"w{index}"] and not found:
            rows = list(candidates[offset : offset + chunk])
            for row in rows:
                pieces = _minus_gaps(*_held_span(*row[:-1]), gaps.get(row[-1], []))
                if any(began < end and (finished is None or finished > start) for began, finished in pieces):
                    found = True
                    break
            if len(rows) < chunk:
                break
            offset += chunk
        held.append(found)
    return held
