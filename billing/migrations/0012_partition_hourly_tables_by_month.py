"""On PostgreSQL, the hourly rollups and GPU health hours become tables partitioned by month on ``hour``.

The existing table (with its rows) is renamed aside, a partitioned table of the same columns is created with a
partition per month that holds rows (plus the current and next two months, and a default partition for hours no
month partition covers yet), the rows are copied over, the constraints and indexes are recreated under their own
names (so later migrations find them), and the old table is dropped. SQLite keeps plain tables.

PostgreSQL requires every unique constraint of a partitioned table to include the partition key. The natural keys
already include ``hour``; the primary key ``id`` does not, so it becomes a plain ``bigint`` fed by a sequence and
unique together with ``hour`` (Django still addresses rows by ``id`` alone, which the sequence keeps unique). A
composite primary key would change nothing for the database and would make Django's model a composite-key model.
"""

# Every name interpolated into SQL here is this module's constant or read from the catalog.
# ruff: noqa: S608

from datetime import UTC, datetime

from django.db import migrations, models

TABLES = ("billing_utilizationrollup", "billing_gpuhealthhour")
ASIDE = "__unpartitioned"
MONTHS_AHEAD = 2


def _month_after(month: datetime) -> datetime:
    return month.replace(year=month.year + 1, month=1) if month.month == 12 else month.replace(month=month.month + 1)


def _last_id(cursor, table: str) -> int:
    cursor.execute("SELECT pg_get_serial_sequence(%s, 'id')", [table])
    (sequence,) = cursor.fetchone()
    if sequence:
        cursor.execute(f"SELECT CASE WHEN is_called THEN last_value ELSE last_value - 1 END FROM {sequence}")
        last = cursor.fetchone()[0]
    else:
        last = 0
    cursor.execute(f"SELECT COALESCE(MAX(id), 0) FROM {table}")
    return max(last, cursor.fetchone()[0])


def _rename_indexes_aside(cursor, table: str) -> None:
    """Index names are schema-wide: the old table's move aside so the new table can take them."""
    cursor.execute(
        "SELECT i.relname FROM pg_index x JOIN pg_class i ON i.oid = x.indexrelid "
        "JOIN pg_class t ON t.oid = x.indrelid WHERE t.relname = %s",
        [table],
    )
    for (name,) in cursor.fetchall():
        cursor.execute(f'ALTER INDEX "{name}" RENAME TO "{name[: 63 - len(ASIDE)]}{ASIDE}"')


def _definitions(cursor, table: str) -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
    """The table's constraints (name, definition) other than NOT NULL/CHECK, and its indexes that back none."""
    cursor.execute(
        "SELECT c.conname, pg_get_constraintdef(c.oid) FROM pg_constraint c JOIN pg_class t ON t.oid = c.conrelid "
        "WHERE t.relname = %s AND c.contype IN ('p', 'u', 'f') ORDER BY c.contype DESC, c.conname",
        [table],
    )
    constraints = cursor.fetchall()
    cursor.execute(
        "SELECT i.relname, pg_get_indexdef(i.oid) FROM pg_index x JOIN pg_class i ON i.oid = x.indexrelid "
        "JOIN pg_class t ON t.oid = x.indrelid WHERE t.relname = %s "
        "AND NOT EXISTS (SELECT 1 FROM pg_constraint c WHERE c.conindid = i.oid) ORDER BY i.relname",
        [table],
    )
    return constraints, cursor.fetchall()


def _months(cursor, table: str) -> list[datetime]:
    """Every month from the oldest row's through two months after the current one."""
    cursor.execute(f"SELECT date_trunc('month', MIN(hour) AT TIME ZONE 'UTC') FROM {table}")
    (oldest,) = cursor.fetchone()
    current = datetime.now(UTC).replace(day=1, hour=0, minute=0, second=0, microsecond=0)
    month = min(oldest.replace(tzinfo=UTC), current) if oldest else current
    last = current
    for _ in range(MONTHS_AHEAD):
        last = _month_after(last)
    months = []
    while month <= last:
        months.append(month)
        month = _month_after(month)
    return months


def _rebuild(schema_editor, table: str, *, partitioned: bool) -> None:
    old = f"{table[: 63 - len(ASIDE)]}{ASIDE}"
    sequence = f"{table}_id_seq"
    with schema_editor.connection.cursor() as cursor:
        last_id = _last_id(cursor, table)
        constraints, indexes = _definitions(cursor, table)
        cursor.execute(f"ALTER TABLE {table} RENAME TO {old}")
        _rename_indexes_aside(cursor, old)
        # The old column's sequence (identity or owned) goes with it; the new table gets one of the same name.
        cursor.execute(f"ALTER TABLE {old} ALTER COLUMN id DROP IDENTITY IF EXISTS")
        cursor.execute(f"ALTER TABLE {old} ALTER COLUMN id DROP DEFAULT")
        cursor.execute(f"DROP SEQUENCE IF EXISTS {sequence}")
        like = f"(LIKE {old} INCLUDING DEFAULTS INCLUDING CONSTRAINTS INCLUDING STORAGE)"
        if partitioned:
            cursor.execute(f"CREATE TABLE {table} {like} PARTITION BY RANGE (hour)")
            cursor.execute(f"CREATE TABLE {table}_default PARTITION OF {table} DEFAULT")
            for month in _months(cursor, old):
                low, high = (f"{moment:%Y-%m-%d} 00:00:00+00" for moment in (month, _month_after(month)))
                cursor.execute(
                    f"CREATE TABLE {table}_p{month:%Y_%m} PARTITION OF {table} FOR VALUES FROM ('{low}') TO ('{high}')"
                )
        else:
            cursor.execute(f"CREATE TABLE {table} {like}")
        cursor.execute(f"CREATE SEQUENCE {sequence} AS bigint START WITH {last_id + 1} OWNED BY {table}.id")
        cursor.execute(f"ALTER TABLE {table} ALTER COLUMN id SET DEFAULT nextval('{sequence}')")
        cursor.execute(f"INSERT INTO {table} SELECT * FROM {old}")
        for name, definition in constraints:
            if definition.startswith("PRIMARY KEY") or name == f"{table}_id_hour_uniq":
                continue
            cursor.execute(f'ALTER TABLE {table} ADD CONSTRAINT "{name}" {definition}')
        if partitioned:
            cursor.execute(f"ALTER TABLE {table} ADD CONSTRAINT {table}_id_hour_uniq UNIQUE (id, hour)")
        else:
            cursor.execute(f"ALTER TABLE {table} ADD CONSTRAINT {table}_pkey PRIMARY KEY (id)")
        for _name, definition in indexes:
            cursor.execute(
                definition.replace(f" ON {old} ", f" ON {table} ").replace(f" ON public.{old} ", f" ON {table} ")
            )
        cursor.execute(f"DROP TABLE {old}")
        cursor.execute(f"ANALYZE {table}")


def partition(apps, schema_editor) -> None:
    if schema_editor.connection.vendor != "postgresql":
        return
    for table in TABLES:
        _rebuild(schema_editor, table, partitioned=True)


def unpartition(apps, schema_editor) -> None:
    if schema_editor.connection.vendor != "postgresql":
        return
    for table in TABLES:
        _rebuild(schema_editor, table, partitioned=False)


class Migration(migrations.Migration):
    dependencies = [
        ("billing", "0011_finance_reads_teams_and_requests"),
    ]

    operations = [
        migrations.RunPython(partition, unpartition, elidable=False),
        migrations.CreateModel(
            name="HourlyRetention",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                (
                    "kept_from",
                    models.DateField(
                        help_text="First day (UTC) whose hourly rows are kept; totals before it never change."
                    ),
                ),
                ("updated_at", models.DateTimeField(auto_now=True)),
            ],
        ),
    ]
