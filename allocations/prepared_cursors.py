"""The cursor the hot reads run on (issue #15): on PostgreSQL, a server-binding cursor whose statements psycopg
prepares on the connection, kept for the connection's life, and how it reads timestamps (Django's loader, psycopg's
own, or DRF's UTC text). ``allocations.compiled_reads`` and the requests API read through it."""

from __future__ import annotations

import functools
import threading
from typing import Any

# How a prepared cursor reads timestamptz columns (``prepared_cursor(..., timestamps=...)``): as Django reads them,
# as datetimes by psycopg's own loader (``psycopg_timestamps``), or as DRF's UTC text
# (``_iso_utc_text_loader``).
DJANGO_TIMESTAMPS, DATETIME_TIMESTAMPS, ISO_UTC_TIMESTAMPS = "django", "datetime", "iso-utc"


class _KeptCursors(threading.local):
    """Per thread, as Django's connections are: (alias, timestamps) -> (psycopg connection, time zone, cursor)."""

    def __init__(self) -> None:
        self.by_key: dict[tuple[str, str], tuple[Any, Any, Any]] = {}


_kept_cursors = _KeptCursors()


def prepared_cursor(connection: Any, *, timestamps: str = DJANGO_TIMESTAMPS) -> Any:
    """A cursor for SQL run again and again with other values (the reads here, a page of requests, a user's
    permissions). On PostgreSQL with prepared statements on (``DB_PREPARE_THRESHOLD``), Django's cursor wrapper
    (query logging, error wrapping) around a cursor that binds parameters on the server: psycopg prepares a statement
    once it has run that many times on the connection, and PostgreSQL then plans it once instead of on every run,
    which was most of the server's time for such a read (a user's permissions: 0.55 ms a run, 0.16 ms prepared;
    issue #15). Django's own cursors bind parameters client-side and are never prepared. Elsewhere, Django's cursor,
    whose timestamps are Django's whatever ``timestamps`` says.

    The server-binding cursor is kept for the connection's life, one per thread and kind of ``timestamps``, and
    leaving the ``with`` block leaves it open: making one and setting its timestamp loader took about 40 us of a
    0.2 ms read, and a page makes up to ten such reads.
    """
    if connection.vendor != "postgresql" or connection.settings_dict["OPTIONS"].get("prepare_threshold") is None:
        return connection.cursor()
    connection.close_if_health_check_failed()
    connection.ensure_connection()
    with connection.wrap_database_errors:
        cursor = _kept_cursor(connection, timestamps)
    connection.validate_thread_sharing()
    return (
        _server_bound_debug_wrapper()(cursor, connection)
        if connection.queries_logged
        else connection.make_cursor(cursor)
    )


def _kept_cursor(connection: Any, timestamps: str) -> Any:
    """This thread's server-binding cursor on the connection's current psycopg connection, made on first use."""
    key, raw, zone = (connection.alias, timestamps), connection.connection, connection.timezone
    found = _kept_cursors.by_key.get(key)
    if found is not None and found[0] is raw and found[1] == zone:
        return found[2]
    cursor = _kept_cursor_class()(raw)
    if timestamps == DATETIME_TIMESTAMPS and zone is not None:
        _use_psycopg_timestamps(cursor)
    elif timestamps == ISO_UTC_TIMESTAMPS:
        cursor.adapters.register_loader("timestamptz", _iso_utc_text_loader())
    else:
        from django.db.backends.postgresql.base import TIMESTAMPTZ_OID
        from django.db.backends.postgresql.psycopg_any import register_tzloader
        from psycopg.pq import Format

        # As Django's create_cursor: the connection's time zone for timestamptz values.
        if zone != raw.adapters.get_loader(TIMESTAMPTZ_OID, Format.TEXT).timezone:
            register_tzloader(zone, cursor)
    _kept_cursors.by_key[key] = (raw, zone, cursor)
    return cursor


@functools.cache
def _kept_cursor_class() -> type:
    from django.db.backends.postgresql.base import ServerBindingCursor  # PostgreSQL only

    class KeptServerBindingCursor(ServerBindingCursor):
        """Closing it (Django's wrapper does, leaving a ``with`` block) keeps it for the next read; its results
        are replaced by the next ``execute``. It goes with its connection."""

        def close(self) -> None:
            pass

    return KeptServerBindingCursor


@functools.cache
def _server_bound_debug_wrapper() -> type:
    """Django's debug cursor (``connection.queries``, ``CaptureQueriesContext``) for a server-binding cursor: it logs
    the statement with its values put in, as Django logs its own, where Django's would log None."""
    from django.db.backends.postgresql.base import CursorDebugWrapper
    from django.db.backends.utils import CursorWrapper

    class ServerBoundDebugWrapper(CursorDebugWrapper):
        def execute(self, sql: str, params: Any = None) -> Any:
            with self.debug_sql(self.db.ops.compose_sql(sql, params) if params is not None else sql):
                return CursorWrapper.execute(self, sql, params)

    return ServerBoundDebugWrapper


def psycopg_timestamps(cursor: Any, connection: Any) -> None:
    """Read this cursor's timestamps with psycopg's own (C) loader on PostgreSQL. Django's is a Python subclass that
    parses each value in Python, then sets the time zone the session already has: the same datetimes, and over a
    third of reading a full page of requests (issue #15)."""
    if connection.vendor == "postgresql" and connection.timezone is not None:
        _use_psycopg_timestamps(cursor.cursor)


def _use_psycopg_timestamps(psycopg_cursor: Any) -> None:
    from psycopg.types.datetime import TimestamptzLoader  # PostgreSQL only

    psycopg_cursor.adapters.register_loader("timestamptz", TimestamptzLoader)


@functools.cache
def _iso_utc_text_loader() -> type:
    """The loader of ``ISO_UTC_TIMESTAMPS``: timestamps as the text DRF answers for them in UTC
    (``2026-11-24T14:15:54.123456Z``), made from PostgreSQL's own text: parsing each into a datetime and writing it
    out again cost a sixth of a full list page's CPU (2.50 -> 2.08 ms in-process, issue #15). For answers in UTC only.
    A value in another form (a session in another zone, a year past 9999, infinity) is read as a datetime, as
    ``psycopg_timestamps`` reads it."""
    from psycopg.types.datetime import TimestamptzLoader  # PostgreSQL only

    class IsoUtcTextLoader(TimestamptzLoader):
        """A timestamp in UTC as ``datetime.isoformat`` writes it, ``Z`` for ``+00:00``; other forms as datetimes."""

        def load(self, data: Any) -> Any:
            text = bytes(data).decode()
            # 'YYYY-MM-DD HH:MM:SS[.f...]+00': PostgreSQL leaves out a zero fraction and a fraction's trailing zeros.
            if len(text) >= 22 and text[4] == "-" and text[10] == " " and text.endswith("+00"):
                clock = text[11:-3]
                if len(clock) == 8:
                    return f"{text[:10]}T{clock}Z"
                if 9 < len(clock) <= 15 and clock[8] == ".":
                    return f"{text[:10]}T{clock.ljust(15, '0')}Z"
            return super().load(data)

    return IsoUtcTextLoader
