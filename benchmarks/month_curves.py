"""One cold rebuild of the month-so-far curves (``billing.costs.month_to_date``) at 5,000 and 50,000
requests held this month, for the organisation and for one team, against a raw SQL read of the same request rows'
columns measured in the same run (the baseline: what reading them costs with no ORM and no arithmetic). It also
times what another worker pays instead of a build once one process has built the organisation's curves: reading
them from the shared cache (Redis when ``CACHE_URL`` names one, as in production; else the local-memory cache).

The requests are copies of the demo organisation's (seed_demo) requests that ever held GPUs, spread over the teams,
the month's hours and their SLA tiers and pools, a third of them released since. Each figure is the min/median/max of
``--repeat`` builds; no assertion on time. PostgreSQL when ``DATABASE_URL`` names one (a ``bench_curves_*`` database
of its own), else SQLite.

    .venv/bin/python benchmarks/month_curves.py [--sizes 5000,50000] [--repeat 3] [--profile]
"""

from __future__ import annotations

import argparse
import pickle
import statistics
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.bench_cost_data import setup_django, spread  # noqa: E402


def add_requests(count: int, now: datetime) -> None:
    """``count`` more requests held this month: copies of the seeded requests that held GPUs."""
    from allocations.models import GpuRequest, RequestStatus

    templates = list(GpuRequest.objects.filter(activated_at__isnull=False).order_by("pk"))
    month = datetime(now.year, now.month, 1, tzinfo=UTC)
    minutes = max(1, int((now - month).total_seconds() // 60))
    fields = [f.attname for f in GpuRequest._meta.concrete_fields if f.attname != "id" and not f.generated]
    copies = []
    for n in range(count):
        template = templates[n % len(templates)]
        columns = {name: getattr(template, name) for name in fields}
        activated = month + timedelta(minutes=(n * 7919) % minutes)
        released = n % 3 == 0
        columns.update(
            name=f"bench-{n}",
            activated_at=activated,
            status=RequestStatus.RELEASED if released else RequestStatus.ACTIVE,
            ended_at=min(now, activated + timedelta(hours=1 + n % 50)) if released else None,
        )
        copies.append(GpuRequest(**columns))
    GpuRequest.objects.bulk_create(copies, batch_size=2000)


def raw_read() -> int:
    """The baseline: the same rows' columns the curves need, by one raw SQL statement, as tuples."""
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT id, team_id, name, sla_tier_id, node_pool_id, resource_name, gpu_count, replicas, "
            "gpu_model_requested, spec->'strategy', spec->'resource_name', spec->'quantity', spec->'replicas', "
            "spec->'gpu_model', spec->'mig_profile', spec->'time_slice_replicas', spec->'node_selector', "
            "activated_at, ended_at, status, updated_at FROM allocations_gpurequest "
            "WHERE activated_at IS NOT NULL ORDER BY id"
        )
        return len(cursor.fetchall())


def measure(fn, repeat: int) -> list[float]:
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        fn()
        times.append(time.perf_counter() - started)
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="5000,50000")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--profile", action="store_true", help="print a pyinstrument profile of one org rebuild")
    args = parser.parse_args()
    setup_django("curves")
    from django.conf import settings
    from django.core.management import call_command
    from django.db import connection
    from django.test import override_settings
    from django.utils import timezone

    from allocations.models import GpuRequest, Team
    from billing.costs.chargeback import build_month_curves

    with override_settings(DEBUG=True):
        call_command("seed_demo", verbosity=0)
    settings.DEBUG = False
    now = timezone.now()
    month = now.astimezone(UTC).date().replace(day=1)
    held = 0
    from django.core.cache import cache

    backend = settings.CACHES["default"]["BACKEND"].rsplit(".", 1)[-1]
    print(f"database: {connection.vendor}; cache: {backend}; figures in seconds, min/median/max of {args.repeat}")
    for size in (int(s) for s in args.sizes.split(",")):
        add_requests(size - held, now)
        held = size
        if connection.vendor == "postgresql":
            with connection.cursor() as cursor:
                cursor.execute("ANALYZE")
        team = Team.objects.get(slug="vision")
        rows = GpuRequest.objects.count()
        base = measure(raw_read, args.repeat)
        org = measure(lambda: build_month_curves(month=month, teams=None, share_idle=False), args.repeat)
        shared = measure(lambda: build_month_curves(month=month, teams=None, share_idle=True), args.repeat)
        one = measure(lambda team=team: build_month_curves(month=month, teams=[team], share_idle=False), args.repeat)
        # What a worker whose own copy is stale pays: the curves another process left in the shared cache.
        shared_key = f"benchmarks:month-curves:{size}"
        cache.set(shared_key, build_month_curves(month=month, teams=None, share_idle=False))
        stored_kb = len(pickle.dumps(cache.get(shared_key))) / 1024
        from_cache = measure(lambda key=shared_key: cache.get(key), args.repeat)
        b = statistics.median(base)
        print(f"{size:>6} held this month ({rows} requests): raw SQL read {spread(base, '{:.3f}')}")
        for label, times in (
            ("organisation", org),
            ("organisation, idle shared", shared),
            ("one team", one),
            (f"organisation, from the cache ({stored_kb:,.0f} KB)", from_cache),
        ):
            ratios = [t / b for t in times]
            print(f"    {label:<26} {spread(times, '{:.3f}')} s = {spread(ratios, '{:.2f}')}x the raw read")
        cache.delete(shared_key)
        if args.profile:
            from pyinstrument import Profiler

            profiler = Profiler()
            with profiler:
                build_month_curves(month=month, teams=None, share_idle=False)
            print(profiler.output_text(unicode=False, color=False, show_all=False))
    connection.creation.destroy_test_db(settings.DATABASES["default"]["NAME"], verbosity=0)


if __name__ == "__main__":
    main()
