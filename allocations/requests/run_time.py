"""A request's time asked for against the time it ran: what the request page and the detail API show once it started.

A Job that completed or failed ends its request early (``allocations.clusters.provisioning``); this says by how much,
and how it ended, e.g. "Requested 72 h, ran 5 h 12 min, ended Complete at 2026-11-29 10:12 UTC".
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta
from decimal import Decimal
from typing import Any

from django.utils import timezone

from allocations.clusters.provisioning import JOB_CONDITION_DETAIL, JOB_FINISHED
from allocations.models import GpuRequest, RequestEvent, RequestStatus


@dataclass(frozen=True, slots=True)
class RunTime:
    """Hours asked for (None: neither a duration nor an expiry), time run so far or in all, and how it ended."""

    requested_hours: Decimal | None
    ran: timedelta
    ended_at: datetime | None
    ended_as: str | None

    @property
    def summary(self) -> str:
        """One line, e.g. "Requested 72 h, ran 5 h 12 min, ended Complete at 2026-11-29 10:12 UTC."."""
        asked = f"Requested {_hours(self.requested_hours)}" if self.requested_hours is not None else "No duration set"
        if self.ended_at is None:
            return f"{asked}, running for {format_span(self.ran)} so far."
        return f"{asked}, ran {format_span(self.ran)}, ended {self.ended_as} at {self.ended_at:%Y-%m-%d %H:%M} UTC."

    def to_dict(self) -> dict[str, Any]:
        """JSON for the detail API."""
        return {
            "requested_hours": float(self.requested_hours) if self.requested_hours is not None else None,
            "ran_seconds": int(self.ran.total_seconds()),
            "ended_at": self.ended_at.isoformat() if self.ended_at else None,
            "ended_as": self.ended_as,
            "summary": self.summary,
        }


def format_span(span: timedelta) -> str:
    """A span in hours and minutes: "5 h 12 min", "45 min", "3 h"."""
    minutes = max(0, int(span.total_seconds() // 60))
    hours, minutes = divmod(minutes, 60)
    if not hours:
        return f"{minutes} min"
    return f"{hours:,} h {minutes} min" if minutes else f"{hours:,} h"


def _hours(value: Decimal) -> str:
    return f"{value.normalize():,f} h" if value != value.to_integral_value() else f"{int(value):,} h"


def request_run_time(request: GpuRequest, events: Iterable[RequestEvent] | None = None) -> RunTime | None:
    """The request's run time once it began holding GPUs (None before); ``events``: its events, if already read."""
    started = request.activated_at
    if started is None:
        return None
    requested = request.duration_hours
    if requested is None and request.expires_at is not None:
        requested = Decimal(int((request.expires_at - started).total_seconds() // 60)) / 60
        requested = requested.quantize(Decimal("0.01"))
    ended = request.ended_at
    if ended is None and request.status in (RequestStatus.ACTIVE, RequestStatus.PROVISIONING, RequestStatus.SUSPENDED):
        return RunTime(requested_hours=requested, ran=timezone.now() - started, ended_at=None, ended_as=None)
    if ended is None:
        ended = request.updated_at  # ended without a recorded end: its last status change ended it
    return RunTime(
        requested_hours=requested,
        ran=max(ended - started, timedelta(0)),
        ended_at=ended,
        ended_as=_ended_as(request, request.events.all() if events is None else events),
    )


def _ended_as(request: GpuRequest, events: Iterable[RequestEvent]) -> str:
    for event in events:
        if event.actor_label == JOB_FINISHED and (event.details or {}).get(JOB_CONDITION_DETAIL):
            return str(event.details[JOB_CONDITION_DETAIL])
    return request.get_status_display()
