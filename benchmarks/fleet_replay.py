"""Fleet replay: a simulated month of a GPU fleet, driven through the portal's real code paths, without and with the
idle reclaim, side by side.

A fleet of ``--gpus`` dedicated H100s (8-GPU nodes, four pools on one GitOps cluster) and eight teams. Requests of
every workload type arrive over ``--days`` days (a seeded Poisson process, ``--requests`` in all), each with a
utilization profile by type: notebooks in working sessions with idle stretches of hours between them, batch bursts,
real-time inference with diurnal traffic, training at steady high use. Every hour of simulated time (time-machine
moves the clock) the replay runs what production runs:

- arrivals submit through ``gpu_request_submit`` (the decision framework, quota, events);
- an approver approves the oldest pending requests through ``gpu_request_approve`` (quota and pool capacity checked;
  a request that does not fit waits), and provisioning applies it through the GitOps gateway (Celery eager);
- the hour that ended is written as DCGM rollups for every running device (a few notebook hours left incomplete, as
  a Prometheus outage leaves them) and the daily and monthly totals are refreshed (``refresh_usage_aggregates``);
- expiry (``gpu_requests_expire``) ends requests at their duration;
- with reclaim on, the hourly pass (``idle_reclaim_run``) warns and suspends idle notebooks; an owner who is warned
  and means to work within the warning period presses keep (``gpu_request_keep``), and an owner who comes back to
  a suspended notebook resumes it (``gpu_request_resume``, which waits when the pool is full).

Printed, for "no reclaim" and "reclaim on": GPU-hours held (billing's held spans, ``month_chargeback``), busy (the
rollups' utilization), reclaimed (suspended notebook hours within their requested life), median and p95 wait to
start, cost per team, false reclaims (a suspension whose justifying hours were busy or incomplete, or whose owner
was working in the hour it was suspended: must be 0), and the share of the idle notebook GPU-hours of the no-reclaim
run that reclaim gave back (target >= 1/3).

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/gpu_portal .venv/bin/python benchmarks/fleet_replay.py \\
        [--gpus 512] [--requests 2000] [--days 30] [--seed 7]

The two scenarios run at once, each in a database of its own; each writes its outcome as JSON (the folder is
printed first), and ``--from-outcomes FOLDER`` prints the table again from them.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.fleet_replay_plan import IDLE_UTIL, START, TEAMS, Planned, plan
from benchmarks.fleet_replay_report import Outcome, measure, print_table


def setup_django(suffix: str) -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "portal.settings.test")
    if not os.environ.get("DATABASE_URL", "").startswith(("postgres://", "postgresql://")):
        sys.exit("benchmarks/fleet_replay.py runs on PostgreSQL: set DATABASE_URL=postgres://...")
    import django

    django.setup()
    from django.conf import settings
    from django.db import connection

    settings.DATABASES["default"]["TEST"]["NAME"] = f"bench_fleet_{suffix}_{settings.DATABASES['default']['NAME']}"
    name = connection.creation.create_test_db(verbosity=0, autoclobber=True, keepdb=False)
    # A throwaway database: commits need not wait for the disk (what is measured is the portal's work, and the
    # replay makes tens of thousands of small transactions, as production does over a month).
    with connection.cursor() as cursor:
        cursor.execute(f'ALTER DATABASE "{name}" SET synchronous_commit = off')
    connection.close()
    settings.PORTAL_GITOPS_ROOT = tempfile.mkdtemp(prefix="fleet-replay-")
    settings.IDLE_RECLAIM_ENABLED = True


def build_fleet(gpus: int) -> dict:
    from django.contrib.auth import get_user_model
    from django.contrib.auth.models import Group

    from allocations.models import Cluster, GpuModel, Membership, NodePool, Quota, Role, Team
    from allocations.selectors import APPROVERS_GROUP

    users = get_user_model()
    cluster = Cluster.objects.create(name="fleet", backend="gitops", gitops_path="fleet")
    model = GpuModel.objects.get(name="H100-80GB")
    nodes = max(1, gpus // 8 // 4)
    for n in range(4):
        NodePool.objects.create(cluster=cluster, name=f"h100-{n}", gpu_model=model, node_count=nodes, gpus_per_node=8)
    approver = users.objects.create_user("approver", "approver@example.com", "x")
    approver.groups.add(Group.objects.get(name=APPROVERS_GROUP))
    owners = {}
    for slug in TEAMS:
        team = Team.objects.create(slug=slug, name=slug.title())
        # Quota is not what binds here: the fleet's capacity is.
        Quota.objects.create(team=team, resource_name="nvidia.com/gpu", limit=100_000)
        owner = users.objects.create_user(f"{slug}-owner", f"{slug}@example.com", "x")
        Membership.objects.create(user=owner, team=team, role=Role.LEAD)
        owners[slug] = (team, owner)
    return {"cluster": cluster, "approver": approver, "owners": owners, "gpus": nodes * 8 * 4}


def replay(planned: list[Planned], fleet: dict, *, days: int, reclaim: bool, label: str) -> Outcome:
    import time_machine
    from django.core.exceptions import ValidationError
    from django.db.models import Sum

    from allocations.clusters.provisioning import gpu_requests_expire
    from allocations.lifecycle import InvalidTransition
    from allocations.models import QUOTA_HOLDING_STATUSES, GpuRequest, NodePool, RequestEvent, RequestStatus
    from allocations.requests.reclaim_services import gpu_request_keep, gpu_request_resume
    from allocations.requests.services import gpu_request_approve, gpu_request_submit
    from billing.costs.chargeback import month_chargeback
    from billing.metering.aggregates import refresh_usage_aggregates
    from billing.models import UtilizationRollup
    from billing.reclaim.services import idle_reclaim_run

    started = time.perf_counter()
    outcome = Outcome(label=label)
    cluster, approver = fleet["cluster"], fleet["approver"]
    capacity = {pool.pk: pool.gpu_total for pool in NodePool.objects.filter(cluster=cluster)}
    by_id: dict[int, Planned] = {}
    arrivals = list(planned)
    life_start: dict[int, datetime] = {}  # when its requested life began (first activation)
    hours = days * 24
    for hour in range(hours + 1):
        if hour and hour % 24 == 0:
            elapsed = time.perf_counter() - started
            print(f"{label}: day {hour // 24} of {days} replayed, {elapsed:.0f} s", file=sys.stderr, flush=True)
        now = START + timedelta(hours=hour, minutes=10)
        with time_machine.travel(now, tick=False):
            # 1. arrivals
            while arrivals and arrivals[0].arrive_hour <= hour:
                item = arrivals.pop(0)
                team, owner = fleet["owners"][item.team]
                request = gpu_request_submit(
                    acting_user=owner,
                    team=team,
                    name=f"{item.workload_type[:8]}-{item.index}",
                    profile_data={
                        "workload_type": item.workload_type,
                        "gpu_memory_gb": 60,
                        "gpu_count": item.gpus,
                        "replicas": item.replicas,
                        "sla_tier": item.tier,
                        "gpu_model": "H100-80GB",
                        "duration_hours": item.duration_hours,
                        "isolation_required": True,
                    },
                    # Notebooks start JupyterLab; every other type runs a command of its own.
                    command=None if item.workload_type == "development" else ["python", "run.py"],
                )
                item.request_id = request.pk
                by_id[request.pk] = item
            # 2. the approver: oldest first, what fits the pool now (the service checks again)
            held = dict(
                GpuRequest.objects.filter(status__in=QUOTA_HOLDING_STATUSES)
                .values_list("node_pool_id")
                .annotate(units=Sum("resource_units"))
            )
            pending = GpuRequest.objects.filter(status=RequestStatus.PENDING_APPROVAL).order_by("submitted_at", "pk")
            for request in pending.select_related("team", "node_pool", "sla_tier"):
                pool = request.node_pool_id
                if held.get(pool, 0) + request.resource_units > capacity.get(pool, 0):
                    continue
                try:
                    gpu_request_approve(request=request, acting_user=approver)
                except ValidationError:
                    continue
                held[pool] = held.get(pool, 0) + request.resource_units
            # 3. the hour that ended, as rollups of every running device
            if hour:
                write_hour(hour - 1, by_id, life_start, cluster, UtilizationRollup)
                refresh_usage_aggregates(
                    cluster_id=cluster.pk,
                    start=START + timedelta(hours=hour - 1),
                    end=START + timedelta(hours=hour),
                )
            for request_id, activated in GpuRequest.objects.filter(
                activated_at__isnull=False, pk__in=[pk for pk in by_id if pk not in life_start]
            ).values_list("pk", "activated_at"):
                life_start[request_id] = activated
            # 4. expiry, then the reclaim pass and the owners' answers
            gpu_requests_expire(now=now)
            if reclaim:
                result = idle_reclaim_run()
                for request_id in result.warned:
                    item = by_id[request_id]
                    if working_soon(item, life_start[request_id], now, within_hours=3):
                        try:
                            request = GpuRequest.objects.get(pk=request_id)
                            gpu_request_keep(request=request, acting_user=owner_of(fleet, item))
                            outcome.keeps += 1
                        except (ValidationError, InvalidTransition):
                            pass
                for request_id in result.suspended:
                    outcome.suspensions += 1
                    if false_reclaim(by_id[request_id], life_start[request_id], now, request_id, RequestEvent):
                        outcome.false_reclaims += 1
                for request in GpuRequest.objects.filter(status=RequestStatus.SUSPENDED).select_related("team"):
                    item = by_id[request.pk]
                    if busy_at(item, life_start[request.pk], now):
                        try:
                            gpu_request_resume(request=request, acting_user=owner_of(fleet, item))
                            outcome.resumes += 1
                        except (ValidationError, InvalidTransition):
                            pass  # the pool is full: the owner tries again next hour
    end = START + timedelta(hours=hours)
    measure(outcome, by_id, life_start, end, month_chargeback, UtilizationRollup, RequestEvent, GpuRequest)
    outcome.seconds = time.perf_counter() - started
    return outcome


def owner_of(fleet: dict, item: Planned):
    return fleet["owners"][item.team][1]


def life_hour(start: datetime, moment: datetime) -> int:
    return int((moment - start).total_seconds() // 3600)


def busy_at(item: Planned, start: datetime, moment: datetime) -> bool:
    h = life_hour(start, moment)
    return 0 <= h < len(item.busy) and item.busy[h] >= 5


def working_soon(item: Planned, start: datetime, now: datetime, *, within_hours: int) -> bool:
    """The owner, warned at ``now``, plans to work on the notebook in the next hours: they press keep."""
    return any(busy_at(item, start, now + timedelta(hours=k)) for k in range(within_hours + 1))


def false_reclaim(item: Planned, start: datetime, now: datetime, request_id: int, events) -> bool:
    """Suspended on a busy or incomplete hour, or while its owner was working."""
    event = events.objects.filter(request_id=request_id, to_status="suspended").order_by("-at").first()
    for reading in (event.details or {}).get("readings", []):
        h = life_hour(start, datetime.fromisoformat(reading["hour"]))
        if h in item.incomplete or (0 <= h < len(item.busy) and item.busy[h] >= 5):
            return True
    return busy_at(item, start, now)


def write_hour(hour: int, by_id: dict[int, Planned], life_start: dict, cluster, rollups) -> None:
    """The rollups of one ended hour: one per GPU of every request running through it, written with ``COPY`` (as the
    ingest writes its hours: benchmarks/ingest.py)."""
    from allocations.models import GpuRequest, RequestStatus

    begin = START + timedelta(hours=hour)
    running = GpuRequest.objects.filter(status=RequestStatus.ACTIVE, activated_at__lte=begin).values_list(
        "pk", "resource_units", "team_id", "team__namespace"
    )
    rows = []
    for request_id, units, team_id, namespace in running:
        item = by_id.get(request_id)
        start = life_start.get(request_id)
        if item is None or start is None:
            continue
        h = life_hour(start, begin)
        util = item.busy[h] if 0 <= h < len(item.busy) else IDLE_UTIL
        complete = h not in item.incomplete
        for gpu in range(units):
            rows.append(
                rollups(
                    cluster=cluster,
                    hour=begin,
                    gpu_uuid=f"GPU-{request_id:06d}-{gpu:02d}",
                    namespace=namespace,
                    pod=f"gpr-{request_id}-0",
                    team_id=team_id,
                    request_id=request_id,
                    gpu_model_name="NVIDIA H100 80GB HBM3",
                    sample_count=60 if complete else 41,
                    avg_utilization_pct=util,
                    peak_utilization_pct=min(100.0, util * 1.2),
                    avg_memory_used_mib=30_000 if util >= 5 else 900,
                    peak_memory_used_mib=40_000 if util >= 5 else 1_000,
                    energy_kwh=0.7 * (0.15 + util / 100),
                    is_complete=complete,
                    pulled_at=begin + timedelta(hours=1),
                )
            )
    copy_rows(rollups, rows)


def copy_rows(model, rows: list) -> None:
    """Write model instances with PostgreSQL ``COPY``: every concrete column but the id, as the model prepares it."""
    from django.db import connection

    if not rows:
        return
    fields = [f for f in model._meta.concrete_fields if not f.primary_key]
    columns = ", ".join(connection.ops.quote_name(f.column) for f in fields)
    with (
        connection.cursor() as cursor,
        cursor.connection.cursor().copy(
            f"COPY {connection.ops.quote_name(model._meta.db_table)} ({columns}) FROM STDIN"
        ) as copy,
    ):
        for row in rows:
            copy.write_row([f.get_db_prep_save(getattr(row, f.attname), connection) for f in fields])


SCENARIOS = {"off": (False, "no reclaim"), "on": (True, "reclaim on")}


def run_scenario(args: argparse.Namespace) -> Outcome:
    """One scenario in a database of its own (both replay the same seeded month)."""
    setup_django(f"replay_{args.scenario}")
    import logging

    logging.disable(logging.WARNING)
    planned = plan(requests=args.requests, days=args.days, seed=args.seed)
    fleet = build_fleet(args.gpus)
    reclaim, label = SCENARIOS[args.scenario]
    outcome = replay(planned, fleet, days=args.days, reclaim=reclaim, label=label)
    outcome.gpus = fleet["gpus"]
    return outcome


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--gpus", type=int, default=512)
    parser.add_argument("--requests", type=int, default=2000)
    parser.add_argument("--days", type=int, default=30)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument(
        "--scenario", choices=["both", *SCENARIOS], default="both", help="both: each in its own process, at once"
    )
    parser.add_argument("--outcome", type=Path, help="with one --scenario: write its outcome (JSON) here")
    parser.add_argument(
        "--from-outcomes", type=Path, help="print the table of a finished run's off.json and on.json in this folder"
    )
    args = parser.parse_args()
    if args.from_outcomes:
        off, on = (Outcome.from_json((args.from_outcomes / f"{name}.json").read_text()) for name in SCENARIOS)
        print_table(off, on, off.gpus, args.requests, args.days)
        return
    if args.scenario != "both":
        outcome = run_scenario(args)
        if args.outcome:
            args.outcome.write_text(outcome.to_json(), encoding="utf-8")
        return
    # The two scenarios share nothing but the seed: run them side by side, each against its own database.
    workdir = Path(tempfile.mkdtemp(prefix="fleet-replay-outcomes-"))
    print(f"fleet replay: outcomes in {workdir}", file=sys.stderr, flush=True)
    common = [*("--gpus", str(args.gpus), "--requests", str(args.requests)), *("--days", str(args.days))]
    children = {
        name: subprocess.Popen(
            [
                sys.executable,
                __file__,
                *common,
                "--seed",
                str(args.seed),
                "--scenario",
                name,
                "--outcome",
                str(workdir / f"{name}.json"),
            ]
        )
        for name in SCENARIOS
    }
    failed = [name for name, child in children.items() if child.wait() != 0]
    if failed:
        sys.exit(f"fleet replay: scenario {', '.join(failed)} failed")
    off, on = (Outcome.from_json((workdir / f"{name}.json").read_text(encoding="utf-8")) for name in SCENARIOS)
    print_table(off, on, off.gpus, args.requests, args.days)


if __name__ == "__main__":
    main()
