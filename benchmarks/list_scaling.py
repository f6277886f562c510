"""List latency as the table grows: the requests API and the busy pages at 1,000, 10,000 and 100,000 GPU requests.

Target: list latency stays flat from 1,000 to 100,000 requests in the database (<= 1.3x). The demo organisation
is seeded with ``--teams`` teams in all (100), then the table is topped up to each size, spread over them, with
requests that ended two months ago (a short frozen spec each, so the 100,000 rows load in seconds), 1 % of the
table waiting for approval (``--pending-share``; at least a page more than the queue shows: 26, 100, then 1,000
requests); at each size the database is analysed and every
endpoint is asked ``--requests`` times in-process (Django test client, logged in as the demo member and approver),
three runs. Printed: the median latency at each size (min/median/max of the runs' medians) and its ratio to the
smallest size; flat is ~1x, and each run's ratio of the largest size to the smallest is reported against the target.
PostgreSQL when ``DATABASE_URL`` names one (a fresh ``<name>_bench`` database), else SQLite.

    .venv/bin/python benchmarks/list_scaling.py [--sizes 1000,10000,100000] [--requests 30] [--runs 3] [--only TEXT]
        [--pending-share 0.01] [--teams 100]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from datetime import timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.bench_results import AT_MOST, Target, record  # noqa: E402

FLAT = Target(AT_MOST, 1.3)  # the largest size's latency over the smallest's

CORE_SPEC_KEYS = ("strategy", "resource_name", "quantity", "replicas", "gpu_model", "mig_profile", "node_selector")


def add_teams(count: int) -> list[int]:
    """Teams up to ``count`` in all (the demo has three), each with its namespace; returns every team's id."""
    from allocations.models import Team

    missing = count - Team.objects.count()
    Team.objects.bulk_create(
        Team(slug=f"scale-{n:03d}", name=f"Scale {n:03d}", namespace=f"team-scale-{n:03d}") for n in range(missing)
    )
    return list(Team.objects.order_by("pk").values_list("pk", flat=True))


def top_up(total: int, pending_share: float, team_ids: list[int]) -> None:
    """Add requests (copies of a demo request, a short spec) until the table holds ``total`` rows, spread over the
    teams: ended two months ago, but for ``pending_share`` of the table waiting for approval, so the approval queue
    grows with it."""
    from django.db import connection
    from django.utils import timezone

    from allocations.approvals.pending_queues import QUEUE_PAGE_SIZE
    from allocations.models import GpuRequest, RequestStatus

    missing = total - GpuRequest.objects.count()
    template = GpuRequest.objects.filter(team__slug="vision").order_by("pk").first()
    # The row's own columns: not the id, nor what the database generates (the spec's text).
    copied = [f.attname for f in GpuRequest._meta.concrete_fields if f.attname != "id" and not f.generated]
    columns = {name: getattr(template, name) for name in copied}
    ended = timezone.now() - timedelta(days=62)
    columns.update(
        status=RequestStatus.RELEASED,
        spec={key: template.spec.get(key) for key in CORE_SPEC_KEYS},
        activated_at=ended - timedelta(hours=5),
        ended_at=ended,
        created_at=ended - timedelta(hours=6),
    )
    # At least one full page of the queue more than there is, so every size shows the same 25 rows.
    wanted = max(int(total * pending_share), QUEUE_PAGE_SIZE + 1)
    waiting = max(wanted - GpuRequest.objects.filter(status=RequestStatus.PENDING_APPROVAL).count(), 0)
    submitted = timezone.now() - timedelta(days=1)
    for start in range(0, max(missing, 0), 5000):
        batch = []
        for n in range(start, min(start + 5000, missing)):
            row = {**columns, "name": f"scale-{n}", "team_id": team_ids[n % len(team_ids)]}
            if n < waiting:
                row.update(
                    status=RequestStatus.PENDING_APPROVAL,
                    activated_at=None,
                    ended_at=None,
                    submitted_at=submitted + timedelta(seconds=n),
                    created_at=submitted + timedelta(seconds=n),
                )
            batch.append(GpuRequest(**row))
        GpuRequest.objects.bulk_create(batch)
    if connection.vendor == "postgresql":
        # As autovacuum leaves a table in production: statistics, and a visibility map so that counting the
        # visible rows can read the index alone instead of every heap page a bulk load just wrote.
        with connection.cursor() as cursor:
            cursor.execute("VACUUM ANALYZE")


def median_ms(client, url: str, count: int) -> float:
    times = []
    for _ in range(count):
        start = time.perf_counter()
        response = client.get(url)
        times.append(time.perf_counter() - start)
        if response.status_code != 200:
            raise SystemExit(f"{url} answered {response.status_code}")
    return statistics.median(times) * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="1000,10000,100000", help="requests in the table, comma-separated")
    parser.add_argument("--requests", type=int, default=30, help="requests per endpoint per run")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--only", default="", help="measure only the endpoints and pages whose names contain this")
    parser.add_argument(
        "--pending-share", type=float, default=0.01, help="share of the table waiting for approval (the queue's size)"
    )
    parser.add_argument(
        "--teams", type=int, default=100, help="teams the requests are spread over (the demo's 3 and more)"
    )
    args = parser.parse_args()
    sizes = sorted(int(size) for size in args.sizes.split(","))

    from benchmarks.bench_database import bench_database_url

    workdir = Path(tempfile.mkdtemp(prefix="bench-scale-"))
    os.environ["DJANGO_SETTINGS_MODULE"] = "benchmarks.bench_settings"
    os.environ["DATABASE_URL"], database = bench_database_url(workdir)
    os.environ["PORTAL_VAR_DIR"] = str(workdir)
    import django

    django.setup()
    import logging

    from django.contrib.auth.models import User
    from django.core.management import call_command
    from django.test import Client, override_settings
    from django.urls import reverse
    from rest_framework.test import APIClient

    from allocations.models import GpuRequest

    call_command("migrate", verbosity=0)
    with override_settings(DEBUG=True):
        call_command("seed_demo", verbosity=0)
    logging.disable(logging.WARNING)
    member = User.objects.get(username="alice")
    detail_id = GpuRequest.objects.filter(team__slug="vision").order_by("pk").values_list("pk", flat=True)[0]
    api, page, approver = APIClient(), Client(), Client()
    api.force_authenticate(member)
    page.force_login(member)
    approver.force_login(User.objects.get(username="carol"))
    endpoints = {
        "GET /api/v1/requests/": (api, "/api/v1/requests/"),
        "GET /api/v1/requests/?brief=true": (api, "/api/v1/requests/?brief=true"),
        "GET /api/v1/requests/?after=<id>&brief=true": (api, f"/api/v1/requests/?after={detail_id}&brief=true"),
        "GET /api/v1/requests/{id}/": (api, f"/api/v1/requests/{detail_id}/"),
        "page /requests/ (my requests)": (page, "/requests/"),
        "page / (home, member)": (page, "/"),
        "page /approvals/ (approval queue)": (approver, "/approvals/"),
        "page /requests/{id}/ (request page)": (page, reverse("allocations:request-detail", args=[detail_id])),
    }
    endpoints = {name: endpoint for name, endpoint in endpoints.items() if args.only in name}
    figures: dict[str, dict[int, list[float]]] = {name: {} for name in endpoints}
    team_ids = add_teams(args.teams)
    for size in sizes:
        top_up(size, args.pending_share, team_ids)
        for client, url in endpoints.values():
            client.get(url)  # warm: caches, plans
        for name, (client, url) in endpoints.items():
            figures[name][size] = [median_ms(client, url, args.requests) for _ in range(args.runs)]

    def spread(values: list[float]) -> str:
        return f"{min(values):.1f}/{statistics.median(values):.1f}/{max(values):.1f}"

    print(
        f"{database}; {os.cpu_count()} CPU cores (shared machines give noisy figures); Django test client in-process, "
        f"{args.requests} requests per endpoint, {args.runs} runs; {len(team_ids)} teams; "
        f"{args.pending_share:.0%} of the requests wait for approval; median ms (min/median/max of the runs), and the "
        f"ratio of each size's median to {sizes[0]:,} rows"
    )
    print(f"{'endpoint':44} " + " ".join(f"{f'{size:,} rows':>22}" for size in sizes))
    for name in endpoints:
        base = statistics.median(figures[name][sizes[0]])
        cells = [
            f"{spread(figures[name][size])} ({statistics.median(figures[name][size]) / base:.2f}x)" for size in sizes
        ]
        print(f"{name:44} " + " ".join(f"{cell:>22}" for cell in cells))
        by_run = [big / small for big, small in zip(figures[name][sizes[-1]], figures[name][sizes[0]], strict=True)]
        record(
            "list_scaling",
            f"{name} at {sizes[-1]:,} / {sizes[0]:,} rows",
            by_run,
            FLAT,
            detail=f"median {statistics.median(figures[name][sizes[-1]]):.1f} ms at {sizes[-1]:,}",
        )
    print(f"target: flat from {sizes[0]:,} to {sizes[-1]:,} requests (each run's ratio {FLAT}x)")


if __name__ == "__main__":
    main()
