"""Django's ``cached_db`` sessions that keep working from the database while the cache is away.

``cached_db`` already writes every session to the database and logs a failed cache write; reading a session after a
cache miss, checking a new key and deleting one still ask the cache unguarded, so a Redis outage would sign everyone
out with a 500. Here each of those falls back to the database store alone, with a warning.
"""

from __future__ import annotations

import logging
from typing import Any

from django.contrib.sessions.backends import cached_db
from django.contrib.sessions.backends.db import SessionStore as DatabaseStore

logger = logging.getLogger(__name__)


class SessionStore(cached_db.SessionStore):
    """``cached_db``'s store; when the cache raises, the database store answers."""

    def load(self) -> dict[str, Any]:
        try:
            return super().load()
        except Exception:
            logger.warning("Session read from the database only: the cache did not answer.", exc_info=True)
            return DatabaseStore.load(self)

    def exists(self, session_key: str) -> bool:
        try:
            return super().exists(session_key)
        except Exception:
            logger.warning("Session key checked in the database only: the cache did not answer.", exc_info=True)
            return DatabaseStore.exists(self, session_key)

    def delete(self, session_key: str | None = None) -> None:
        try:
            super().delete(session_key)
        except Exception:
            # The row is gone (the database store deletes first); a copy left in an unreachable cache expires with
            # the session's age.
            logger.warning("Session deleted from the database only: the cache did not answer.", exc_info=True)
