"""Migration 0012 turns the existing hourly tables, rows included, into tables partitioned by month on PostgreSQL,
keeping their constraints and indexes under the names Django knows; and back."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from tests.factories import ClusterFactory

pytestmark = [pytest.mark.integration, pytest.mark.postgres, pytest.mark.django_db(transaction=True)]
BEFORE = [("billing", "0011_finance_reads_teams_and_requests")]
TABLE = "billing_utilizationrollup"
JUNE = datetime(2025, 6, 1, tzinfo=UTC)


def _migrate(targets) -> None:
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(targets)


def _latest() -> list[tuple[str, str]]:
    executor = MigrationExecutor(connection)
    return [key for key in executor.loader.graph.leaf_nodes() if key[0] == "billing"]


def _catalog(table: str) -> tuple[str, set[str]]:
    with connection.cursor() as cursor:
        cursor.execute("SELECT relkind FROM pg_class WHERE relname = %s", [table])
        (kind,) = cursor.fetchone()
        cursor.execute(
            "SELECT i.relname FROM pg_index x JOIN pg_class i ON i.oid = x.indexrelid "
            "JOIN pg_class t ON t.oid = x.indrelid WHERE t.relname = %s",
            [table],
        )
        return kind, {name for (name,) in cursor.fetchall()}


def test_the_rollups_with_their_rows_become_partitioned_and_back() -> None:
    _migrate(BEFORE)
    try:
        cluster = ClusterFactory()
        with connection.cursor() as cursor:
            for offset in range(0, 24 * 70, 7):  # ten weeks: June, July and August 2025
                cursor.execute(
                    f"INSERT INTO {TABLE} (cluster_id, hour, gpu_uuid, mig_instance, namespace, pod, gpu_model_name, "  # noqa: S608
                    "mig_profile, hostname, sample_count, is_complete, pulled_at) "
                    "VALUES (%s, %s, 'GPU-1', '', '', '', 'H100', '', 'node', 60, true, now())",
                    [cluster.pk, JUNE + timedelta(hours=offset)],
                )
            cursor.execute(f"SELECT count(*), max(id) FROM {TABLE}")  # noqa: S608
            count, last_id = cursor.fetchone()
        kind, plain_indexes = _catalog(TABLE)
        assert kind == "r"

        _migrate(_latest())

        kind, indexes = _catalog(TABLE)
        assert kind == "p"
        # Every index and unique constraint Django created is there under its name, plus (id, hour).
        assert indexes == (plain_indexes - {f"{TABLE}_pkey"}) | {f"{TABLE}_id_hour_uniq"}
        with connection.cursor() as cursor:
            cursor.execute(f"SELECT tableoid::regclass::text, count(*) FROM {TABLE} GROUP BY 1 ORDER BY 1")  # noqa: S608
            by_partition = dict(cursor.fetchall())
            assert sum(by_partition.values()) == count
            assert set(by_partition) == {f"{TABLE}_p2025_06", f"{TABLE}_p2025_07", f"{TABLE}_p2025_08"}
            # New rows take ids after the old ones; the natural key still rejects a second row of the same owner.
            cursor.execute(
                f"INSERT INTO {TABLE} (cluster_id, hour, gpu_uuid, mig_instance, namespace, pod, gpu_model_name, "  # noqa: S608
                "mig_profile, hostname, sample_count, is_complete, pulled_at) "
                "VALUES (%s, %s, 'GPU-1', '', '', '', 'H100', '', 'node', 60, true, now()) "
                "ON CONFLICT (cluster_id, hour, gpu_uuid, mig_instance, namespace, pod) DO NOTHING RETURNING id",
                [cluster.pk, JUNE + timedelta(days=200)],
            )
            assert cursor.fetchone()[0] > last_id
            cursor.execute(
                f"INSERT INTO {TABLE} (cluster_id, hour, gpu_uuid, mig_instance, namespace, pod, gpu_model_name, "  # noqa: S608
                "mig_profile, hostname, sample_count, is_complete, pulled_at) "
                "VALUES (%s, %s, 'GPU-1', '', '', '', 'H100', '', 'node', 60, true, now()) "
                "ON CONFLICT (cluster_id, hour, gpu_uuid, mig_instance, namespace, pod) DO NOTHING RETURNING id",
                [cluster.pk, JUNE],
            )
            assert cursor.fetchone() is None

        _migrate(BEFORE)

        kind, indexes = _catalog(TABLE)
        assert kind == "r" and indexes == plain_indexes
        with connection.cursor() as cursor:
            cursor.execute(f"SELECT count(*) FROM {TABLE}")  # noqa: S608
            assert cursor.fetchone()[0] == count + 1
    finally:
        _migrate(_latest())
