"""Reads of the audit trail: platform admins only, filtered by actor, object type, source, action and time."""

from __future__ import annotations

from collections.abc import Iterator

from django.contrib.auth.models import AbstractBaseUser, AnonymousUser
from django.db.models import QuerySet

from audit.models import AuditEvent

VIEW_PERMISSION = "audit.view_auditevent"


def user_can_read_audit(user: AbstractBaseUser | AnonymousUser) -> bool:
    """Platform admins: active staff accounts holding the permission to view audit events (superusers hold all)."""
    return bool(user.is_authenticated and user.is_active and user.is_staff and user.has_perm(VIEW_PERMISSION))


def audit_events_visible_to(*, user: AbstractBaseUser | AnonymousUser) -> QuerySet[AuditEvent]:
    """Every event for platform admins, none for anyone else (every audit page and endpoint starts here)."""
    if not user_can_read_audit(user):
        return AuditEvent.objects.none()
    return AuditEvent.objects.all()


def audit_object_types() -> list[str]:
    """The object types the trail holds, for the filter's choices."""
    return sorted(AuditEvent.objects.values_list("object_type", flat=True).distinct().order_by())


CSV_HEADER = [
    "at",
    "actor",
    "source",
    "source_detail",
    "ip",
    "action",
    "object_type",
    "object_id",
    "object",
    "before",
    "after",
    "comment",
]


def audit_csv_rows(events: QuerySet[AuditEvent]) -> Iterator[list[object]]:
    """One row per event, before/after as JSON text, for the CSV export (written by gpucore.exports), read from the
    database in chunks as the rows are consumed: the export never holds every event."""
    import json

    for event in events.iterator(chunk_size=2000):
        yield [
            event.at.isoformat(),
            event.actor_label,
            event.source,
            event.source_detail,
            event.ip or "",
            event.action,
            event.object_type,
            event.object_id,
            event.object_repr,
            json.dumps(event.before, sort_keys=True) if event.before is not None else "",
            json.dumps(event.after, sort_keys=True) if event.after is not None else "",
            event.comment,
        ]
