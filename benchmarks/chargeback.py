"""Chargeback at scale: a month of 1,000 GPUs (hourly rollups, 30 days), 50 teams, a year of closed reports.

Prints the time to compute every team's chargeback for the month (``billing.costs.selectors.month_chargeback``: the
requests, their per-request rollup aggregates, price books, capacity and the pure arithmetic) as a ratio against
a raw ``SELECT sum(sample_count)`` over the same month of the same rollup table, measured in the same run; then the
time to render the cost dashboard page (all five charts, admin view) at that size. Best of ``--repeat``. No
assertion on time.

    .venv/bin/python benchmarks/chargeback.py [--gpus 1000] [--days 30] [--teams 50]
    DATABASE_URL=postgres://postgres@127.0.0.1:5432/gpu_portal .venv/bin/python benchmarks/chargeback.py
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Callable
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

MONTH = date(2026, 10, 1)


def setup_django() -> None:
    """A database of its own (never the one pytest may be using), migrated."""
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "portal.settings.test")
    import django

    django.setup()
    from django.conf import settings
    from django.db import connection

    # Named after the configured database, so two checkouts sharing one PostgreSQL server never drop each other's.
    settings.DATABASES["default"]["TEST"]["NAME"] = (
        f"bench_chargeback_{settings.DATABASES['default']['NAME']}"
        if connection.vendor == "postgresql"
        else str(Path("var/bench_chargeback.db"))
    )
    connection.creation.create_test_db(verbosity=0, autoclobber=True, keepdb=False)


def build(gpus: int, days: int, team_count: int) -> None:
    """Teams, an H100 pool of ``gpus`` GPUs, one request per held GPU (3 in 4), hourly rollups, a year of reports."""
    from django.contrib.auth.models import User
    from django.db import connection

    from allocations.models import Cluster, ClusterBackend, GpuModel, GpuRequest, NodePool, RequestStatus, Team
    from billing.costs.services import price_book_load
    from billing.models import MonthlyReport, MonthlyReportLine, ReportStatus, UtilizationRollup

    price_book_load(text='currency: USD\neffective_from: 2025-01-01\ngpu_models:\n  H100-80GB: {hourly: "2.00"}\n')
    h100 = GpuModel.objects.get(name="H100-80GB")
    cluster = Cluster.objects.create(name="bench", backend=ClusterBackend.GITOPS, gitops_path="bench")
    NodePool.objects.create(cluster=cluster, name="h100", gpu_model=h100, node_count=gpus // 8, gpus_per_node=8)
    owner = User.objects.create_user("bench", is_staff=True, is_superuser=True)
    teams = Team.objects.bulk_create(
        Team(slug=f"t{i:02d}", name=f"Team {i:02d}", namespace=f"team-t{i:02d}") for i in range(team_count)
    )
    start = datetime(MONTH.year, MONTH.month, 1, tzinfo=UTC)
    spec = {"strategy": "dedicated", "resource_name": "nvidia.com/gpu", "quantity": 1, "replicas": 1,
            "gpu_model": "H100-80GB", "mig_profile": None, "time_slice_replicas": None}  # fmt: skip
    held = [i for i in range(gpus) if i % 4 != 3]
    requests = GpuRequest.objects.bulk_create(
        GpuRequest(team=teams[i % team_count], requester=owner, name=f"job-{i}", workload_type="training",
                   gpu_memory_gb=Decimal(40), spec=spec, resource_name="nvidia.com/gpu", resource_units=1,
                   status=RequestStatus.ACTIVE, activated_at=start - timedelta(days=i % 5), cluster=cluster)
        for i in held
    )  # fmt: skip
    by_gpu = dict(zip(held, requests, strict=True))
    rows = []
    for hour in range(days * 24):
        at = start + timedelta(hours=hour)
        for i in range(gpus):
            req = by_gpu.get(i)
            rows.append(
                UtilizationRollup(
                    cluster=cluster, hour=at, gpu_uuid=f"GPU-{i:06d}", namespace=req.team.namespace if req else "",
                    pod=f"gpr-{req.pk}" if req else "", team=req.team if req else None, request=req,
                    gpu_model_name="NVIDIA H100 80GB HBM3", sample_count=60,
                    avg_utilization_pct=float((i + hour) % 90),
                    peak_memory_used_mib=40000.0, energy_kwh=0.4, pulled_at=at,
                )
            )  # fmt: skip
        if len(rows) >= 50_000:
            UtilizationRollup.objects.bulk_create(rows, batch_size=5000)
            rows.clear()
    UtilizationRollup.objects.bulk_create(rows, batch_size=5000)
    # Eleven closed months before it: one report per team with ten lines.
    reports = []
    for back in range(1, 12):
        month = date(MONTH.year - (MONTH.month - back <= 0), (MONTH.month - back - 1) % 12 + 1, 1)
        reports += [MonthlyReport(team=t, month=month, currency="USD", status=ReportStatus.OPEN) for t in teams]
    reports = MonthlyReport.objects.bulk_create(reports)
    lines = [
        MonthlyReportLine(report=r, request_ref=None, name=f"old-{n}", gpu_model="H100-80GB", strategy="dedicated",
                          resource_name="nvidia.com/gpu", quantity=1, period_start=start, period_end=start,
                          hours=Decimal(72), unit_share=Decimal(1), allocated_gpu_hours=Decimal(72),
                          gpu_rate=Decimal(2), sla_multiplier=Decimal(1), rate=Decimal(2), amount=Decimal(144),
                          dedicated_amount=Decimal(144), rate_source="price book")
        for r in reports for n in range(10)
    ]  # fmt: skip
    MonthlyReportLine.objects.bulk_create(lines, batch_size=5000)
    MonthlyReport.objects.filter(pk__in=[r.pk for r in reports]).update(
        status=ReportStatus.CLOSED, amount=Decimal(1440), total=Decimal(1440), closed_at=start
    )
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("ANALYZE")


def best(fn: Callable[[], object], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        fn()
        times.append(time.perf_counter() - started)
    return min(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--gpus", type=int, default=1000)
    parser.add_argument("--days", type=int, default=30)
    parser.add_argument("--teams", type=int, default=50)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    setup_django()
    from django.db import connection
    from django.test import Client
    from django.test.utils import setup_test_environment

    from billing.costs.selectors import month_bounds, month_chargeback

    setup_test_environment()
    started = time.perf_counter()
    build(args.gpus, args.days, args.teams)
    rows = args.gpus * args.days * 24
    print(
        f"database: {connection.vendor}; built {args.gpus} GPUs x {args.days} days of hourly rollups "
        f"({rows:,} rows), {args.teams} teams in {time.perf_counter() - started:.1f} s"
    )
    start, end = month_bounds(MONTH)
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
    raw = best(raw_sum, args.repeat)
    charge = best(chargeback, args.repeat)
    print(f"raw SELECT sum() over the month's rollups: {raw * 1000:8.1f} ms")
    print(f"every team's chargeback ({teams_charged} teams): {charge * 1000:8.1f} ms   ratio {charge / raw:5.1f}x")
    client = Client()
    client.force_login(__import__("django.contrib.auth.models", fromlist=["User"]).User.objects.get(username="bench"))

    def render() -> object:
        response = client.get("/billing/dashboards/", {"month": f"{MONTH:%Y-%m}"})
        assert response.status_code == 200
        return response

    page = best(render, args.repeat)
    print(f"dashboard page (5 charts, 12 months, admin): {page * 1000:8.1f} ms   ratio {page / raw:5.1f}x raw sum")
    connection.creation.destroy_test_db(connection.settings_dict["NAME"], verbosity=0)


if __name__ == "__main__":
    main()
