"""Cost data at scale for the chargeback and dashboards benchmarks (a helper, not a benchmark: ``make benchmarks``
skips ``bench_*``): teams, an H100 pool, one active request per held GPU, hourly rollups for every GPU and hour,
closed monthly reports, and the daily and monthly usage totals the ingest keeps (``refresh_usage_aggregates``).

On PostgreSQL the rollups are written by one ``INSERT .. SELECT`` over ``generate_series`` (a year of 200 GPUs in
seconds); elsewhere by ``bulk_create``.
"""

from __future__ import annotations

import logging
import os
import statistics
import time
from collections.abc import Callable
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal
from pathlib import Path


def setup_django(name: str) -> None:
    """A database of its own, named after the configured one (two checkouts sharing a server never clash)."""
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "portal.settings.test")
    import django

    django.setup()
    from django.conf import settings
    from django.db import connection

    settings.DEBUG = False
    logging.disable(logging.INFO)  # sign-ins and eager tasks log at INFO: not the benchmark's output
    settings.DATABASES["default"]["TEST"]["NAME"] = (
        f"bench_{name}_{settings.DATABASES['default']['NAME']}"
        if connection.vendor == "postgresql"
        else str(Path(f"var/bench_{name}.db"))
    )
    connection.creation.create_test_db(verbosity=0, autoclobber=True, keepdb=False)


def _rollups_sql() -> str:
    return """
        INSERT INTO billing_utilizationrollup (
            cluster_id, hour, gpu_uuid, mig_instance, namespace, pod, team_id, request_id, gpu_model_name,
            mig_profile, hostname, gpu_index, sample_count, avg_utilization_pct, peak_memory_used_mib, energy_kwh,
            is_complete, pulled_at)
        SELECT %s, h, 'GPU-' || lpad(g::text, 6, '0'), '', coalesce(o.namespace, ''),
               coalesce('gpr-' || o.request_id, ''), o.team_id, o.request_id, 'NVIDIA H100 80GB HBM3', '', '', NULL,
               60, ((g + extract(hour from h AT TIME ZONE 'UTC')::int) %% 90)::float, 40000.0, 0.4, true, h
        FROM generate_series(%s::timestamptz, %s::timestamptz, interval '1 hour') AS h
        CROSS JOIN generate_series(0, %s - 1) AS g
        LEFT JOIN bench_gpu_owner o ON o.gpu = g
    """


def build(*, gpus: int, start: datetime, end: datetime, team_count: int, closed_months: list[date]) -> dict:
    """Everything the cost pages read, for [start, end); returns counts and build seconds."""
    from django.contrib.auth.models import User
    from django.db import connection

    from allocations.models import Cluster, ClusterBackend, GpuModel, GpuRequest, NodePool, RequestStatus, Team
    from billing.costs.services import price_book_load
    from billing.metering.aggregates import refresh_usage_aggregates
    from billing.models import MonthlyReport, MonthlyReportLine, ReportStatus, UtilizationRollup

    started = time.perf_counter()
    price_book_load(text='currency: USD\neffective_from: 2025-01-01\ngpu_models:\n  H100-80GB: {hourly: "2.00"}\n')
    h100 = GpuModel.objects.get(name="H100-80GB")
    cluster = Cluster.objects.create(name="bench", backend=ClusterBackend.GITOPS, gitops_path="bench")
    pool = NodePool.objects.create(
        cluster=cluster, name="h100", gpu_model=h100, node_count=max(1, gpus // 8), gpus_per_node=8
    )
    owner = User.objects.create_user("bench", is_staff=True, is_superuser=True)
    teams = Team.objects.bulk_create(
        Team(slug=f"t{i:02d}", name=f"Team {i:02d}", namespace=f"team-t{i:02d}") for i in range(team_count)
    )
    spec = {"strategy": "dedicated", "resource_name": "nvidia.com/gpu", "quantity": 1, "replicas": 1,
            "gpu_model": "H100-80GB", "mig_profile": None, "time_slice_replicas": None}  # fmt: skip
    held = [i for i in range(gpus) if i % 4 != 3]
    requests = GpuRequest.objects.bulk_create(
        GpuRequest(team=teams[i % team_count], requester=owner, name=f"job-{i}", workload_type="training",
                   gpu_memory_gb=Decimal(40), spec=spec, resource_name="nvidia.com/gpu", resource_units=1,
                   status=RequestStatus.ACTIVE, activated_at=start - timedelta(days=i % 5), cluster=cluster,
                   node_pool=pool)
        for i in held
    )  # fmt: skip
    by_gpu = dict(zip(held, requests, strict=True))
    hours = int((end - start).total_seconds() // 3600)
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute(
                "CREATE TEMP TABLE bench_gpu_owner (gpu int PRIMARY KEY, request_id bigint, team_id bigint, "
                "namespace text)"
            )
            cursor.executemany(
                "INSERT INTO bench_gpu_owner VALUES (%s, %s, %s, %s)",
                [(i, r.pk, r.team_id, r.team.namespace) for i, r in by_gpu.items()],
            )
            cursor.execute(_rollups_sql(), [cluster.pk, start, end - timedelta(hours=1), gpus])
            cursor.execute("DROP TABLE bench_gpu_owner")
    else:
        rows = []
        for hour in range(hours):
            at = start + timedelta(hours=hour)
            for i in range(gpus):
                req = by_gpu.get(i)
                rows.append(
                    UtilizationRollup(
                        cluster=cluster, hour=at, gpu_uuid=f"GPU-{i:06d}", namespace=req.team.namespace if req else "",
                        pod=f"gpr-{req.pk}" if req else "", team=req.team if req else None, request=req,
                        gpu_model_name="NVIDIA H100 80GB HBM3", sample_count=60,
                        avg_utilization_pct=float((i + hour) % 90), peak_memory_used_mib=40000.0, energy_kwh=0.4,
                        pulled_at=at,
                    )
                )  # fmt: skip
        UtilizationRollup.objects.bulk_create(rows, batch_size=5000)
    rollup_seconds = time.perf_counter() - started
    refreshed = time.perf_counter()
    refresh_usage_aggregates(cluster_id=cluster.pk, start=start, end=end)
    aggregate_seconds = time.perf_counter() - refreshed
    reports = MonthlyReport.objects.bulk_create(
        MonthlyReport(team=t, month=m, currency="USD", status=ReportStatus.OPEN) for m in closed_months for t in teams
    )
    MonthlyReportLine.objects.bulk_create(
        [
            MonthlyReportLine(report=r, request_ref=None, name=f"old-{n}", gpu_model="H100-80GB",
                              strategy="dedicated", resource_name="nvidia.com/gpu", quantity=1, period_start=start,
                              period_end=start, hours=Decimal(72), unit_share=Decimal(1),
                              allocated_gpu_hours=Decimal(72), gpu_rate=Decimal(2), sla_multiplier=Decimal(1),
                              rate=Decimal(2), amount=Decimal(144), dedicated_amount=Decimal(144),
                              rate_source="price book")
            for r in reports for n in range(10)
        ],
        batch_size=5000,
    )  # fmt: skip
    MonthlyReport.objects.filter(pk__in=[r.pk for r in reports]).update(
        status=ReportStatus.CLOSED, amount=Decimal(1440), total=Decimal(1440), closed_at=start
    )
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("VACUUM ANALYZE")
    return {
        "rollups": hours * gpus,
        "seconds": time.perf_counter() - started,
        "rollup_seconds": rollup_seconds,
        "aggregate_seconds": aggregate_seconds,
    }


def best(fn: Callable[[], object], repeat: int) -> float:
    """The fastest of ``repeat`` calls, in seconds."""
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        fn()
        times.append(time.perf_counter() - started)
    return min(times)


def spread(values: list[float], fmt: str = "{:.2f}") -> str:
    """min/median/max."""
    return "/".join(fmt.format(v) for v in (min(values), statistics.median(values), max(values)))


def month_start(at: datetime) -> datetime:
    return datetime(at.year, at.month, 1, tzinfo=UTC)
