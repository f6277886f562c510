"""Writing a pull's hourly rollups and its ingest log in bulk.

Hours the cluster has no rollups of yet (every hour of a catch-up, the new hours of a pull) are copied straight into
the rollup table (PostgreSQL ``COPY``). Hours read before are replaced through a staging table: their rows are copied
into a temporary table (batched inserts on SQLite, where every hour goes this way), the cluster's rows of those hours
that the new read no longer has are deleted, and one ``INSERT ... SELECT ... ON CONFLICT DO UPDATE`` on the rollup's
natural key writes the rest: a re-read replaces the same rows (idempotent). A concurrent writer that slipped rows into
an hour found empty makes the straight COPY fail on the natural key as a whole: the write is then undone to its
savepoint and done again through the staging table, so no row is ever doubled. The ingest log of the hours is one
upsert too. Callers hold the transaction (and the watermark's row lock that serialises pulls).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import Any

import psycopg
from django.db import IntegrityError, connection, transaction

from billing.models import IngestStatus, UtilizationIngestHour, UtilizationRollup

# A rollup row as the pull builds it, in this order (tuples: no model instance per row).
ROLLUP_COLUMNS = (
    "cluster_id",
    "hour",
    "gpu_uuid",
    "mig_instance",
    "namespace",
    "pod",
    "team_id",
    "request_id",
    "gpu_model_name",
    "mig_profile",
    "hostname",
    "gpu_index",
    "sample_count",
    "avg_utilization_pct",
    "peak_utilization_pct",
    "avg_memory_used_mib",
    "peak_memory_used_mib",
    "energy_kwh",
    "is_complete",
    "pulled_at",
)
_KEY = ("cluster_id", "hour", "gpu_uuid", "mig_instance", "namespace", "pod")
_DATETIMES = frozenset({"hour", "pulled_at"})
# Filled by the health pull after this write; a replaced row starts without them, as a new one does.
_RESET = ("max_temperature_c", "memory_pressure_minutes")
_STAGING = "billing_rollup_staging"
_BATCH_ROWS = 2_000


def _q(name: str) -> str:
    return connection.ops.quote_name(name)


def _stage(rows: Iterable[Sequence[Any]]) -> None:
    table, staging = _q(UtilizationRollup._meta.db_table), _q(_STAGING)
    columns = ", ".join(_q(c) for c in ROLLUP_COLUMNS)
    with connection.cursor() as cursor:
        cursor.execute(f"DROP TABLE IF EXISTS {staging}")
        # The rollup table's own column types, without its constraints and indexes (both dialects).
        cursor.execute(f"CREATE TEMPORARY TABLE {staging} AS SELECT {columns} FROM {table} WHERE 1 = 0")
        if connection.vendor == "postgresql":
            with cursor.copy(f"COPY {staging} ({columns}) FROM STDIN") as copy:
                for row in rows:
                    copy.write_row(row)
        else:
            _insert_batches(cursor, rows)
        # The replace anti-joins the staging table on the key: without an index, a rollup table whose statistics
        # still say "empty" (just filled) made PostgreSQL scan the staging rows once per row, quadratic in the hours
        # re-read.
        key = ", ".join(_q(c) for c in _KEY)
        cursor.execute(f"CREATE INDEX {_q(_STAGING + '_key')} ON {staging} ({key})")


def _insert_batches(cursor: Any, rows: Iterable[Sequence[Any]]) -> None:
    staging, columns = _q(_STAGING), ", ".join(_q(c) for c in ROLLUP_COLUMNS)
    adapt = connection.ops.adapt_datetimefield_value
    at = [i for i, c in enumerate(ROLLUP_COLUMNS) if c in _DATETIMES]
    marks = ", ".join(["%s"] * len(ROLLUP_COLUMNS))
    batch: list[list[Any]] = []
    for row in rows:
        values = list(row)
        for i in at:
            values[i] = adapt(values[i])
        batch.append(values)
        if len(batch) >= _BATCH_ROWS:
            cursor.executemany(f"INSERT INTO {staging} ({columns}) VALUES ({marks})", batch)
            batch.clear()
    if batch:
        cursor.executemany(f"INSERT INTO {staging} ({columns}) VALUES ({marks})", batch)


def rollups_replace(
    *, cluster_id: int, first_hour: datetime, last_hour: datetime, rows: Iterable[Sequence[Any]]
) -> None:
    """Make the cluster's rollups of the hours [first_hour, last_hour] exactly ``rows`` (in ``ROLLUP_COLUMNS``)."""
    rows = list(rows)
    if connection.vendor == "postgresql":
        try:
            with transaction.atomic():
                _replace_copying_fresh_hours(cluster_id, first_hour, last_hour, rows)
            return
        except (IntegrityError, psycopg.errors.UniqueViolation):
            pass  # another writer filled an hour found empty: its rows are replaced like any read before
    _replace_through_staging(cluster_id, first_hour, last_hour, rows)


def _cluster_hours(cluster_id: int, first_hour: datetime, last_hour: datetime) -> tuple[str, list[Any]]:
    """The condition "the cluster's rollups of the hours [first_hour, last_hour]" and its parameters."""
    adapt = connection.ops.adapt_datetimefield_value
    condition = f"{_q('cluster_id')} = %s AND {_q('hour')} >= %s AND {_q('hour')} <= %s"
    return condition, [cluster_id, adapt(first_hour), adapt(last_hour)]


def _replace_copying_fresh_hours(
    cluster_id: int, first_hour: datetime, last_hour: datetime, rows: list[Sequence[Any]]
) -> None:
    """The hours read before through the staging table, then the others copied straight into the rollup table: an upsert
    through a staging table is much slower than a plain COPY for a catch-up's new hours (``benchmarks/ingest.py``)."""
    table = _q(UtilizationRollup._meta.db_table)
    in_range, params = _cluster_hours(cluster_id, first_hour, last_hour)
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT DISTINCT {_q('hour')} FROM {table} WHERE {in_range}", params)
        read_before = {hour for (hour,) in cursor.fetchall()}
    hour_at = ROLLUP_COLUMNS.index("hour")
    if read_before:
        # First, while the fresh hours are still empty: its delete covers the whole range.
        again = [row for row in rows if row[hour_at] in read_before]
        _replace_through_staging(cluster_id, first_hour, last_hour, again)
    columns = ", ".join(_q(c) for c in ROLLUP_COLUMNS)
    with connection.cursor() as cursor, cursor.copy(f"COPY {table} ({columns}) FROM STDIN") as copy:
        for row in rows:
            if row[hour_at] not in read_before:
                copy.write_row(row)


def _replace_through_staging(
    cluster_id: int, first_hour: datetime, last_hour: datetime, rows: list[Sequence[Any]]
) -> None:
    """Stage ``rows``, delete the range's rows they do not have, upsert them."""
    table, staging = _q(UtilizationRollup._meta.db_table), _q(_STAGING)
    _stage(rows)
    columns = ", ".join(_q(c) for c in ROLLUP_COLUMNS)
    same_key = " AND ".join(f"s.{_q(c)} = {table}.{_q(c)}" for c in _KEY)
    updates = ", ".join(
        [f"{_q(c)} = EXCLUDED.{_q(c)}" for c in ROLLUP_COLUMNS if c not in _KEY] + [f"{_q(c)} = NULL" for c in _RESET]
    )
    in_range, params = _cluster_hours(cluster_id, first_hour, last_hour)
    with connection.cursor() as cursor:
        # Owners the new read no longer has (a pod relabelled, a series gone) leave; the others are upserted.
        cursor.execute(
            f"DELETE FROM {table} WHERE {in_range} AND NOT EXISTS (SELECT 1 FROM {staging} s WHERE {same_key})",
            params,
        )
        # WHERE 1 = 1: SQLite needs it to read ON CONFLICT after INSERT ... SELECT.
        cursor.execute(
            f"INSERT INTO {table} ({columns}) SELECT {columns} FROM {staging} WHERE 1 = 1 "
            f"ON CONFLICT ({', '.join(_q(c) for c in _KEY)}) DO UPDATE SET {updates}"
        )
        cursor.execute(f"DROP TABLE {staging}")


def ingest_hours_log(*, cluster_id: int, entries: Iterable[tuple[datetime, str, int, str]], now: datetime) -> None:
    """Log each ``(hour, status, rows, error)`` of a cluster in one upsert, counting the attempt.

    A failure to read an hour that was read before is only noted (attempts and error): the hour stays as read.
    """
    entries = list(entries)
    if not entries:
        return
    table = _q(UtilizationIngestHour._meta.db_table)
    adapt = connection.ops.adapt_datetimefield_value
    failed = f"(EXCLUDED.{_q('status')} = %s AND {table}.{_q('status')} <> %s)"
    keep = {c: f"CASE WHEN {failed} THEN {table}.{_q(c)} ELSE EXCLUDED.{_q(c)} END" for c in ("status", "rows")}
    keep["updated_at"] = f"CASE WHEN {failed} THEN {table}.{_q('updated_at')} ELSE EXCLUDED.{_q('updated_at')} END"
    values = ", ".join(["(%s, %s, %s, %s, %s, 1, %s)"] * len(entries))
    params: list[Any] = []
    for hour, status, rows, error in entries:
        params += [cluster_id, adapt(hour), status, rows, error[:2000], adapt(now)]
    for _ in keep:
        params += [IngestStatus.FAILED, IngestStatus.FAILED]
    columns = ", ".join(_q(c) for c in ("cluster_id", "hour", "status", "rows", "error", "attempts", "updated_at"))
    with connection.cursor() as cursor:
        cursor.execute(
            f"INSERT INTO {table} ({columns}) VALUES {values} "
            f"ON CONFLICT ({_q('cluster_id')}, {_q('hour')}) DO UPDATE SET "
            + ", ".join(f"{_q(c)} = {sql}" for c, sql in keep.items())
            + f", {_q('error')} = EXCLUDED.{_q('error')}, {_q('attempts')} = {table}.{_q('attempts')} + 1",
            params,
        )
