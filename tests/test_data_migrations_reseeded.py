"""The flushed-database fixture (tests/conftest.py) replays every data migration: a new one must be added to it."""

from __future__ import annotations

from django.db.migrations import RunPython
from django.db.migrations.loader import MigrationLoader

from tests.conftest import _DATA_MIGRATIONS, _ROW_MOVES


def test_every_data_migration_is_replayed_after_a_flush() -> None:
    loader = MigrationLoader(None, ignore_no_migrations=True)  # read from disk, no database
    ours = {"allocations", "audit", "billing", "portal"}  # the project's packages with migrations
    found = {}
    for migration in loader.disk_migrations.values():
        if type(migration).__module__.split(".")[0] not in ours:
            continue
        functions = tuple(op.code.__name__ for op in migration.operations if isinstance(op, RunPython))
        if functions and type(migration).__module__ not in _ROW_MOVES:
            found[type(migration).__module__] = functions
    assert found == dict(_DATA_MIGRATIONS)
