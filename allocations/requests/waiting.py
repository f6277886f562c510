"""Where requests that are not running wait (``gpucore.waiting``), read for a page of them in three queries.

One query places the pending ones in the approval queue (their position and the units of the same pool asked for
ahead of them); one reads what the pools involved hold now, grouped by expiry; the pools' capacity comes from the
pools already loaded with the requests. The Kueue conditions were kept on the request by the last observation, so no
cluster is called.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from datetime import datetime

from django.db.models import Count, IntegerField, OuterRef, Q, Subquery, Sum, Value
from django.db.models.functions import Coalesce
from django.utils import timezone

from allocations.models import QUOTA_HOLDING_STATUSES, GpuRequest, RequestEvent, RequestStatus
from allocations.teams.reservation_holds import WindowHold, window_holds_by_pool
from gpucore.waiting import WAITING_STATUSES, Holding, PoolOutlook, QueueCondition, Waiting, WaitingInputs, waiting_for

PoolKey = tuple[int, str]


def _ahead_of_outer() -> Q:
    """Pending requests before the outer one in the approval queue's order (submitted, created, id)."""
    submitted, created = OuterRef("submitted_at"), OuterRef("created_at")
    return Q(status=RequestStatus.PENDING_APPROVAL) & (
        Q(submitted_at__lt=submitted)
        | Q(submitted_at=submitted, created_at__lt=created)
        | Q(submitted_at=submitted, created_at=created, pk__lt=OuterRef("pk"))
    )


def _queue_places(pending_ids: list[int]) -> dict[int, tuple[int, int]]:
    """(position, units of the same pool and resource ahead) of each pending request, in one query."""
    if not pending_ids:
        return {}
    ahead = GpuRequest.objects.filter(_ahead_of_outer()).order_by()
    count = ahead.values("status").annotate(n=Count("pk")).values("n")
    same_pool = (
        ahead.filter(node_pool_id=OuterRef("node_pool_id"), resource_name=OuterRef("resource_name"))
        .values("status")
        .annotate(units=Sum("resource_units"))
        .values("units")
    )
    rows = (
        GpuRequest.objects.filter(pk__in=pending_ids)
        .order_by()
        .annotate(
            ahead_count=Coalesce(Subquery(count, output_field=IntegerField()), Value(0)),
            ahead_units=Coalesce(Subquery(same_pool, output_field=IntegerField()), Value(0)),
        )
        .values_list("pk", "ahead_count", "ahead_units")
    )
    return {pk: (int(count) + 1, int(units)) for pk, count, units in rows}


def _holdings(pool_ids: set[int]) -> dict[PoolKey, list[tuple[int, datetime | None]]]:
    """What each (pool, resource) holds now, as (units, expiry) groups, in one query."""
    if not pool_ids:
        return {}
    rows = (
        GpuRequest.objects.filter(node_pool_id__in=pool_ids, status__in=QUOTA_HOLDING_STATUSES)
        .order_by()
        .values("node_pool_id", "resource_name", "expires_at")
        .annotate(units=Sum("resource_units"))
    )
    found: dict[PoolKey, list[tuple[int, datetime | None]]] = defaultdict(list)
    for row in rows:
        found[(row["node_pool_id"], row["resource_name"])].append((int(row["units"] or 0), row["expires_at"]))
    return found


def _others(groups: list[tuple[int, datetime | None]], request: GpuRequest) -> tuple[Holding, ...]:
    """The groups without the request's own units (a request approved or provisioning holds its quota)."""
    own = request.resource_units if request.status in QUOTA_HOLDING_STATUSES else 0
    holdings = []
    for units, ends_at in groups:
        if own and ends_at == request.expires_at:
            units, own = units - own, 0
        if units > 0:
            holdings.append(Holding(units=units, ends_at=ends_at))
    return tuple(holdings)


def waiting_by_request(requests: Iterable[GpuRequest], *, now: datetime | None = None) -> dict[int, Waiting | None]:
    """Where each request waits (``None`` for one that runs, ended or was never submitted). The requests carry their
    node pool (``select_related("node_pool__cluster")``) so its capacity is not read again."""
    requests = list(requests)
    now = now or timezone.now()
    waiting_ones = [request for request in requests if request.status in WAITING_STATUSES]
    places = _queue_places([r.pk for r in waiting_ones if r.status == RequestStatus.PENDING_APPROVAL])
    pool_ids = {r.node_pool_id for r in waiting_ones if r.node_pool_id}
    holdings = _holdings(pool_ids)
    windows = window_holds_by_pool(pool_ids=pool_ids, at=now)
    answer: dict[int, Waiting | None] = {request.pk: None for request in requests}
    for request in waiting_ones:
        pool = request.node_pool if request.node_pool_id else None
        outlook = None
        others_windows: list[WindowHold] = []
        if pool is not None:
            groups = holdings.get((pool.pk, request.resource_name), [])
            others_windows = [
                hold for hold in windows.get((pool.pk, request.resource_name), []) if hold.team_id != request.team_id
            ]
            reserved = tuple(Holding(units=hold.units, ends_at=hold.end) for hold in others_windows)
            outlook = PoolOutlook(
                capacity=pool.capacity().get(request.resource_name, 0), holdings=_others(groups, request) + reserved
            )
        position, units_ahead = places.get(request.pk, (None, 0))
        detail = request.status_detail or ""
        answer[request.pk] = waiting_for(
            WaitingInputs(
                status=request.status,
                units=request.resource_units,
                now=now,
                queue_position=position,
                units_ahead=units_ahead,
                pool=outlook,
                pool_name=str(pool) if pool is not None else "",
                resource_name=request.resource_name,
                cluster_name=pool.cluster.name if pool is not None else "",
                observed_phase=request.observed_phase,
                pending_reason=detail.removeprefix("Pending: ") if request.observed_phase == "Pending" else "",
                queue_conditions=_conditions(request),
                reservation_notes=tuple(hold.text for hold in others_windows),
            )
        )
    return answer


def _conditions(request: GpuRequest) -> tuple[QueueCondition, ...]:
    kept = request.queue_conditions or []
    return tuple(QueueCondition.from_mapping(item) for item in kept if isinstance(item, dict))


def last_preemption(events: Iterable[RequestEvent]) -> RequestEvent | None:
    """The newest preemption notice among a request's events (already read for its page), or None."""
    notices = [event for event in events if (event.details or {}).get("notice") == "preempted"]
    return max(notices, key=lambda event: (event.at, event.pk)) if notices else None


def request_waiting(request: GpuRequest, *, now: datetime | None = None) -> Waiting | None:
    """Where one request waits, and until when (``None`` once it runs)."""
    return waiting_by_request([request], now=now)[request.pk]
