"""The portal's periodic housekeeping (Celery beat): expired sessions deleted once a day."""

from __future__ import annotations

from celery import shared_task
from django.core.management import call_command


@shared_task(name="portal.clear_expired_sessions", acks_late=True)
def clear_expired_sessions() -> None:
    """Delete the sessions past their expiry (Django's ``clearsessions``); idempotent. Django never reads an expired
    session, but nothing else removes its row: without this the table only grows."""
    call_command("clearsessions")
