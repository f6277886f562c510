"""The portal's periodic housekeeping (Celery beat): expired sessions deleted once a day."""

from __future__ import annotations

from celery import shared_task


@shared_task(name="portal.clear_expired_sessions", acks_late=True)
def clear_expired_sessions() -> None:
    """Delete the sessions past their expiry, as Django's ``clearsessions`` does; idempotent. Nothing reads an expired
    session (the read asks for one unexpired now), but nothing else removes its row: the table only grew."""
    from portal.sessions import SessionStore

    SessionStore.clear_expired()
