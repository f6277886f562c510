"""The periodic prune of the audit trail (Celery beat, daily)."""

from __future__ import annotations

from celery import shared_task


@shared_task(name="audit.prune_events", acks_late=True)
def prune_events() -> int:
    """Delete audit events past the retention period; idempotent (a second run finds nothing to delete)."""
    from audit.services import audit_events_prune

    return audit_events_prune()
