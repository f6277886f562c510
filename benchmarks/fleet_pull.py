"""The utilization pull of a large cluster against a real Prometheus holding its GPUs' series: the steady pull
against a tenth of its 5-minute interval, and the catch-up after an outage against an hour per day missed.

History: ``--gpus`` whole GPUs (three in four held by a request's pod) x ``--hours`` hours at 60 s, three DCGM
metrics (``benchmarks/ingest.py``'s generator), turned into TSDB blocks with ``promtool tsdb create-blocks-from
openmetrics`` and served by the ``prometheus`` binary on loopback. The cluster's node pools hold the fleet's GPUs, so
the pull sizes its reads (``billing.metering.pull_chunks``) as it would in production. Each run, from an empty
rollup table (``--repeat`` runs; min/median/max):

- the steady pull: ``utilization_pull`` of the newest complete hour, what the 5-minute task reads when an hour
  ends (read, roll-up and write), against 30 s (a tenth of the interval);
- the catch-up: ``utilization_pull`` of the hours before it (each read chunk in its own transaction), per hour
  caught up; a day's catch-up is 24 times that (printed as such unless ``--hours`` is 25), against an hour.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/gpu_portal .venv/bin/python benchmarks/fleet_pull.py [--gpus 10000]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import time
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.bench_results import AT_MOST, Target, record
from benchmarks.ingest import backfill_parallel, devices, forget, spread, write_history
from tests.integration.dcgm_exporter import PrometheusServer

INTERVAL_SECONDS = 300


def _cpu_seconds(pid: int) -> float:
    """CPU time (user + system) a process has used: on a shared machine, what a read costs whatever the load."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


TEAMS = ("vision", "nlp", "speech")


def _setup_django() -> str:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "portal.settings.test")
    if not os.environ.get("DATABASE_URL", "").startswith(("postgres://", "postgresql://")):
        sys.exit("benchmarks/fleet_pull.py measures the pull into PostgreSQL: set DATABASE_URL=postgres://...")
    import django

    django.setup()
    import logging

    from django.conf import settings
    from django.db import connection

    logging.disable(logging.WARNING)
    # The read is what is measured: a slow one is timed, not cut off at the production read timeout (printed).
    print(f"production read timeout: {settings.BILLING_PROMETHEUS_TIMEOUT_SECONDS} s; here: none (30 min)")
    settings.BILLING_PROMETHEUS_TIMEOUT_SECONDS = 1800
    settings.DATABASES["default"]["TEST"]["NAME"] = name = (
        f"bench_pull_{os.getpid()}_{settings.DATABASES['default']['NAME']}"
    )
    connection.creation.create_test_db(verbosity=0, autoclobber=True, keepdb=False)
    return name


def _fleet(gpus: int, prometheus_url: str, first_request: int):
    """The cluster (pools holding ``gpus`` GPUs), the teams and one request per held GPU, as the pods name them."""
    from django.contrib.auth.models import User

    from allocations.models import Cluster, ClusterBackend, GpuModel, GpuRequest, NodePool, RequestStatus, Team

    h100 = GpuModel.objects.get(name="H100-80GB")
    cluster = Cluster.objects.create(
        name="bench", backend=ClusterBackend.GITOPS, gitops_path="bench", prometheus_url=prometheus_url
    )
    NodePool.objects.create(cluster=cluster, name="h100", gpu_model=h100, node_count=-(-gpus // 8), gpus_per_node=8)
    owner = User.objects.create_user("bench")
    teams = {slug: Team.objects.create(slug=slug, name=slug, namespace=f"team-{slug}") for slug in TEAMS}
    spec = {"strategy": "dedicated", "resource_name": "nvidia.com/gpu", "quantity": 1, "replicas": 1,
            "gpu_model": "H100-80GB", "mig_profile": None, "time_slice_replicas": None}  # fmt: skip
    GpuRequest.objects.bulk_create(
        (
            GpuRequest(id=first_request + i, team=teams[TEAMS[i % len(TEAMS)]], requester=owner, name=f"job-{i}",
                       workload_type="training", gpu_memory_gb=Decimal(40), spec=spec, resource_name="nvidia.com/gpu",
                       resource_units=1, status=RequestStatus.ACTIVE, cluster=cluster)
            for i in range(gpus)
            if i % 4 != 3
        ),
        batch_size=2000,
    )  # fmt: skip
    return cluster


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--gpus", type=int, default=10_000)
    parser.add_argument("--hours", type=int, default=4, help="hours of history: the newest is the steady pull's")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    if not (shutil.which("prometheus") and shutil.which("promtool")):
        sys.exit("needs the Debian 'prometheus' package (prometheus and promtool)")
    if args.hours < 2:
        sys.exit("--hours: at least 2 (the steady pull's hour and one to catch up)")
    bench_db = _setup_django()
    from django.db import connection

    from billing.metering.pull_chunks import pull_chunk_hours
    from billing.metering.services import utilization_pull

    first_request = 100_000
    start = datetime.now(UTC).replace(minute=0, second=0, microsecond=0) - timedelta(hours=args.hours + 1)
    end = start + timedelta(hours=args.hours)
    prometheus = PrometheusServer(extra_args=["--query.timeout=30m"])
    steady, catch_up_per_hour, reads, prometheus_cpu = [], [], [], []
    try:
        cluster = _fleet(args.gpus, prometheus.url, first_request)
        started = time.perf_counter()
        files = write_history(devices(args.gpus, first_request), start, args.hours, prometheus.root, parts=4)
        generated = time.perf_counter() - started
        started = time.perf_counter()
        backfill_parallel(files, prometheus.data_dir, prometheus.root)
        blocks = time.perf_counter() - started
        prometheus.start(timeout=300)
        samples = args.gpus * args.hours * 60 * 3
        chunk = pull_chunk_hours(cluster)
        print(
            f"Prometheus holds {args.gpus:,} GPUs x {args.hours} h at 60 s ({samples:,} samples; generated in "
            f"{generated:.0f} s, promtool {blocks:.0f} s); the pull reads {chunk} h at a time; "
            f"{os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f}",
            flush=True,
        )
        newest = end - timedelta(hours=1)
        now = end + timedelta(minutes=5)
        for run in range(args.repeat):
            forget(cluster)
            began, cpu = time.perf_counter(), _cpu_seconds(prometheus.process.pid)
            pulled = utilization_pull(cluster=cluster, start=newest, end=end, now=now)
            steady.append(time.perf_counter() - began)
            reads.append(pulled.read_seconds)
            prometheus_cpu.append(_cpu_seconds(prometheus.process.pid) - cpu)
            began = time.perf_counter()
            caught = utilization_pull(cluster=cluster, start=start, end=newest, now=now)
            catch_up_per_hour.append((time.perf_counter() - began) / caught.hours)
            print(
                f"  run {run + 1}: steady pull {steady[-1]:.1f} s (read {pulled.read_seconds:.1f}, of which "
                f"Prometheus CPU {prometheus_cpu[-1]:.1f}, roll-up "
                f"{pulled.rollup_seconds:.1f}, write {pulled.write_seconds:.1f}; {pulled.rows:,} rows); catch-up "
                f"{caught.hours} h in {caught.reads} reads, {catch_up_per_hour[-1]:.1f} s an hour",
                flush=True,
            )
        with connection.cursor() as cursor:
            cursor.execute("SELECT count(*) FROM billing_utilizationrollup")
            rows = cursor.fetchone()[0]
    finally:
        prometheus.cleanup()
        connection.creation.destroy_test_db(bench_db, verbosity=0)
    day = [24 * per_hour for per_hour in catch_up_per_hour]
    print(f"{args.gpus:,} GPUs ({rows:,} rollups an ingest of {args.hours} h; min/median/max of {args.repeat} runs):")
    print(f"  steady pull of the newest hour (s)        {spread(steady, unit='s', digits=1)}")
    print(f"    of which reading Prometheus (s)         {spread(reads, unit='s', digits=1)}")
    print(f"    Prometheus CPU for it (s)               {spread(prometheus_cpu, unit='s', digits=1)}")
    tenth = [seconds / INTERVAL_SECONDS for seconds in steady]
    print(f"  steady pull / its 5-minute interval       {spread(tenth, unit='x', digits=3)}  (target <= 0.1)")
    print(f"  a day's catch-up, 24 x the hourly rate (s) {spread(day, unit='s', digits=0)}  (target <= 3600 s)")
    record("fleet_pull", f"{args.gpus} GPUs: steady pull / 5-minute interval", tenth, Target(AT_MOST, 0.1))
    record(
        "fleet_pull",
        f"{args.gpus} GPUs: a day's catch-up (s)",
        day,
        Target(AT_MOST, 3600),
        unit="s",
        detail=f"24 x the hourly rate of a {args.hours - 1}-hour catch-up",
    )
    print(f"median steady pull {statistics.median(steady):.1f} s; median day's catch-up {statistics.median(day):.0f} s")


if __name__ == "__main__":
    main()
