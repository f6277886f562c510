"""Every benchmark, one after the other, then one summary table of every figure against its target (``make
benchmarks``).

Each benchmark prints its own figures, each a ratio against a baseline measured in the same run (min/median/max of
its runs), and reports its target rows (``bench_results.record``) into ``var/bench-results.jsonl``; the query
budgets are the test that holds them (``tests/portal/test_query_budgets.py``). A benchmark that fails or runs past
its time limit shows as ERROR. ``--quick`` runs each on a small data set, once: a smoke run that proves the harness,
not a measurement. ``--strict`` exits non-zero on a FAIL or ERROR (CI does not run benchmarks).

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/gpu_portal .venv/bin/python benchmarks/run_all.py [--quick]
        [--strict] [--only NAME]
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.bench_database import postgres_url  # noqa: E402
from benchmarks.bench_results import RESULTS_ENV, read_rows, record, table  # noqa: E402

RESULTS = ROOT / "var" / "bench-results.jsonl"


@dataclass(frozen=True)
class Benchmark:
    script: str
    full: tuple[str, ...] = ()
    quick: tuple[str, ...] = ()
    limit: int = 600  # seconds
    needs: tuple[str, ...] = ()  # executables


BENCHMARKS = [
    Benchmark(
        "pages_vs_baseline.py",
        quick=("--runs", "1", "--seconds", "0.5", "--min-requests", "8", "--warm", "8", "--extra-requests", "500"),
        limit=900,
    ),
    Benchmark("recommend.py", quick=("--profiles", "500", "--runs", "1")),
    Benchmark("list_scaling.py", quick=("--sizes", "1000,3000", "--requests", "5", "--runs", "1")),
    Benchmark("dashboards.py", quick=("--gpus", "10", "--runs", "1", "--repeat", "1")),
    Benchmark("chargeback.py", quick=("--gpus", "50", "--days", "3", "--runs", "1", "--repeat", "1")),
    # The write is what is timed; reading a day of 1,000 GPUs from Prometheus first takes minutes (run ingest.py
    # alone for it).
    Benchmark("ingest.py", full=("--no-prometheus",), quick=("--no-prometheus", "--gpus", "50", "--repeat", "1")),
    Benchmark("page_weight.py", quick=("--runs", "1"), needs=("chromium",)),
    Benchmark("fleet_pages.py", quick=("--gpus", "50", "--runs", "1", "--repeat", "1")),
    Benchmark("month_curves.py", quick=("--sizes", "500", "--repeat", "1")),
    Benchmark("mig_planning.py", quick=("--demands", "5", "--max-gpus", "50")),
    # Building 10,000 GPUs' months of rollups alone takes many minutes on a small machine.
    Benchmark("fleet_scale.py", quick=("--quick",), limit=3600),
    # Generating and loading 10,000 GPUs' hours into Prometheus takes minutes before the pull is timed; a subquery
    # run at 10,000 GPUs another ten.
    Benchmark(
        "fleet_pull.py",
        full=("--subquery-repeat", "1"),
        quick=("--gpus", "100", "--hours", "2", "--repeat", "1"),
        limit=3600,
        needs=("prometheus", "promtool"),
    ),
]


def run(command: list[str], limit: int, env: dict[str, str]) -> int:
    try:
        return subprocess.run(command, cwd=ROOT, env=env, timeout=limit, check=False).returncode
    except subprocess.TimeoutExpired:
        print(f"-- stopped after {limit} s", flush=True)
        return 124


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="a smoke run: small data, one run each")
    parser.add_argument("--strict", action="store_true", help="exit non-zero on a FAIL or ERROR")
    parser.add_argument("--only", default="", help="only the benchmarks whose script names contain this")
    args = parser.parse_args()
    if postgres_url() is None:
        sys.exit(
            "make benchmarks needs DATABASE_URL naming a PostgreSQL database (benchmarks create their own beside it)"
        )
    RESULTS.parent.mkdir(exist_ok=True)
    RESULTS.unlink(missing_ok=True)
    env = {**os.environ, RESULTS_ENV: str(RESULTS)}
    durations = []
    for bench in BENCHMARKS:
        if args.only not in bench.script:
            continue
        missing = [name for name in bench.needs if shutil.which(name) is None]
        if missing:
            record(bench.script.removesuffix(".py"), f"needs {', '.join(missing)}", skipped=True)
            continue
        print(f"\n== {bench.script}", flush=True)
        before = len(read_rows(str(RESULTS))) if RESULTS.exists() else 0
        started = time.monotonic()
        command = [
            sys.executable,
            str(ROOT / "benchmarks" / bench.script),
            *(bench.quick if args.quick else bench.full),
        ]
        code = run(command, bench.limit, env)
        durations.append(f"{bench.script} {time.monotonic() - started:.0f} s")
        after = len(read_rows(str(RESULTS))) if RESULTS.exists() else 0
        if code != 0 or after == before:
            record(bench.script.removesuffix(".py"), f"exited with status {code}" if code else "no figure reported")
    if args.only in "query_budgets":
        print("\n== tests/portal/test_query_budgets.py", flush=True)
        started = time.monotonic()
        code = run(
            [sys.executable, "-m", "pytest", "-p", "no:xdist", "-q", "tests/portal/test_query_budgets.py"], 600, env
        )
        durations.append(f"query budgets {time.monotonic() - started:.0f} s")
        record(
            "query_budgets",
            "SQL queries of every page within budget, 1 = 100 rows",
            passed=code == 0,
            detail="tests/portal/test_query_budgets.py",
        )
    rows = read_rows(str(RESULTS))
    print(
        f"\n== summary ({'QUICK smoke run, not a measurement; ' if args.quick else ''}{os.cpu_count()} CPU cores; "
        "ratios min/median/max of the runs, verdict on the median)"
    )
    print(table(rows))
    print("time: " + ", ".join(durations))
    if args.strict and any(row.verdict in ("FAIL", "ERROR") for row in rows):
        sys.exit(1)


if __name__ == "__main__":
    main()
