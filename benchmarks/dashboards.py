"""The cost dashboards page at scale: 50 teams, 12 months of hourly rollups, against a raw SUM over them.

Builds a year of rollups for ``--gpus`` GPUs (50 teams, three GPUs in four held), the daily and monthly usage
totals the ingest keeps, and closed monthly reports for the eleven months before the last; then renders
``/billing/dashboards/`` for the last month as a platform admin (five charts: the 12-month cost trend, allocation
against measured use, strategy mix, the pool heatmap by day, cost per request; plus the capacity forecast) and
prints its time as a ratio against a raw ``SELECT sum(sample_count)`` over the same year of rollups, measured in the
same run. Cold: the cache cleared before each render (closed months read from their reports); warm: closed months
from the cache. Each of ``--runs`` runs takes the best of ``--repeat``; ratios print as min/median/max.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/gpu_portal .venv/bin/python benchmarks/dashboards.py [--gpus 200]
"""

from __future__ import annotations

import argparse
import os
import sys
from datetime import UTC, date, datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.bench_cost_data import best, build, setup_django, spread
from benchmarks.bench_results import AT_MOST, Target, record

LAST = date(2026, 10, 1)  # the month shown; the eleven before it are closed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--gpus", type=int, default=200)
    parser.add_argument("--teams", type=int, default=50)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--runs", type=int, default=3, help="repetitions; ratios are printed as min/median/max")
    args = parser.parse_args()
    setup_django("dashboards")
    from django.contrib.auth.models import User
    from django.core.cache import cache
    from django.db import connection
    from django.test import Client
    from django.test.utils import setup_test_environment

    from gpucore.months import add_months

    setup_test_environment()
    first = add_months(LAST, -11)
    start = datetime(first.year, first.month, 1, tzinfo=UTC)
    end = datetime(add_months(LAST, 1).year, add_months(LAST, 1).month, 1, tzinfo=UTC)
    closed = [add_months(first, n) for n in range(11)]
    built = build(gpus=args.gpus, start=start, end=end, team_count=args.teams, closed_months=closed)
    print(
        f"database: {connection.vendor}; {os.cpu_count()} cores; {args.gpus} GPUs x 12 months of hourly rollups "
        f"({built['rollups']:,} rows), {args.teams} teams, 11 closed months; built in {built['seconds']:.1f} s "
        f"(usage totals for the year kept in {built['aggregate_seconds']:.1f} s)"
    )

    def raw_sum() -> object:
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT sum(sample_count) FROM billing_utilizationrollup WHERE hour >= %s AND hour < %s", [start, end]
            )
            return cursor.fetchone()

    client = Client()
    client.force_login(User.objects.get(username="bench"))

    def render() -> object:
        response = client.get("/billing/dashboards/", {"month": f"{LAST:%Y-%m}"})
        assert response.status_code == 200, response.status_code
        return response

    def render_cold() -> object:
        cache.clear()
        return render()

    render()
    raws, colds, warms = [], [], []
    for _ in range(args.runs):
        raw = best(raw_sum, args.repeat)
        raws.append(raw * 1000)
        colds.append(best(render_cold, args.repeat) / raw)
        render()
        warms.append(best(render, args.repeat) / raw)
    print(f"raw SELECT sum() over the year's rollups (ms, min/median/max): {spread(raws, '{:.1f}')}")
    print(f"dashboards page, cold cache / raw sum (target <= 5x):  {spread(colds)}")
    print(f"dashboards page, closed months cached / raw sum:       {spread(warms)}")
    raw_ms = f"raw sum {spread(raws, '{:.1f}')} ms"
    record("dashboards", "dashboards page, cold / raw SUM", colds, Target(AT_MOST, 5), detail=raw_ms)
    record("dashboards", "dashboards page, next view / raw SUM", warms, detail=raw_ms)
    connection.creation.destroy_test_db(connection.settings_dict["NAME"], verbosity=0)


if __name__ == "__main__":
    main()
