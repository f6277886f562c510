"""The utilization pull of a large cluster against a real Prometheus holding its GPUs' series: the steady pull
against a tenth of its 5-minute interval, and the catch-up after an outage against an hour per day missed, read from
the portal's recording rules and by subqueries, in the same run.

History: ``--gpus`` whole GPUs (three in four held by a request's pod) x ``--hours`` hours at 60 s, three DCGM
metrics (``benchmarks/ingest.py``'s generator), turned into TSDB blocks with ``promtool tsdb create-blocks-from
openmetrics`` and served by the ``prometheus`` binary on loopback. The recording rules
(``gpucore.utilization_promql``) are then evaluated over that history by ``promtool tsdb create-blocks-from rules``
against the running server, as a cluster's Prometheus evaluates them live (its CPU for that, per hour of the fleet,
is printed: the rules' standing cost), and their blocks served beside the raw ones. The cluster's node pools hold
the fleet's GPUs, so the pull sizes its reads (``billing.metering.pull_chunks``) as it would in production. Each run
of each path (``--paths``), from an empty rollup table (``--repeat`` runs, ``--subquery-repeat`` for the slow
subquery path; min/median/max):

- the steady pull: ``utilization_pull`` of the newest complete hour, what the 5-minute task reads when an hour
  ends (read, roll-up and write), against 30 s (a tenth of the interval);
- the catch-up: ``utilization_pull`` of the hours before it (each read chunk in its own transaction), per hour
  caught up; a day's catch-up is 24 times that, against an hour.

Run it at low priority, as the docs' figures were (Prometheus, a child, inherits it)::

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/gpu_portal nice -n 10 .venv/bin/python benchmarks/fleet_pull.py \
        [--gpus 10000] [--paths recorded,subquery]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import time
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import yaml

from benchmarks.bench_results import AT_MOST, Target, record
from benchmarks.ingest import backfill_parallel, devices, forget, spread, write_history
from gpucore.utilization_promql import rule_groups
from tests.integration.dcgm_exporter import PrometheusServer

INTERVAL_SECONDS = 300
PATHS = ("recorded", "subquery")


def _cpu_seconds(pid: int) -> float:
    """CPU time (user + system) a process has used: on a shared machine, what a read costs whatever the load."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


TEAMS = ("vision", "nlp", "speech")


def _backfill_rules(prometheus: PrometheusServer, start: datetime, end: datetime) -> tuple[float, float]:
    """Evaluate the recording rules over [start, end] against the running server and serve their blocks; returns
    (wall seconds, Prometheus CPU seconds) of the evaluation."""
    rule_file = prometheus.root / "gpu-portal.rules.yml"
    rule_file.write_text(yaml.safe_dump({"groups": rule_groups()}, sort_keys=False))
    out = prometheus.root / "rule-blocks"
    began, cpu = time.perf_counter(), _cpu_seconds(prometheus.process.pid)
    subprocess.run(
        ["promtool", "tsdb", "create-blocks-from", "rules", f"--start={start.isoformat()}", f"--end={end.isoformat()}",
         f"--url={prometheus.url}", f"--output-dir={out}", str(rule_file)],
        check=True, capture_output=True, timeout=3600,
    )  # fmt: skip
    evaluated = (time.perf_counter() - began, _cpu_seconds(prometheus.process.pid) - cpu)
    prometheus.stop()
    for block in out.iterdir():
        shutil.move(str(block), prometheus.data_dir / block.name)
    prometheus.start(timeout=300)
    return evaluated


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


def _health_pulls(cluster, *, start: datetime, end: datetime, now: datetime) -> float:
    """The GPU health pulls the 5-minute task runs after the utilization pull, over the same hours; seconds."""
    from billing.metering.alert_inputs import utilization_health_pull
    from billing.metering.gpu_health import gpu_health_pull

    began = time.perf_counter()
    utilization_health_pull(cluster=cluster, start=start, end=end)
    gpu_health_pull(cluster=cluster, start=start, end=end, now=now)
    return time.perf_counter() - began


def _measure(
    cluster, prometheus, *, path: str, runs: int, start: datetime, end: datetime, health: bool
) -> dict[str, list[float]]:
    """``runs`` steady pulls and catch-ups of one path (``health``: with the task's GPU health pulls); their times."""
    from billing.metering.services import utilization_pull

    cluster.prometheus_recording_rules = path == "recorded"
    cluster.save(update_fields=["prometheus_recording_rules"])
    newest = end - timedelta(hours=1)
    now = end + timedelta(minutes=5)
    figures: dict[str, list[float]] = {"steady": [], "read": [], "cpu": [], "catch_up": [], "health": [], "task": []}
    for run in range(runs):
        forget(cluster)
        began, cpu = time.perf_counter(), _cpu_seconds(prometheus.process.pid)
        pulled = utilization_pull(cluster=cluster, start=newest, end=end, now=now)
        figures["steady"].append(time.perf_counter() - began)
        figures["read"].append(pulled.read_seconds)
        figures["cpu"].append(_cpu_seconds(prometheus.process.pid) - cpu)
        if health:
            figures["health"].append(_health_pulls(cluster, start=newest, end=end, now=now))
            figures["task"].append(figures["steady"][-1] + figures["health"][-1])
        began = time.perf_counter()
        caught = utilization_pull(cluster=cluster, start=start, end=newest, now=now)
        if health:
            _health_pulls(cluster, start=start, end=newest, now=now)
        figures["catch_up"].append((time.perf_counter() - began) / caught.hours)
        if pulled.recorded_hours + caught.recorded_hours != (caught.hours + 1 if path == "recorded" else 0):
            sys.exit(f"the {path} path read {pulled.recorded_hours + caught.recorded_hours} hours from the rules")
        health_note = f"health pulls {figures['health'][-1]:.1f} s; " if health else ""
        print(
            f"  {path} run {run + 1}: steady pull {figures['steady'][-1]:.1f} s (read {pulled.read_seconds:.1f}, "
            f"of which Prometheus CPU {figures['cpu'][-1]:.1f}, roll-up {pulled.rollup_seconds:.1f}, write "
            f"{pulled.write_seconds:.1f}; {pulled.rows:,} rows); catch-up {caught.hours} h in {caught.reads} reads, "
            f"{figures['catch_up'][-1]:.1f} s an hour{' with the health pulls' if health else ''}; "
            f"{health_note}load average {os.getloadavg()[0]:.1f}",
            flush=True,
        )
    return figures


def _report(gpus: int, hours: int, path: str, figures: dict[str, list[float]]) -> None:
    day = [24 * per_hour for per_hour in figures["catch_up"]]
    tenth = [seconds / INTERVAL_SECONDS for seconds in figures["steady"]]
    runs = len(tenth)
    print(f"{gpus:,} GPUs, {path} path (min/median/max of {runs} runs):")
    print(f"  steady pull of the newest hour (s)         {spread(figures['steady'], unit='s', digits=1)}")
    print(f"    of which reading Prometheus (s)          {spread(figures['read'], unit='s', digits=1)}")
    print(f"    Prometheus CPU for it (s)                {spread(figures['cpu'], unit='s', digits=1)}")
    print(f"  steady pull / its 5-minute interval        {spread(tenth, unit='x', digits=3)}  (target <= 0.1)")
    if figures["health"]:
        task = [seconds / INTERVAL_SECONDS for seconds in figures["task"]]
        print(f"  the task's GPU health pulls of that hour (s) {spread(figures['health'], unit='s', digits=1)}")
        print(f"  steady task (pull + health) / interval     {spread(task, unit='x', digits=3)}  (target <= 0.1)")
        record("fleet_pull", f"{gpus} GPUs, {path}: steady task with health / interval", task, Target(AT_MOST, 0.1))
    print(f"  a day's catch-up, 24 x the hourly rate (s) {spread(day, unit='s', digits=0)}  (target <= 3600 s)")
    record("fleet_pull", f"{gpus} GPUs, {path}: steady pull / 5-minute interval", tenth, Target(AT_MOST, 0.1))
    record(
        "fleet_pull",
        f"{gpus} GPUs, {path}: a day's catch-up (s)",
        day,
        Target(AT_MOST, 3600),
        unit="s",
        detail=f"24 x the hourly rate of a {hours - 1}-hour catch-up",
    )
    print(
        f"median steady pull {statistics.median(figures['steady']):.1f} s; "
        f"median day's catch-up {statistics.median(day):.0f} s"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--gpus", type=int, default=10_000)
    parser.add_argument("--hours", type=int, default=4, help="hours of history: the newest is the steady pull's")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--subquery-repeat", type=int, default=None, help="runs of the subquery path (--repeat)")
    parser.add_argument("--paths", default=",".join(PATHS), help="recorded, subquery or both (comma-separated)")
    parser.add_argument(
        "--health", action="store_true", help="also the GPU health pulls the task runs (more series to load)"
    )
    args = parser.parse_args()
    paths = [path for path in args.paths.split(",") if path]
    if not paths or set(paths) - set(PATHS):
        sys.exit(f"--paths: one or more of {', '.join(PATHS)}")
    if not (shutil.which("prometheus") and shutil.which("promtool")):
        sys.exit("needs the Debian 'prometheus' package (prometheus and promtool)")
    if args.hours < 2:
        sys.exit("--hours: at least 2 (the steady pull's hour and one to catch up)")
    bench_db = _setup_django()
    from django.db import connection

    from billing.metering.pull_chunks import pull_chunk_hours

    first_request = 100_000
    start = datetime.now(UTC).replace(minute=0, second=0, microsecond=0) - timedelta(hours=args.hours + 1)
    end = start + timedelta(hours=args.hours)
    prometheus = PrometheusServer(extra_args=["--query.timeout=30m"])
    results: dict[str, dict[str, list[float]]] = {}
    try:
        cluster = _fleet(args.gpus, prometheus.url, first_request)
        started = time.perf_counter()
        fleet = devices(args.gpus, first_request)
        files = write_history(fleet, start, args.hours, prometheus.root, parts=4, health=args.health)
        generated = time.perf_counter() - started
        started = time.perf_counter()
        backfill_parallel(files, prometheus.data_dir, prometheus.root)
        blocks = time.perf_counter() - started
        prometheus.start(timeout=300)
        samples = args.gpus * args.hours * 60 * (6 if args.health else 3)
        chunk = pull_chunk_hours(cluster)
        print(
            f"Prometheus holds {args.gpus:,} GPUs x {args.hours} h at 60 s ({samples:,} samples; generated in "
            f"{generated:.0f} s, promtool {blocks:.0f} s); the pull reads {chunk} h at a time; "
            f"{os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f}",
            flush=True,
        )
        if "recorded" in paths:
            wall, cpu = _backfill_rules(prometheus, start, end)
            print(
                f"recording rules evaluated over the {args.hours} h in {wall:.0f} s (Prometheus CPU {cpu:.0f} s: "
                f"{cpu / args.hours:.1f} s per hour of the fleet, what evaluating them live costs)",
                flush=True,
            )
        for path in paths:
            runs = args.repeat if path == "recorded" else (args.subquery_repeat or args.repeat)
            results[path] = _measure(
                cluster, prometheus, path=path, runs=runs, start=start, end=end, health=args.health
            )
        with connection.cursor() as cursor:
            cursor.execute("SELECT count(*) FROM billing_utilizationrollup")
            rows = cursor.fetchone()[0]
    finally:
        prometheus.cleanup()
        connection.creation.destroy_test_db(bench_db, verbosity=0)
    print(f"{rows:,} rollups after the last ingest of {args.hours} h")
    for path, figures in results.items():
        _report(args.gpus, args.hours, path, figures)
    if len(results) == 2:
        ratio = statistics.median(results["subquery"]["steady"]) / statistics.median(results["recorded"]["steady"])
        print(f"steady pull, subqueries / recorded (medians): {ratio:.1f}x")


if __name__ == "__main__":
    main()
