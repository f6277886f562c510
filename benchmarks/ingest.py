"""Utilization ingest: 1,000 GPUs x 24 h at 60 s from a real Prometheus, rollup write time vs PostgreSQL ``COPY``.

History is generated in the DCGM format (tests/integration/dcgm_exporter.py), turned into TSDB blocks with
``promtool tsdb create-blocks-from openmetrics`` (one file per device group, run in parallel) and served by the
``prometheus`` binary on a loopback port. The 24 hours are read and rolled up once, as a pull does
(``billing.metering.services``); the pull's write of them is then timed ``--repeat`` times, each a fresh ingest of
the day (what it wrote is removed between runs, untimed). Each run's write (the hours never read before copied
straight into the rollup table, the daily and monthly totals, the ingest log and the watermark, in one transaction)
is set against a ``COPY`` of the same rows into an empty table of the same shape measured in the same run (its
indexes, unique and check constraints; ``LIKE`` copies no foreign keys, whose checks at commit the write pays).
Printed: min / median / max of each figure and of the ratio COPY time / write time (target: >= 0.33x),
then a re-read of the same day (a replace). No assertion.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/gpu_portal .venv/bin/python benchmarks/ingest.py [--gpus 1000]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.bench_results import AT_LEAST, Target, record
from tests.integration.dcgm_exporter import FakeDevice, PrometheusServer, _format_labels

TEAMS = ["vision", "nlp", "speech"]
COLUMNS = [
    "cluster_id", "hour", "gpu_uuid", "mig_instance", "namespace", "pod", "team_id", "request_id", "gpu_model_name",
    "mig_profile", "hostname", "gpu_index", "sample_count", "avg_utilization_pct", "peak_utilization_pct",
    "avg_memory_used_mib", "peak_memory_used_mib", "energy_kwh", "is_complete", "pulled_at",
]  # fmt: skip


def devices(count: int, first_request: int) -> list[FakeDevice]:
    """``count`` whole GPUs on 8-GPU nodes; three in four held by a team request's pod, the rest idle."""
    out = []
    for i in range(count):
        held = i % 4 != 3
        team = TEAMS[i % len(TEAMS)]
        out.append(
            FakeDevice(
                uuid=f"GPU-{i:08x}-0000-4000-8000-{i:012x}",
                gpu=i % 8,
                host=f"gpu-node-{i // 8:04d}",
                namespace=f"team-{team}" if held else "",
                pod=f"gpr-{first_request + i}-{i:05x}" if held else "",
                power_w=350 + i % 300,
            )
        )
    return out


# What the GPU health pulls read besides: temperature, free framebuffer (memory pressure now and then) and the XID
# gauge (an XID for a few minutes now and then).
HEALTH_METRICS = (
    ("DCGM_FI_DEV_GPU_TEMP", lambda i, m: 55 + (i + m) % 30),
    ("DCGM_FI_DEV_FB_FREE", lambda i, m: 512 if (i + m) % 97 < 5 else 81559 - 1024 * (i % 80) - m % 60),
    ("DCGM_FI_DEV_XID_ERRORS", lambda i, m: 13 if (i * 31 + m) % 997 < 3 else 0),
)


def write_history(
    devs: list[FakeDevice], start: datetime, hours: int, out_dir: Path, parts: int, *, health: bool = False
) -> list[Path]:
    """OpenMetrics files (one per device group) with utilization, framebuffer and power at 60 s (``health``: and
    what the GPU health pulls read)."""
    files = []
    stamps = [int((start + timedelta(minutes=m)).timestamp()) for m in range(hours * 60)]
    size = -(-len(devs) // parts)
    for part in range(parts):
        group = devs[part * size : (part + 1) * size]
        path = out_dir / f"history-{part}.om"
        with path.open("w") as handle:
            for name, value in (
                ("DCGM_FI_DEV_GPU_UTIL", lambda i, m: (i * 7 + m) % 101),
                ("DCGM_FI_DEV_FB_USED", lambda i, m: 1024 * (i % 80) + m % 60),
                ("DCGM_FI_DEV_POWER_USAGE", lambda i, m: 300 + (i + m) % 400),
                *(HEALTH_METRICS if health else ()),
            ):
                handle.write(f"# TYPE {name} gauge\n")
                for device in group:
                    index = int(device.uuid[4:12], 16)
                    head = f"{name}{_format_labels(device.labels(stored=True))} "
                    handle.writelines(f"{head}{value(index, m)} {ts}\n" for m, ts in enumerate(stamps))
            handle.write("# EOF\n")
        files.append(path)
    return files


def backfill_parallel(files: list[Path], data_dir: Path, root: Path) -> None:
    """promtool per file into its own directory, in parallel; Prometheus merges the overlapping blocks."""
    import subprocess

    def one(path: Path) -> Path:
        out = root / f"blocks-{path.stem}"
        cmd = ["promtool", "tsdb", "create-blocks-from", "openmetrics", str(path), str(out)]
        subprocess.run(cmd, check=True, capture_output=True, timeout=1800)
        return out

    data_dir.mkdir(parents=True, exist_ok=True)
    with ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
        for out in pool.map(one, files):
            for block in out.iterdir():
                shutil.move(str(block), data_dir / block.name)


def setup_django() -> str:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "portal.settings.test")
    if not os.environ.get("DATABASE_URL", "").startswith(("postgres://", "postgresql://")):
        sys.exit("benchmarks/ingest.py compares against PostgreSQL COPY: set DATABASE_URL=postgres://...")
    import django

    django.setup()
    from django.conf import settings
    from django.db import connection

    settings.BILLING_PROMETHEUS_TIMEOUT_SECONDS = 1800

    # A database of its own, named after DATABASE_URL's: never one pytest or another benchmark run is using.
    settings.DATABASES["default"]["TEST"]["NAME"] = BENCH_DB = f"bench_ingest_{settings.DATABASES['default']['NAME']}"
    connection.creation.create_test_db(verbosity=0, autoclobber=True, keepdb=False)
    return BENCH_DB


def copy_baseline(table: str, rows: list[tuple]) -> float:
    """Seconds to COPY the rows into an empty table shaped like ``table`` (no foreign keys: ``LIKE`` copies none)."""
    from django.db import connection, transaction

    with connection.cursor() as cursor:
        cursor.execute(f"DROP TABLE IF EXISTS bench_copy; CREATE TABLE bench_copy (LIKE {table} INCLUDING ALL)")
    started = time.perf_counter()
    with (
        transaction.atomic(),
        connection.cursor() as cursor,
        cursor.copy(f"COPY bench_copy ({', '.join(COLUMNS)}) FROM STDIN") as copy,
    ):
        for row in rows:
            copy.write_row(row)
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--gpus", type=int, default=1000)
    parser.add_argument("--hours", type=int, default=24)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument(
        "--no-prometheus",
        action="store_true",
        help="build the day's rollups in Python instead of reading them (the write timed is the same)",
    )
    args = parser.parse_args()
    if not args.no_prometheus and not (shutil.which("prometheus") and shutil.which("promtool")):
        sys.exit("needs the Debian 'prometheus' package (prometheus and promtool)")
    bench_db = setup_django()
    from django.db import connection, transaction

    from allocations.models import Cluster, GpuRequest, Team
    from billing.metering.aggregates import refresh_usage_aggregates
    from billing.metering.pull_chunks import MAX_CHUNK_HOURS as CHUNK_HOURS
    from billing.metering.services import _collect, _read_hours, _write_chunk, prometheus_client_for
    from billing.models import UtilizationRollup
    from tests.factories import GpuRequestFactory, TeamFactory

    teams = {slug: TeamFactory(slug=slug) for slug in TEAMS}
    first_request = 100_000
    devs = devices(args.gpus, first_request)
    for d in devs:
        if d.pod:
            GpuRequestFactory(id=int(d.pod.split("-")[1]), team=teams[d.namespace[5:]], requester__username="bench")

    start = datetime.now(UTC).replace(hour=0, minute=0, second=0, microsecond=0) - timedelta(days=2)
    if args.hours > CHUNK_HOURS:
        sys.exit(f"--hours: a pull writes at most {CHUNK_HOURS} hours at a time")
    # A day of 1,000 GPUs is a long query on a small, busy machine: the read is not what is measured.
    prometheus = PrometheusServer(extra_args=["--query.timeout=30m"])
    try:
        end = start + timedelta(hours=args.hours)
        now = end + timedelta(minutes=10)
        hours = [start + timedelta(hours=h) for h in range(args.hours)]
        cluster = Cluster.objects.create(
            name="bench", backend="gitops", gitops_path="bench", prometheus_url=prometheus.url
        )
        team_by_namespace = dict(Team.objects.values_list("namespace", "id"))
        if args.no_prometheus:
            read_seconds, started = None, time.perf_counter()
            collected = synthetic_day(devs, hours, team_by_namespace)
        else:
            t0 = time.perf_counter()
            files = write_history(devs, start, args.hours, prometheus.root, parts=os.cpu_count() or 2)
            t1 = time.perf_counter()
            backfill_parallel(files, prometheus.data_dir, prometheus.root)
            t2 = time.perf_counter()
            prometheus.start(timeout=120)
            samples = args.gpus * args.hours * 60 * 3
            print(f"history: {samples:,} samples; generated in {t1 - t0:.1f} s, promtool {t2 - t1:.1f} s")
            # The day is read once (what a pull reads and rolls up); the write a pull makes of it is what is timed.
            started = time.perf_counter()
            series, _ = _read_hours(prometheus_client_for(cluster), hours[0], hours[-1], recorded=False)
            read_seconds = time.perf_counter() - started
            started = time.perf_counter()
            collected = _collect(
                series,
                cluster=cluster,
                team_by_namespace=team_by_namespace,
                request_team=dict(GpuRequest.objects.values_list("id", "team_id")),
            )
        rollup_seconds = time.perf_counter() - started
        writes, copies, rows = [], [], []
        for _ in range(args.repeat):
            # Each run ingests the day afresh, as production ingests an hour once; the reset is not timed.
            forget(cluster)
            started = time.perf_counter()
            count = _write_chunk(cluster=cluster, hours=hours, collected=collected, complete_before=end, now=now)
            writes.append(time.perf_counter() - started)
            if not rows:
                rows = list(UtilizationRollup.objects.filter(cluster=cluster).order_by("id").values_list(*COLUMNS))
            copies.append(copy_baseline(UtilizationRollup._meta.db_table, rows))
        # A re-read of the same day (a catch-up over hours already held) replaces the same rows.
        started = time.perf_counter()
        _write_chunk(cluster=cluster, hours=hours, collected=collected, complete_before=end, now=now)
        reread_seconds = time.perf_counter() - started
        started = time.perf_counter()
        with transaction.atomic():
            refresh_usage_aggregates(cluster_id=cluster.pk, start=start, end=end)
        totals_seconds = time.perf_counter() - started
        with connection.cursor() as cursor:
            cursor.execute("DROP TABLE IF EXISTS bench_copy")
    finally:
        prometheus.cleanup()
        connection.creation.destroy_test_db(bench_db, verbosity=0)
    ratios = [copy / write for copy, write in zip(copies, writes, strict=True)]
    print(f"machine: {os.cpu_count()} cores; PostgreSQL; {args.repeat} runs, each a fresh ingest of the same day")
    print(f"ingest of {args.gpus} GPUs x {args.hours} h: {count:,} rollup rows")
    if read_seconds is not None:
        print(f"  read (Prometheus, {len(rows) // max(1, args.hours)} series x 7 queries, once): {read_seconds:.1f} s")
    else:
        print("  read: none (--no-prometheus: the rollups were built in Python)")
    print(f"  roll-up and attribution (Python, once): {rollup_seconds:.2f} s")
    print(f"  write (COPY of hours never read, daily/monthly totals, ingest log, watermark): {spread(writes)}")
    print(f"    of which the daily/monthly totals (refreshed alone): {totals_seconds:.3f} s")
    print(f"  PostgreSQL COPY of the same rows into an empty table: {spread(copies)}")
    print(f"utilization ingest vs COPY (COPY time / write time, target >= 0.33x): {spread(ratios, unit='x', digits=2)}")
    record(
        "ingest",
        f"ingest write / COPY of the same rows ({args.gpus} GPUs x {args.hours} h)",
        ratios,
        Target(AT_LEAST, 0.33),
        detail="read from Prometheus" if read_seconds is not None else "rollups built in Python (--no-prometheus)",
    )
    print(
        f"  re-read of the same day (staged and upserted: replaces the rows): write {reread_seconds:.3f} s, "
        f"{statistics.median(copies) / reread_seconds:.2f}x of the median COPY"
    )


def synthetic_day(devs: list[FakeDevice], hours: list[datetime], team_by_namespace: dict[str, int]):
    """What ``_collect`` makes of a fully scraped day of the devices, built directly (``--no-prometheus``)."""
    from billing.metering.services import _Collected
    from gpucore.attribution import GpuIdentity, HourStats, Owner, request_id_from_pod

    rollups, covered = {}, {}
    for i, device in enumerate(devs):
        identity = GpuIdentity(
            cluster="bench", uuid=device.uuid, model_name=device.model_name, host=device.host, gpu_index=device.gpu
        )
        owner = Owner(
            device.namespace, device.pod, team_by_namespace.get(device.namespace), request_id_from_pod(device.pod)
        )
        stats = HourStats(60, i % 101, 100.0, 1024.0 * (i % 80), 1024.0 * (i % 80) + 59, (350 + i % 300) / 1000)
        for hour in hours:
            rollups[(hour, device.uuid, "", device.namespace, device.pod)] = (identity, owner, stats)
            covered[(hour, device.uuid, "")] = 60
    return _Collected(rollups=rollups, covered=covered)


def forget(cluster) -> None:
    """Remove what a pull of the cluster wrote: rollups, ingest log, watermark and usage totals."""
    from django.db import connection

    from billing.models import (
        DailyUsage,
        MonthlyUsage,
        UtilizationIngestHour,
        UtilizationRollup,
        UtilizationWatermark,
    )

    for model in (UtilizationRollup, UtilizationIngestHour, UtilizationWatermark, DailyUsage, MonthlyUsage):
        model.objects.filter(cluster=cluster).delete()
    # Each fresh ingest meets a table without the dead rows of the last one, as the COPY baseline's is empty.
    with connection.cursor() as cursor:
        cursor.execute("VACUUM ANALYZE billing_utilizationrollup")


def spread(values, *, unit: str = "s", digits: int = 3) -> str:
    """min / median / max of the values."""
    values = sorted(values)
    return (
        " / ".join(
            f"{v:.{digits}f}{unit if unit == 'x' else ' ' + unit}"
            for v in (values[0], statistics.median(values), values[-1])
        )
        + " (min / median / max)"
    )


if __name__ == "__main__":
    main()
