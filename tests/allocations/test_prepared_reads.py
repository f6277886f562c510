"""The hot reads are prepared on PostgreSQL (allocations.prepared_cursors.prepared_cursor): planned once per connection,
still logged as queries, and read through Django's cursor wherever prepared statements are off."""

from decimal import Decimal

import pytest
from django.db import connection
from django.db.models import Q
from django.test.utils import CaptureQueriesContext

from allocations.compiled_reads import ID_STAND_IN, CompiledRead
from allocations.models import Team
from allocations.prepared_cursors import prepared_cursor
from tests.factories import TeamFactory

pytestmark = [pytest.mark.integration, pytest.mark.postgres, pytest.mark.django_db]

_TEAM = CompiledRead(Team, lambda pk: Team.objects.filter(pk=pk), stand_in=ID_STAND_IN)


def _prepared_statements() -> list[str]:
    with connection.cursor() as cursor:
        cursor.execute("SELECT statement FROM pg_prepared_statements")
        return [row[0] for row in cursor.fetchall()]


def _threshold() -> int:
    threshold = connection.settings_dict["OPTIONS"]["prepare_threshold"]
    assert isinstance(threshold, int), "the test settings keep prepared statements on (DB_PREPARE_THRESHOLD)"
    return threshold


def test_a_compiled_read_is_prepared_once_it_has_run_the_threshold_times_and_answers_the_same():
    teams = [TeamFactory(name=f"Team {n}") for n in range(3)]
    table = Team._meta.db_table
    before = [s for s in _prepared_statements() if table in s]
    answers = [_TEAM.first(team.pk) for team in teams * (_threshold() + 1)]
    prepared = [s for s in _prepared_statements() if table in s]
    assert len(prepared) == len(before) + 1, prepared
    assert "$1" in prepared[-1]  # bound on the server: the value is a parameter, not text in the statement
    # The runs after it was prepared answer as the ones before did, each with its own team.
    assert [t.name for t in answers] == [t.name for t in teams * (_threshold() + 1)]


def test_a_prepared_read_is_still_one_logged_query_with_its_values(django_assert_num_queries):
    team = TeamFactory()
    for _ in range(_threshold() + 1):
        _TEAM.first(team.pk)
    with django_assert_num_queries(1), CaptureQueriesContext(connection) as queries:
        assert _TEAM.first(team.pk) == team
    # Logged as Django logs its own queries: the SQL with the values in (debug pages, failing query budgets).
    assert queries[0]["sql"].startswith("SELECT") and f"= {team.pk}" in queries[0]["sql"]


def test_with_prepared_statements_off_the_read_goes_through_djangos_client_side_cursor(monkeypatch):
    options = dict(connection.settings_dict["OPTIONS"], prepare_threshold=None)
    monkeypatch.setitem(connection.settings_dict, "OPTIONS", options)
    with prepared_cursor(connection) as cursor, connection.cursor() as djangos:
        assert type(cursor.cursor) is type(djangos.cursor)  # Django's own cursor: nothing kept
    monkeypatch.undo()
    with prepared_cursor(connection) as cursor:
        from django.db.backends.postgresql.base import ServerBindingCursor

        assert isinstance(cursor.cursor, ServerBindingCursor)


def test_the_server_binding_cursor_is_kept_per_kind_of_timestamps_and_left_open_for_the_next_read():
    from datetime import datetime

    from allocations.prepared_cursors import DATETIME_TIMESTAMPS, ISO_UTC_TIMESTAMPS

    kinds = {"django": {}, "datetime": {"timestamps": DATETIME_TIMESTAMPS}, "iso": {"timestamps": ISO_UTC_TIMESTAMPS}}
    cursors, answers = {}, {}
    for name, kind in kinds.items():
        with prepared_cursor(connection, **kind) as cursor:
            cursor.execute("SELECT %s::timestamptz", ["2026-11-24 14:15:54.5+00"])
            answers[name] = cursor.fetchone()[0]
            cursors[name] = cursor.cursor
        with prepared_cursor(connection, **kind) as again:  # the block before closed its wrapper, not the cursor
            assert again.cursor is cursors[name]
            again.execute("SELECT %s::int * 2", [21])
            assert again.fetchall() == [(42,)]
    assert len({id(cursor) for cursor in cursors.values()}) == 3
    assert answers["iso"] == "2026-11-24T14:15:54.500000Z"
    assert answers["django"] == answers["datetime"] == datetime.fromisoformat("2026-11-24T14:15:54.5+00:00")


@pytest.mark.django_db(transaction=True)  # the connection is closed and opened again
def test_a_new_connection_gets_a_new_kept_cursor():
    team = TeamFactory()
    with prepared_cursor(connection) as cursor:
        first = cursor.cursor
    # As a request's end closes a connection past its CONN_MAX_AGE: the cursor went with the old connection.
    connection.close()
    assert _TEAM.first(team.pk) == team
    with prepared_cursor(connection) as cursor:
        assert cursor.cursor is not first and cursor.cursor.connection is connection.connection


def test_each_thread_reads_on_its_own_connections_cursor():
    import threading

    from django.db import connections

    with prepared_cursor(connection) as cursor:
        mine = cursor.cursor
    theirs = []

    def read() -> None:
        try:
            with prepared_cursor(connections["default"]) as cursor:
                cursor.execute("SELECT %s::int", [7])
                theirs.append((cursor.cursor, cursor.fetchone()[0]))
        finally:
            connections["default"].close()

    thread = threading.Thread(target=read)
    thread.start()
    thread.join()
    [(their_cursor, seven)] = theirs
    assert seven == 7 and their_cursor is not mine


def test_a_server_bound_read_in_a_failed_transaction_raises_djangos_error():
    from django.db import DatabaseError, transaction

    with pytest.raises(DatabaseError), transaction.atomic(), prepared_cursor(connection) as cursor:
        cursor.execute("SELECT 1 / %s", [0])
    with CaptureQueriesContext(connection) as queries, prepared_cursor(connection) as cursor:
        cursor.execute("SELECT %s::int + 1", [1])
        assert cursor.fetchone() == (2,)
    assert len(queries) == 1


def test_prepared_values_answers_as_the_queryset_and_is_prepared_once_it_has_run_the_threshold_times():
    from decimal import Decimal

    from django.db.models import Count, F, Value
    from django.db.models.functions import Concat

    from allocations.compiled_reads import prepared_values
    from allocations.models import GpuRequest
    from tests.factories import GpuRequestFactory

    team = TeamFactory()
    GpuRequestFactory(team=team, gpu_memory_gb=Decimal("12.5"), command=["python", "x.py"], spec={"a": [1, 2.5]})
    GpuRequestFactory(team=team, expires_at=None, purpose="100% sure")
    shapes = [
        GpuRequest.objects.filter(team=team).order_by("id").values("id", "name", "gpu_memory_gb", "expires_at"),
        GpuRequest.objects.filter(team=team, purpose__contains="%").values("purpose", "command", "spec"),
        GpuRequest.objects.filter(team=team)
        .order_by("-id")
        .values("team__slug")
        .annotate(label=Concat(F("name"), Value(" / ")), n=Count("id")),
        GpuRequest.objects.filter(team=team).order_by("id")[1:2].values("id"),
        GpuRequest.objects.none().values("id"),
    ]
    for queryset in shapes:
        assert prepared_values(queryset) == list(queryset)
    table = GpuRequest._meta.db_table
    for _ in range(_threshold() + 1):
        prepared_values(shapes[0])
    assert any(table in s and "expires_at" in s and "$1" in s for s in _prepared_statements())


# Constants of the SQL (a name with quotes and percent signs, a budget, a boolean) beside the one stand-in.
_TEAMS_LIKE = CompiledRead(
    Team,
    lambda pk: Team.objects.filter(
        Q(name="it's 100% %s") | Q(monthly_gpu_hour_budget__gte=Decimal("12.50"), namespace__isnull=False) | Q(pk=pk)
    ).order_by("pk"),
    stand_in=ID_STAND_IN,
)
_TEAMS_WAITING = CompiledRead(Team, lambda: Team.objects.filter(cost_center="CC-%%-x").order_by("pk"), stand_ins={})


def test_a_compiled_reads_constants_are_written_into_its_statement_and_only_the_stand_in_is_bound():
    quoted = TeamFactory(name="it's 100% %s")
    budgeted = TeamFactory(monthly_gpu_hour_budget=Decimal("12.50"))
    TeamFactory(monthly_gpu_hour_budget=Decimal("12.49"))
    picked, other = TeamFactory(), TeamFactory()
    for _ in range(_threshold() + 1):
        assert _TEAMS_LIKE.instances(picked.pk) == [quoted, budgeted, picked]
    assert _TEAMS_LIKE.instances(other.pk) == [quoted, budgeted, other]
    statement = next(s for s in _prepared_statements() if "12.50" in s)
    # The constants are text of the statement (quoted by psycopg); the team id is its one parameter.
    assert "'it''s 100% %s'" in statement and "$1" in statement and "$2" not in statement


def test_a_compiled_read_with_no_stand_in_is_a_statement_without_parameters_planned_once():
    waiting = TeamFactory(cost_center="CC-%%-x")
    TeamFactory(cost_center="CC-%-x")
    for _ in range(_threshold() + 3):
        assert _TEAMS_WAITING.instances() == [waiting]
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT generic_plans, custom_plans FROM pg_prepared_statements WHERE statement LIKE %s",
            ["%CC-\\%\\%-x%"],
        )
        [(generic, custom)] = cursor.fetchall()
    # No parameter: PostgreSQL plans it once and reuses that plan (a `status = $1` was planned on every run).
    assert custom == 0 and generic >= 3
