"""Fleets of 1,000 and 10,000 GPUs with months of hourly history: dashboards and the month close against raw SUMs
over the stored totals, the 10,000-GPU figures against the 1,000-GPU ones, and table sizes per GPU-year.

For each fleet size (``--gpus``, default 1000,10000) a database of its own gets ``--months`` months of hourly
rollups for every GPU (written by the database itself, ``INSERT .. SELECT`` over ``generate_series``, not the ORM;
into the month partitions on PostgreSQL), the daily and monthly totals the ingest keeps, 50 teams and closed reports
for every month but the last two. Then, each a ratio against a baseline measured in the same run (min/median/max of
``--runs`` runs, each the best of ``--repeat``):

- the cost dashboards (1, 3 and 12 months; cold cache) against a raw ``SELECT sum(sample_count)`` over the daily and
  monthly totals of the same range (target: at most 5x);
- closing a month (rolled back each time) against a raw SUM over that month's totals;
- at the largest fleet, each dashboards range against the same range at the smallest (flat: at most 1.5x);
- the hourly tables' size (with indexes) per GPU-year;
- the pricing of one past day (``billing.price_past_days``, run once after the build) and the peak Python memory
  (``tracemalloc``) of a cold 12-month dashboards render;
- the floor: the same dashboards views on an empty fleet (the teams, pool and prices, no requests or history,
  built first in a database of its own) against each fleet's raw SUM, which is what the page's figures, template
  and queries cost with nothing to show.

Not measured here: the pull against its interval (``benchmarks/fleet_pull.py``, a real Prometheus) and the request
pages at 100,000 requests (``benchmarks/list_scaling.py``). ``--quick`` is a smoke run (50 and 100 GPUs, 2 months).

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/gpu_portal .venv/bin/python benchmarks/fleet_scale.py [--quick]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import tracemalloc
from datetime import UTC, date, datetime, timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.bench_cost_data import best, build, setup_django, spread
from benchmarks.bench_results import AT_MOST, Target, record

RANGES = (1, 3, 12)  # months shown by the dashboards, ending with the last month built


def _month_start(month: date) -> datetime:
    return datetime(month.year, month.month, 1, tzinfo=UTC)


def _fleet(
    gpus: int,
    months: int,
    teams: int,
    last: date,
    runs: int,
    repeat: int,
    days: int = 0,
    floor: dict[str, list[float]] | None = None,
) -> dict[str, list[float]]:
    """Build one fleet in a fresh database and measure it; returns each figure's values (one per run).

    ``floor`` (the empty fleet's page seconds per range and run) gives the floor rows against this fleet's raw SUM;
    with ``gpus`` 0 only the page seconds are measured."""
    from django.contrib.auth.models import User
    from django.core.cache import cache
    from django.db import connection, transaction
    from django.test import Client

    from billing.costs.day_charges import day_charges_catch_up
    from billing.costs.services import monthly_reports_close
    from billing.metering.partitions import HOURLY_TABLES, ensure_month_partitions
    from billing.utilization.stored_forecast import capacity_forecast_store
    from gpucore.months import add_months

    first = add_months(last, -(months - 1))
    for offset in range(months + 1):  # the months built, and the next: partitions exist before the rows come
        ensure_month_partitions(now=_month_start(add_months(first, offset)), months_ahead=0)
    end = _month_start(add_months(last, 1))
    # --days: only the last days of the last month hold rollups (a quicker build; the page ranges stay the same).
    start = end - timedelta(days=days) if days else _month_start(first)
    started = time.perf_counter()
    built = build(
        gpus=gpus,
        start=start,
        end=end,
        team_count=teams,
        # Every month but the last two closed: the one before the last is what the month close measures.
        closed_months=[add_months(first, n) for n in range(months - 2)],
    )
    seconds = time.perf_counter() - started
    print(
        f"  {gpus:,} GPUs x {(end - start).days} days: {built['rollups']:,} rollups, built in {seconds:.0f} s "
        f"(totals kept in {built['aggregate_seconds']:.0f} s)",
        flush=True,
    )
    started = time.perf_counter()
    priced = day_charges_catch_up()  # as the hourly billing.price_past_days task does, every past day once
    seconds = time.perf_counter() - started
    print(f"  {priced['stored']} past days priced and stored in {seconds:.0f} s", flush=True)
    capacity_forecast_store()  # as the hourly billing.store_capacity_forecast task does
    client = Client()
    client.force_login(User.objects.get(username="bench"))
    figures: dict[str, list[float]] = {"past day priced and stored, seconds": [seconds / max(priced["stored"], 1)]}

    def raw_totals(first_month: date, last_month: date) -> None:
        # What the dashboards show, as one SUM over the stored totals (whole months: monthly; the last: daily).
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT (SELECT sum(sample_count) FROM billing_monthlyusage WHERE month >= %s AND month < %s), "
                "(SELECT sum(sample_count) FROM billing_dailyusage WHERE day >= %s AND day < %s)",
                [first_month, last_month, last_month, add_months(last_month, 1)],
            )
            cursor.fetchone()

    for span in (n for n in RANGES if n <= months or n == 12):
        span_first = add_months(last, -(span - 1))
        params = {"period": "custom", "from": f"{span_first:%Y-%m}", "to": f"{last:%Y-%m}"}

        def render_cold(params: dict[str, str] = params) -> None:
            cache.clear()
            assert client.get("/billing/dashboards/", params).status_code == 200

        render_cold()
        for run in range(runs):
            raw = best(lambda span_first=span_first: raw_totals(span_first, last), repeat)
            page = best(render_cold, repeat)
            if not gpus:  # the empty fleet: its page seconds are the floor of the others
                figures.setdefault(f"dashboards {span} months (s)", []).append(page)
                continue
            figures.setdefault(f"dashboards {span} months / raw SUM over totals", []).append(page / raw)
            figures.setdefault(f"dashboards {span} months (s)", []).append(page)
            if floor:
                empty = floor[f"dashboards {span} months (s)"][run]
                figures.setdefault(f"floor: empty fleet's dashboards {span} months / raw SUM", []).append(empty / raw)
        if not gpus:
            continue
        if span == 12:
            tracemalloc.start()
            render_cold()
            peak = tracemalloc.get_traced_memory()[1]
            tracemalloc.stop()
            figures["dashboards 12 months, peak Python memory (MB)"] = [peak / 1e6]
    if not gpus:
        return figures
    closing = add_months(last, -1) if months > 1 else last

    def close() -> None:
        with transaction.atomic():
            monthly_reports_close(month=closing, now=end, send_email=False)
            transaction.set_rollback(True)

    for _ in range(runs):
        raw = best(lambda: raw_totals(closing, closing), repeat)
        figures.setdefault("month close / raw SUM over totals", []).append(best(close, repeat) / raw)
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            size = 0
            for table in HOURLY_TABLES:
                cursor.execute(
                    "SELECT coalesce(sum(pg_total_relation_size(relid)), 0) FROM pg_partition_tree(%s::regclass)",
                    [table],
                )
                size += int(cursor.fetchone()[0])
        gpu_years = gpus * (end - start).total_seconds() / (365 * 86400)
        figures["hourly tables, GB per 1,000 GPU-years"] = [size / 1e9 / gpu_years * 1000]
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--gpus", default="1000,10000", help="fleet sizes, comma-separated (smallest first)")
    parser.add_argument("--months", type=int, default=3)
    parser.add_argument("--days", type=int, default=0, help="rollups for only the last days of the last month")
    parser.add_argument("--teams", type=int, default=50)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="a smoke run: 50 and 100 GPUs, 2 months, once")
    args = parser.parse_args()
    if args.quick:
        args.gpus, args.months, args.repeat, args.runs = "50,100", 2, 1, 1
    sizes = [int(size) for size in args.gpus.split(",")]
    last = date(2026, 10, 1)
    results: dict[int, dict[str, list[float]]] = {}
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "portal.settings.test")
    import django

    django.setup()
    from django.db import connection
    from django.test.utils import setup_test_environment

    setup_test_environment()  # the test client's host and in-memory mail

    configured = connection.settings_dict["NAME"]  # each fleet's database is dropped, this name restored
    setup_django("fleet_scale")  # the empty fleet first: its page seconds are every fleet's floor
    try:
        # Best of three at least: a floor, so the least the empty page took.
        floor = _fleet(0, args.months, args.teams, last, args.runs, max(args.repeat, 3), args.days)
    finally:
        connection.creation.destroy_test_db(configured, verbosity=0)
    print("empty fleet (no requests; min/median/max):", flush=True)
    for name, values in floor.items():
        if name.endswith("(s)"):
            print(f"  {name:55} {spread(values)}", flush=True)
    for gpus in sizes:
        setup_django("fleet_scale")  # a fresh database per fleet
        if gpus == sizes[0]:
            print(f"database: {connection.vendor}; {os.cpu_count()} cores; load average {os.getloadavg()[0]:.1f}")
        try:
            results[gpus] = figures = _fleet(
                gpus, args.months, args.teams, last, args.runs, args.repeat, args.days, floor=floor
            )
        finally:
            connection.creation.destroy_test_db(configured, verbosity=0)
        # Printed as soon as measured: the largest fleet takes long to build.
        print(f"{gpus:,} GPUs (min/median/max; load average now {os.getloadavg()[0]:.1f}):", flush=True)
        for name, values in figures.items():
            print(f"  {name:55} {spread(values)}", flush=True)
            target = Target(AT_MOST, 5) if "/ raw SUM" in name and name.startswith("dashboards") else None
            if "raw SUM" in name or "GB per" in name or "MB" in name:
                record("fleet_scale", f"{gpus} GPUs: {name}", values, target)
    smallest, largest = sizes[0], sizes[-1]
    if largest != smallest:
        print(f"{largest:,} GPUs against {smallest:,} GPUs (target: flat, <= 1.5x):")
        for name, values in results[largest].items():
            if name.endswith(("(s)", "(MB)")):
                ratios = [big / small for big, small in zip(values, results[smallest][name], strict=True)]
                print(f"  {name:55} {spread(ratios)}")
                record("fleet_scale", f"{largest} vs {smallest} GPUs: {name}", ratios, Target(AT_MOST, 1.5))


if __name__ == "__main__":
    main()
