"""Monthly partitions of the hourly tables (rollups, GPU health hours) on PostgreSQL, and their retention.

Migration ``0012`` makes both tables partitioned by month on ``hour``, with a default partition for hours no month
partition covers. The daily maintenance task creates the current and the next months' partitions ahead (moving any
rows the default partition holds for such a month into it), and drops whole partitions older than the retention
(``HOURLY_RETENTION_MONTHS``, the current month included): a month of hourly rows goes in one catalog change, not
millions of deletes. The daily and monthly totals are kept forever; the first day still kept is recorded
(``HourlyRetention``) so the totals of older days are never recomputed from rows that are gone. On SQLite the tables
stay plain and retention deletes the old rows. Running either step twice changes nothing (idempotent).
"""

from __future__ import annotations

from datetime import UTC, date, datetime

from django.db import connection, transaction

from billing.models import HourlyRetention
from gpucore.periods import midnight, next_month_start

HOURLY_TABLES = ("billing_utilizationrollup", "billing_gpuhealthhour")
_LOCK_CLASS = 0x5054  # pg_advisory_xact_lock(class, 0): one maintenance run at a time


def add_months(month: date, count: int) -> date:
    """The first day of the month ``count`` months after (before, when negative) ``month``'s."""
    index = month.year * 12 + month.month - 1 + count
    return date(index // 12, index % 12 + 1, 1)


def partition_name(table: str, month: date) -> str:
    return f"{table}_p{month:%Y_%m}"


def is_partitioned(table: str) -> bool:
    if connection.vendor != "postgresql":
        return False
    with connection.cursor() as cursor:
        cursor.execute("SELECT relkind FROM pg_class WHERE relname = %s AND relkind IN ('p', 'r')", [table])
        row = cursor.fetchone()
    return bool(row) and row[0] == "p"


def month_partitions(table: str) -> dict[date, str]:
    """The table's month partitions by month (the default partition is not one)."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT c.relname FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid "
            "JOIN pg_class p ON p.oid = i.inhparent WHERE p.relname = %s",
            [table],
        )
        names = [name for (name,) in cursor.fetchall()]
    prefix = f"{table}_p"
    months = {}
    for name in names:
        if name.startswith(prefix):
            year, month = name[len(prefix) :].split("_")
            months[date(int(year), int(month), 1)] = name
    return months


def _bound(bounds: list[datetime]) -> str:
    """A partition bound as DDL literals (DDL takes no parameters); the values are computed datetimes."""
    low, high = (moment.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S+00") for moment in bounds)
    return f"FOR VALUES FROM ('{low}') TO ('{high}')"


def _create_partition(cursor, table: str, month: date) -> None:
    """Create the month's partition; rows the default partition holds for that month move into it."""
    name, default = partition_name(table, month), f"{table}_default"
    bounds = [midnight(month), midnight(next_month_start(month))]
    cursor.execute(f"SELECT EXISTS (SELECT 1 FROM {default} WHERE hour >= %s AND hour < %s)", bounds)  # noqa: S608
    if not cursor.fetchone()[0]:
        cursor.execute(f"CREATE TABLE {name} PARTITION OF {table} {_bound(bounds)}")
        return
    # PostgreSQL refuses a partition for rows the default partition holds: fill it first, then attach it.
    cursor.execute(f"CREATE TABLE {name} (LIKE {table} INCLUDING DEFAULTS INCLUDING CONSTRAINTS)")
    cursor.execute(
        f"WITH moved AS (DELETE FROM {default} WHERE hour >= %s AND hour < %s RETURNING *) "  # noqa: S608
        f"INSERT INTO {name} SELECT * FROM moved",
        bounds,
    )
    cursor.execute(f"ALTER TABLE {table} ATTACH PARTITION {name} {_bound(bounds)}")


def ensure_month_partitions(*, now: datetime, months_ahead: int = 2) -> list[str]:
    """Create the partitions of the current month and the ``months_ahead`` next ones that are missing."""
    created: list[str] = []
    first = now.astimezone(UTC).date().replace(day=1)
    for table in HOURLY_TABLES:
        if not is_partitioned(table):
            continue
        with transaction.atomic(), connection.cursor() as cursor:
            cursor.execute("SELECT pg_advisory_xact_lock(%s, 0)", [_LOCK_CLASS])
            existing = month_partitions(table)
            for offset in range(months_ahead + 1):
                month = add_months(first, offset)
                if month not in existing:
                    _create_partition(cursor, table, month)
                    created.append(partition_name(table, month))
    return created


def hourly_kept_from(*, now: datetime, retention_months: int) -> date | None:
    """The first day whose hourly rows the retention keeps: the current month and the ``retention_months - 1``
    before it (None: 0 keeps everything)."""
    if retention_months <= 0:
        return None
    return add_months(now.astimezone(UTC).date().replace(day=1), -(retention_months - 1))


def drop_expired_hourly(*, now: datetime, retention_months: int) -> list[str]:
    """Drop the hourly rows of months before the retention: whole partitions on PostgreSQL. Returns what went."""
    kept_from = hourly_kept_from(now=now, retention_months=retention_months)
    if kept_from is None:
        return []
    dropped: list[str] = []
    cutoff = connection.ops.adapt_datetimefield_value(midnight(kept_from))
    with transaction.atomic(), connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute("SELECT pg_advisory_xact_lock(%s, 0)", [_LOCK_CLASS])
            # A table with deferred foreign-key checks still pending in this transaction cannot be dropped.
            cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")
        for table in HOURLY_TABLES:
            if is_partitioned(table):
                for month, name in sorted(month_partitions(table).items()):
                    if month < kept_from:
                        cursor.execute(f"DROP TABLE {name}")
                        dropped.append(name)
                table = f"{table}_default"  # stray old hours, if any
            cursor.execute(f"DELETE FROM {table} WHERE hour < %s", [cutoff])  # noqa: S608
        retention = HourlyRetention.objects.select_for_update().first()
        if retention is None:
            HourlyRetention.objects.create(kept_from=kept_from)
        elif retention.kept_from < kept_from:
            retention.kept_from = kept_from
            retention.save(update_fields=["kept_from", "updated_at"])
    return dropped
