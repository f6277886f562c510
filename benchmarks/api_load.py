"""API load: p50/p99 latency and throughput of the requests list and the recommendation endpoint under gunicorn.

A bounded run on loopback: gunicorn serves the portal (2 workers), a few client threads send a fixed number of
requests per endpoint, and every figure is printed next to the same figures for a bare Django view measured in the
same run, as a ratio. It also counts SQL queries per list page at two data sizes (they must not grow with the data).
No assertion on time.

    .venv/bin/python benchmarks/api_load.py [--requests 400] [--concurrency 4]
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

PROFILE = {"workload_type": "realtime_inference", "gpu_memory_gb": 8, "sla_tier": "tier2_batch"}


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def prepare_database(env: dict[str, str], extra_requests: int) -> str:
    """Migrate, seed the demo organisation, add requests, and return alice's API token."""
    os.environ.update(env)
    import django

    django.setup()
    from django.core.management import call_command
    from django.test import override_settings
    from rest_framework.authtoken.models import Token

    from allocations.models import GpuRequest

    call_command("migrate", verbosity=0)
    with override_settings(DEBUG=True):
        call_command("seed_demo", verbosity=0)
    template = GpuRequest.objects.filter(team__slug="vision").first()
    copies = []
    for n in range(extra_requests):
        template.pk = None
        template.name = f"bench-{n}"
        copies.append(GpuRequest(**{f.attname: getattr(template, f.attname) for f in GpuRequest._meta.concrete_fields}))
    GpuRequest.objects.bulk_create(copies)
    token, _ = Token.objects.get_or_create(user=template.requester)
    return token.key


def list_queries(token: str) -> dict[int, int]:
    """SQL queries for one page of GET /api/v1/requests/ with the data as it is, and with 4x more requests."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext
    from rest_framework.test import APIClient

    from allocations.models import GpuRequest

    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {token}")
    counts = {}
    for _ in range(2):
        with CaptureQueriesContext(connection) as ctx:
            assert client.get("/api/v1/requests/").status_code == 200
        counts[GpuRequest.objects.count()] = len(ctx.captured_queries)
        rows = list(GpuRequest.objects.all())
        for row in rows * 3:
            row.pk = None
        GpuRequest.objects.bulk_create(rows * 3)
    return counts


def hammer(port: int, method: str, path: str, body: bytes | None, headers: dict[str, str], total: int, threads: int):
    latencies: list[float] = []
    statuses: dict[int, int] = {}
    lock = threading.Lock()
    per_thread = total // threads

    def run() -> None:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        local, codes = [], {}
        for _ in range(per_thread):
            start = time.perf_counter()
            conn.request(method, path, body=body, headers=headers)
            response = conn.getresponse()
            response.read()
            local.append(time.perf_counter() - start)
            codes[response.status] = codes.get(response.status, 0) + 1
        conn.close()
        with lock:
            latencies.extend(local)
            for code, n in codes.items():
                statuses[code] = statuses.get(code, 0) + n

    workers = [threading.Thread(target=run) for _ in range(threads)]
    started = time.perf_counter()
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    elapsed = time.perf_counter() - started
    latencies.sort()
    return {
        "p50_ms": statistics.median(latencies) * 1000,
        "p99_ms": latencies[int(len(latencies) * 0.99) - 1] * 1000,
        "rps": len(latencies) / elapsed,
        "statuses": statuses,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--requests", type=int, default=400, help="requests per endpoint")
    parser.add_argument("--concurrency", type=int, default=4)
    parser.add_argument("--extra-requests", type=int, default=60, help="GPU requests added to the demo data")
    args = parser.parse_args()

    workdir = Path(tempfile.mkdtemp(prefix="bench-api-"))
    env = {
        "DJANGO_SETTINGS_MODULE": "benchmarks.bench_settings",
        # Its own database, whatever DATABASE_URL says: the run creates and fills it.
        "DATABASE_URL": f"sqlite:///{workdir / 'bench.sqlite3'}",
        "PORTAL_VAR_DIR": str(workdir),
    }
    token = prepare_database(env, args.extra_requests)
    port = free_port()
    server = subprocess.Popen(
        [
            str(ROOT / ".venv/bin/gunicorn"),
            "portal.wsgi:application",
            "-w",
            "2",
            "-b",
            f"127.0.0.1:{port}",
            "--log-level",
            "warning",
        ],
        cwd=ROOT,
        env={**os.environ, **env},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        for _ in range(100):
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                break
            except OSError:
                time.sleep(0.1)
        auth = {"Authorization": f"Token {token}", "Content-Type": "application/json", "Host": "127.0.0.1"}
        endpoints = {
            "bare Django view": ("GET", "/bench/bare", None),
            "GET /api/v1/requests/": ("GET", "/api/v1/requests/", None),
            "POST /api/v1/recommendations/": ("POST", "/api/v1/recommendations/", json.dumps(PROFILE).encode()),
        }
        for method, path, body in endpoints.values():  # warm both workers
            hammer(port, method, path, body, auth, 20, 2)
        results = {
            name: hammer(port, m, p, b, auth, args.requests, args.concurrency) for name, (m, p, b) in endpoints.items()
        }
    finally:
        server.terminate()
        server.wait(timeout=10)

    base = results["bare Django view"]
    print(f"gunicorn 2 workers, {args.concurrency} client threads, {args.requests} requests per endpoint, SQLite")
    print(f"{'endpoint':32} {'p50 ms':>8} {'p99 ms':>8} {'req/s':>8}   {'p50 x':>6} {'p99 x':>6} {'thr x':>6}  status")
    for name, r in results.items():
        print(
            f"{name:32} {r['p50_ms']:8.2f} {r['p99_ms']:8.2f} {r['rps']:8.0f}   {r['p50_ms'] / base['p50_ms']:6.1f} "
            f"{r['p99_ms'] / base['p99_ms']:6.1f} {base['rps'] / r['rps']:6.1f}  {r['statuses']}"
        )
    for name, r in results.items():
        if set(r["statuses"]) != {200}:
            raise SystemExit(f"{name} answered {r['statuses']}")
    counts = list_queries(token)
    print(
        "SQL queries per list page, by requests in the database: "
        + ", ".join(f"{rows} rows -> {n} queries" for rows, n in counts.items())
    )


if __name__ == "__main__":
    main()
