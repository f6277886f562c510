"""Chargeback at scale: a month of 1,000 GPUs (hourly rollups, 30 days), 50 teams, against a raw SUM.

Prints the time to compute every team's chargeback for the month (``billing.costs.chargeback.month_chargeback``:
the requests' held spans, their measured use from the monthly usage totals the ingest keeps, price books, capacity
and the pure arithmetic) as a ratio against a raw ``SELECT sum(sample_count)`` over the same month of the same
rollup table, measured in the same run; each of ``--runs`` runs takes the best of ``--repeat`` calls of each, and
the ratio is printed as min/median/max over the runs. Also prints what keeping the usage totals cost once for the
month (``refresh_usage_aggregates``, the ingest's step after a write). No assertion on time.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/gpu_portal .venv/bin/python benchmarks/chargeback.py [--gpus 1000]
"""

from __future__ import annotations

import argparse
import os
import sys
from datetime import UTC, date, datetime, timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.bench_cost_data import best, build, setup_django, spread
from benchmarks.bench_results import AT_MOST, Target, record

MONTH = date(2026, 10, 1)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--gpus", type=int, default=1000)
    parser.add_argument("--days", type=int, default=30)
    parser.add_argument("--teams", type=int, default=50)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--runs", type=int, default=3, help="repetitions; the ratio is printed as min/median/max")
    args = parser.parse_args()
    setup_django("chargeback")
    from django.db import connection

    from billing.costs.chargeback import month_chargeback

    start = datetime(MONTH.year, MONTH.month, 1, tzinfo=UTC)
    end = start + timedelta(days=args.days)
    built = build(gpus=args.gpus, start=start, end=end, team_count=args.teams, closed_months=[])
    print(
        f"database: {connection.vendor}; {os.cpu_count()} cores; {args.gpus} GPUs x {args.days} days of hourly "
        f"rollups ({built['rollups']:,} rows), {args.teams} teams, built in {built['seconds']:.1f} s; "
        f"usage totals for the month kept in {built['aggregate_seconds'] * 1000:.0f} ms"
    )
    now = end + timedelta(days=1)

    def raw_sum() -> object:
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT sum(sample_count) FROM billing_utilizationrollup WHERE hour >= %s AND hour < %s", [start, end]
            )
            return cursor.fetchone()

    def chargeback() -> object:
        return month_chargeback(month=MONTH, now=now)

    result = chargeback()
    teams_charged = sum(1 for t in result.teams.values() if t.lines)
    raws, charges, ratios = [], [], []
    for _ in range(args.runs):
        raw = best(raw_sum, args.repeat)
        charge = best(chargeback, args.repeat)
        raws.append(raw * 1000)
        charges.append(charge * 1000)
        ratios.append(charge / raw)
    print(f"raw SELECT sum() over the month's rollups (ms, min/median/max): {spread(raws, '{:.1f}')}")
    print(f"every team's chargeback, {teams_charged} teams (ms):           {spread(charges, '{:.1f}')}")
    print(f"chargeback / raw sum (target <= 2x):                    {spread(ratios)}")
    record(
        "chargeback",
        f"every team's chargeback / raw SUM ({args.gpus} GPUs)",
        ratios,
        Target(AT_MOST, 2),
        detail=f"{spread(charges, '{:.0f}')} ms",
    )
    connection.creation.destroy_test_db(connection.settings_dict["NAME"], verbosity=0)


if __name__ == "__main__":
    main()
