"""billing.metering.rollup_store: the COPY-and-upsert write of a pull's rollups and its ingest log.

Runs on the test database, whichever it is (PostgreSQL through COPY in CI; batched inserts on SQLite).
"""

from __future__ import annotations

import threading
from datetime import UTC, datetime, timedelta

import psycopg
import pytest
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext

from billing.metering.rollup_store import ROLLUP_COLUMNS, ingest_hours_log, rollups_replace
from billing.models import IngestStatus, UtilizationIngestHour, UtilizationRollup
from tests.factories import ClusterFactory, TeamFactory
from tests.integration.celery_workers import worker_database_url

pytestmark = pytest.mark.django_db

HOUR = datetime(2026, 10, 5, 10, tzinfo=UTC)
NOW = datetime(2026, 10, 6, tzinfo=UTC)


def row(cluster_id: int, hour: datetime, pod: str, samples: int, team_id: int | None = None) -> tuple:
    return (
        cluster_id, hour, "GPU-1", "", "team-a" if pod else "", pod, team_id, None, "NVIDIA H100 80GB HBM3", "",
        "node-1", 0, samples, 50.0, 90.0, 1024.0, 2048.0, 0.3, True, NOW,
    )  # fmt: skip


def replace(cluster_id: int, rows: list[tuple], hours: int = 2) -> None:
    with transaction.atomic():
        rollups_replace(cluster_id=cluster_id, first_hour=HOUR, last_hour=HOUR + timedelta(hours=hours - 1), rows=rows)


def test_a_replace_writes_the_rows_and_a_second_read_replaces_them() -> None:
    cluster, team = ClusterFactory(), TeamFactory()
    later = HOUR + timedelta(hours=1)
    replace(
        cluster.pk,
        [row(cluster.pk, HOUR, "gpr-1", 20, team.pk), row(cluster.pk, HOUR, "", 40), row(cluster.pk, later, "", 60)],
    )
    stored = UtilizationRollup.objects.filter(cluster=cluster)
    assert sorted(stored.values_list("hour", "pod", "sample_count", "team_id")) == [
        (HOUR, "", 40, None),
        (HOUR, "gpr-1", 20, team.pk),
        (later, "", 60, None),
    ]
    first = stored.get(pod="gpr-1")
    assert (first.energy_kwh, first.is_complete, first.pulled_at, first.gpu_index) == (0.3, True, NOW, 0)
    stored.filter(hour=HOUR, pod="").update(max_temperature_c=70.0, memory_pressure_minutes=3)

    # The pod's series is gone on the second read and the idle one holds the hour: one row for it, updated.
    replace(cluster.pk, [row(cluster.pk, HOUR, "", 60), row(cluster.pk, later, "", 60)])
    assert sorted(stored.values_list("hour", "pod", "sample_count")) == [(HOUR, "", 60), (later, "", 60)]
    kept = stored.get(hour=HOUR)
    assert (kept.max_temperature_c, kept.memory_pressure_minutes) == (None, None)  # the health pull refills them

    # Hours outside the range are not touched; the same read again changes nothing.
    replace(cluster.pk, [row(cluster.pk, HOUR, "", 60)], hours=1)
    replace(cluster.pk, [row(cluster.pk, HOUR, "", 60)], hours=1)
    assert stored.count() == 2


def _stagings(queries: CaptureQueriesContext) -> int:
    return sum(query["sql"].startswith("CREATE TEMPORARY TABLE") for query in queries.captured_queries)


def test_hours_never_read_are_copied_straight_in_and_hours_read_before_are_replaced() -> None:
    cluster, team = ClusterFactory(), TeamFactory()
    later, last = HOUR + timedelta(hours=1), HOUR + timedelta(hours=2)
    with CaptureQueriesContext(connection) as fresh:
        replace(cluster.pk, [row(cluster.pk, HOUR, "gpr-1", 20, team.pk), row(cluster.pk, HOUR, "", 40)], hours=1)
    # A pull's next read: the first hour again (its pod gone, the idle share grown), and two hours never read.
    with CaptureQueriesContext(connection) as mixed:
        replace(
            cluster.pk,
            [row(cluster.pk, HOUR, "", 60), row(cluster.pk, later, "gpr-2", 30), row(cluster.pk, last, "", 60)],
            hours=3,
        )
    stored = UtilizationRollup.objects.filter(cluster=cluster)
    assert sorted(stored.values_list("hour", "pod", "sample_count")) == [
        (HOUR, "", 60),
        (later, "gpr-2", 30),
        (last, "", 60),
    ]
    assert _stagings(mixed) == 1  # the hour read before, once: the others went straight in without a conflict
    assert _stagings(fresh) == (0 if connection.vendor == "postgresql" else 1)  # SQLite stages every hour


@pytest.mark.django_db(transaction=True)
def test_rows_another_writer_puts_into_an_hour_found_empty_are_replaced_not_doubled() -> None:
    if connection.vendor != "postgresql":
        pytest.skip("the straight COPY is PostgreSQL's; SQLite stages every hour")
    cluster = ClusterFactory()
    ours = [row(cluster.pk, HOUR, "gpr-1", 20), row(cluster.pk, HOUR, "", 40)]
    table, columns = UtilizationRollup._meta.db_table, ", ".join(ROLLUP_COLUMNS)
    with psycopg.connect(worker_database_url()) as other:
        # The other writer's row of the same owner and hour, not yet committed: our read finds the hour empty, and
        # our COPY waits on the row's key until the other commits.
        stale = (*row(cluster.pk, HOUR, "gpr-1", 5)[:-1], NOW - timedelta(days=1))
        marks = ", ".join(["%s"] * len(ROLLUP_COLUMNS))
        other.execute(f"INSERT INTO {table} ({columns}) VALUES ({marks})", stale)  # noqa: S608 (our own names)
        commit = threading.Timer(0.5, other.commit)
        commit.start()
        try:
            replace(cluster.pk, ours, hours=1)
        finally:
            commit.join()
    stored = UtilizationRollup.objects.filter(cluster=cluster)
    assert sorted(stored.values_list("pod", "sample_count", "pulled_at")) == [("", 40, NOW), ("gpr-1", 20, NOW)]


def test_the_ingest_log_counts_attempts_and_keeps_an_hour_read_before() -> None:
    cluster = ClusterFactory()
    other = HOUR + timedelta(hours=1)
    with transaction.atomic():
        ingest_hours_log(cluster_id=cluster.pk, entries=[(HOUR, IngestStatus.COMPLETE, 7, "")], now=NOW)
    with transaction.atomic():
        ingest_hours_log(
            cluster_id=cluster.pk,
            entries=[(HOUR, IngestStatus.FAILED, 0, "down"), (other, IngestStatus.FAILED, 0, "down")],
            now=NOW + timedelta(hours=1),
        )
    log = {e.hour: e for e in UtilizationIngestHour.objects.filter(cluster=cluster)}
    assert (log[HOUR].status, log[HOUR].rows, log[HOUR].attempts, log[HOUR].error) == ("complete", 7, 2, "down")
    assert log[HOUR].updated_at == NOW
    assert (log[other].status, log[other].attempts, log[other].updated_at) == ("failed", 1, NOW + timedelta(hours=1))
    with transaction.atomic():
        ingest_hours_log(cluster_id=cluster.pk, entries=[(other, IngestStatus.PARTIAL, 3, "scrapes missing")], now=NOW)
    again = UtilizationIngestHour.objects.get(cluster=cluster, hour=other)
    assert (again.status, again.rows, again.attempts, again.error) == ("partial", 3, 2, "scrapes missing")
