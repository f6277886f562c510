"""A 200,000-line usage file through ``manage.py import_usage`` on PostgreSQL: a large operator file, good or bad.

A bad line near the end is named with its field, and nothing of the file is written (row counts equal before and
after); a good file imports whole. Peak Python memory of each import (tracemalloc) is printed; the bound asserted
is a memory bound, far under what holding the file's rows as model objects would take.
"""

from __future__ import annotations

import time
import tracemalloc
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from io import StringIO
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command, load_command_class
from django.core.management.base import CommandError

pytestmark = [pytest.mark.integration, pytest.mark.postgres, pytest.mark.django_db]

ROWS = 200_000
LABELS = 1_000  # requests per file; each holds one GPU for 200 consecutive 5-minute spans
HEADER = "team,request,gpu_model,strategy,resource_name,quantity,time_slice_replicas,start,end,avg_utilization_pct\n"
# Python memory an import may take at its peak, whatever the length of the file: rows are streamed, never held.
PEAK_BOUND_MB = 32


def write_usage(path: Path, *, base: datetime, edit: Callable[[int, list[str]], None] | None = None) -> None:
    """ROWS rows without overlaps; ``edit(line, fields)`` may spoil the row of a file line."""
    with path.open("w") as handle:
        handle.write(HEADER)
        for i in range(ROWS):
            start = base + timedelta(minutes=5 * (i // LABELS))
            fields = [
                "vision" if i % 2 else "nlp",
                f"old-{i % LABELS}",
                "H100-80GB",
                "dedicated",
                "nvidia.com/gpu",
                "1",
                "",
                f"{start:%Y-%m-%dT%H:%M:%SZ}",
                f"{start + timedelta(minutes=5):%Y-%m-%dT%H:%M:%SZ}",
                "42.5",
            ]
            if edit is not None:
                edit(i + 2, fields)  # file line: the header is line 1
            handle.write(",".join(fields) + "\n")


def measured(call: Callable[[], Any]) -> tuple[Any, float, str]:
    """``call()``'s result (or the exception it raised), its peak traced Python memory in MB, and its times."""
    tracemalloc.start()
    started, cpu = time.perf_counter(), time.process_time()
    try:
        outcome: Any = call()
    except Exception as exc:
        outcome = exc
    finally:
        # This process's CPU beside the wall clock: the database's work and a busy machine are in the second only.
        seconds = f"{time.process_time() - cpu:.1f} s CPU, {time.perf_counter() - started:.1f} s wall"
        peak = tracemalloc.get_traced_memory()[1] / 2**20
        tracemalloc.stop()
    return outcome, peak, seconds


@pytest.fixture
def base(demo_org) -> datetime:
    # Load the command (and what it imports) first: module code is no part of an import's memory.
    load_command_class("billing", "import_usage")
    # Two days back: past (no future rows), and in no closed month (demo_org closes none).
    return datetime.now(UTC).replace(minute=0, second=0, microsecond=0) - timedelta(days=2)


def test_a_bad_line_near_the_end_of_200000_is_named_and_nothing_is_written(tmp_path: Path, base: datetime) -> None:
    from billing.models import ImportedUsage

    first, first_end = (f"{at:%Y-%m-%dT%H:%M:%SZ}" for at in (base, base + timedelta(minutes=5)))

    def spoil(line: int, fields: list[str]) -> None:
        if line == ROWS - 5:
            fields[8] = first  # end before start
        if line == ROWS:
            fields[:2], fields[7:9] = ["nlp", "old-0"], [first, first_end]  # line 2 again

    path = tmp_path / "usage.csv"
    write_usage(path, base=base, edit=spoil)
    before = ImportedUsage.objects.count()
    outcome, peak, seconds = measured(lambda: call_command("import_usage", str(path), stdout=StringIO()))
    after = ImportedUsage.objects.count()
    print(f"\n{ROWS:,}-line file with 2 bad lines: refused in {seconds}, peak {peak:.1f} MB; rows {before} -> {after}")
    assert isinstance(outcome, CommandError), outcome
    message = str(outcome)
    assert f"line {ROWS - 5}: end: must be after start." in message
    assert f"line {ROWS}: request: " in message and "overlaps line 2 " in message
    assert after == before
    assert peak < PEAK_BOUND_MB


def test_a_good_file_of_200000_lines_imports_whole(tmp_path: Path, base: datetime) -> None:
    from billing.models import ImportedUsage

    path = tmp_path / "usage.csv"
    write_usage(path, base=base)
    out = StringIO()
    before = ImportedUsage.objects.count()
    outcome, peak, seconds = measured(lambda: call_command("import_usage", str(path), stdout=out))
    after = ImportedUsage.objects.count()
    print(f"\n{ROWS:,}-line file imported in {seconds}, peak {peak:.1f} MB; rows {before} -> {after}")
    assert outcome is None, outcome
    assert f"Imported {ROWS} rows" in out.getvalue()
    assert after == before + ROWS
    last = ImportedUsage.objects.get(line_number=ROWS + 1)
    assert (last.request_label, last.source_file, last.quantity) == (f"old-{(ROWS - 1) % LABELS}", "usage.csv", 1)
    assert peak < PEAK_BOUND_MB
