"""The fleet's pages at 1,000 GPUs with a busy last week: platform utilization and the cost dashboards' this month.

The dashboards benchmark (``dashboards.py``) shows a past month, so its capacity forecast (the last 7 days of
rollups before now) reads nothing; production always has a last week. Here every GPU has an hourly rollup for each
of the 8 days before the current hour (three GPUs in four held by a request, 50 teams, one H100 pool), and two pages
are rendered as a platform admin:

- ``/billing/utilization/``: the fleet's last 7 days (usage per cluster, unallocated use, the alerts of every device
  hour, the 30-day capacity forecast of every pool);
- ``/billing/dashboards/`` for this month (the five charts and the capacity forecast).

Each is printed as a ratio against a raw ``SELECT sum(sample_count)`` over the same 7 days of rollups, measured in the
same run (the dashboards' yardstick: <= 5x; no target here). Cold: the shared cache cleared before each render (a
rollup written since the last view does the same: it replaces the rollups' version token); warm: as the next
approver to open the page finds it. Each of ``--runs`` runs takes the best of ``--repeat``; ratios print as
min/median/max. No assertion on time.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/gpu_portal .venv/bin/python benchmarks/fleet_pages.py [--gpus 1000]
"""

from __future__ import annotations

import argparse
import os
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.bench_cost_data import best, build, setup_django, spread
from benchmarks.bench_results import record

PAGES = {
    "platform utilization, last 7 days": ("/billing/utilization/", {}),
    "cost dashboards, this month": ("/billing/dashboards/", {}),
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--gpus", type=int, default=1000)
    parser.add_argument("--teams", type=int, default=50)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--runs", type=int, default=3, help="repetitions; ratios are printed as min/median/max")
    args = parser.parse_args()
    setup_django("fleet_pages")
    from django.contrib.auth.models import User
    from django.core.cache import cache
    from django.db import connection
    from django.test import Client
    from django.test.utils import setup_test_environment

    setup_test_environment()
    end = datetime.now(UTC).replace(minute=0, second=0, microsecond=0)
    start = end - timedelta(days=8)
    built = build(gpus=args.gpus, start=start, end=end, team_count=args.teams, closed_months=[])
    print(
        f"database: {connection.vendor}; {os.cpu_count()} cores; {args.gpus} GPUs x the 8 days before this hour "
        f"({built['rollups']:,} hourly rollups), {args.teams} teams; built in {built['seconds']:.1f} s"
    )
    week = end - timedelta(days=7)

    def raw_sum() -> object:
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT sum(sample_count) FROM billing_utilizationrollup WHERE hour >= %s AND hour < %s", [week, end]
            )
            return cursor.fetchone()

    client = Client()
    client.force_login(User.objects.get(username="bench"))

    def render(path: str, params: dict[str, str]) -> object:
        response = client.get(path, params)
        assert response.status_code == 200, (path, response.status_code)
        return response

    def render_cold(path: str, params: dict[str, str]) -> object:
        cache.clear()
        return render(path, params)

    for path, params in PAGES.values():
        render(path, params)
    raws: list[float] = []
    ratios: dict[str, dict[str, list[float]]] = {name: {"cold": [], "warm": [], "ms": []} for name in PAGES}
    for _ in range(args.runs):
        raw = best(raw_sum, args.repeat)
        raws.append(raw * 1000)
        for name, (path, params) in PAGES.items():
            cold = best(lambda p=path, q=params: render_cold(p, q), args.repeat)
            render(path, params)
            warm = best(lambda p=path, q=params: render(p, q), args.repeat)
            ratios[name]["cold"].append(cold / raw)
            ratios[name]["warm"].append(warm / raw)
            ratios[name]["ms"].append(cold * 1000)
    print(f"raw SELECT sum() over the week's rollups (ms, min/median/max): {spread(raws, '{:.1f}')}")
    for name, figures in ratios.items():
        print(
            f"{name:36} cold {spread(figures['ms'], '{:.0f}')} ms; cold / raw sum {spread(figures['cold'])}; "
            f"warm / raw sum {spread(figures['warm'])}"
        )
        record(
            "fleet_pages", f"{name}, cold / raw SUM", figures["cold"], detail=f"{spread(figures['ms'], '{:.0f}')} ms"
        )
    print("yardstick (the dashboards' target; none here): <= 5x the raw sum")
    connection.creation.destroy_test_db(connection.settings_dict["NAME"], verbosity=0)


if __name__ == "__main__":
    main()
