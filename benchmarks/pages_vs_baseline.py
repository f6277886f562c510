"""Every page and endpoint against the hand-tuned read path at ``0d64d9b``, both served by gunicorn in the same run.

The baseline is a git worktree of ``--baseline-commit`` under ``var/`` (``git worktree add --detach``, reused when
present). One PostgreSQL database is seeded by the baseline's own code (the demo organisation and
``--extra-requests`` more requests); the current tree gets a copy of it (``CREATE DATABASE .. TEMPLATE``) migrated by
its own migrations, so both read the same rows, each through its own schema (a tree may move a table the other still
reads, such as the sessions'). Each tree is served by gunicorn (2 sync workers) on loopback with the same settings
module (``benchmarks.bench_settings`` of that tree: DEBUG off, persistent connections) and both stay up for the run.

Every endpoint is then asked a fixed number of times by a few client threads (an API token, or a signed-in
browser's session cookie per role), on one server and then the other, the order alternating between endpoints and
runs, after a warm-up on both. Printed per endpoint: its throughput on each tree (median of the runs) and the ratio
current / baseline of each run as min/median/max (target >= 0.5x). Also printed: the recommendation API against a
DRF view that does nothing (``/bench/drf-floor``, the benchmarks' URLconf) on the same server with the same token
and body (target: throughput >= 0.5x, i.e. latency <= 2x). Verdicts are taken on the median; ``--strict`` exits
non-zero on a FAIL. No figure here depends on the machine's speed: both sides of a ratio are measured side by side.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/gpu_portal .venv/bin/python benchmarks/pages_vs_baseline.py
        [--runs 3] [--requests 800] [--page-requests 400] [--extra-requests 5000] [--only TEXT] [--skip TEXT] [--strict]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.bench_database import create_database, database_name, postgres_url  # noqa: E402
from benchmarks.bench_http import Server, hammer  # noqa: E402
from benchmarks.bench_results import AT_LEAST, Target, record, spread  # noqa: E402

BASELINE_COMMIT = "0d64d9b"
BENCHMARK = "pages_vs_baseline"
PAGE_TARGET = Target(AT_LEAST, 0.5)
API_OVER_NOOP_TARGET = Target(AT_LEAST, 0.5)
PROFILE = {"workload_type": "realtime_inference", "gpu_memory_gb": 8, "sla_tier": "tier2_batch"}
API = "/api/v1/requests/"
RECOMMEND = "POST /api/v1/recommendations/"
NOOP = "POST /bench/drf-floor (no-op DRF view)"
USERS = {"member": "alice", "lead": "dave", "approver": "carol", "finance": "finance"}


def baseline_worktree(commit: str) -> Path:
    """``var/baseline-<commit>``: a detached worktree of ``commit``, made once and reused."""
    tree = ROOT / "var" / f"baseline-{commit[:12]}"
    if (tree / "manage.py").exists():
        head = subprocess.run(["git", "-C", str(tree), "rev-parse", "HEAD"], capture_output=True, text=True)
        wanted = subprocess.run(["git", "-C", str(ROOT), "rev-parse", commit], capture_output=True, text=True)
        if head.returncode == 0 and head.stdout.strip() == wanted.stdout.strip():
            return tree
        sys.exit(f"{tree} is not a worktree of {commit}: remove it (git worktree remove --force {tree})")
    subprocess.run(["git", "-C", str(ROOT), "worktree", "prune"], check=True)
    subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", str(tree), commit], check=True)
    return tree


def in_tree(mode: str, tree: Path, env: dict[str, str], *args: str) -> str:
    """``benchmarks/bench_tree.py <mode> <tree> ...`` in a fresh process with ``env``: its output."""
    clean = {key: value for key, value in os.environ.items() if key != "PYTHONPATH"}
    done = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "bench_tree.py"), mode, str(tree), *args],
        env={**clean, **env},
        capture_output=True,
        text=True,
    )
    if done.returncode != 0:
        sys.exit(f"bench_tree.py {mode} {tree} failed:\n{done.stderr[-4000:]}")
    return done.stdout


def endpoints(seed: dict) -> dict[str, tuple[str, str, bytes | None, str]]:
    """name -> (method, path, body, who): who is ``token`` (the API token) or a role of ``USERS`` (its session)."""
    detail, after, team = seed["detail_id"], seed["keyset_after"], seed["team"]
    body = json.dumps(PROFILE).encode()
    return {
        "GET /api/v1/requests/": ("GET", "/api/v1/requests/", None, "token"),
        "GET /api/v1/requests/?brief=true": ("GET", "/api/v1/requests/?brief=true", None, "token"),
        "GET /api/v1/requests/?after=<id>&brief=true": ("GET", f"{API}?after={after}&brief=true", None, "token"),
        "GET /api/v1/requests/?fields=id,name,status": ("GET", f"{API}?fields=id,name,status", None, "token"),
        "GET /api/v1/requests/{id}/": ("GET", f"/api/v1/requests/{detail}/", None, "token"),
        RECOMMEND: ("POST", "/api/v1/recommendations/", body, "token"),
        NOOP: ("POST", "/bench/drf-floor", body, "token"),
        "page: signed-in layout, empty": ("GET", "/bench/page-floor", None, "member"),
        "page / (home, member)": ("GET", "/", None, "member"),
        "page / (home, lead)": ("GET", "/", None, "lead"),
        "page / (home, approver)": ("GET", "/", None, "approver"),
        "page /requests/ (request list)": ("GET", "/requests/", None, "member"),
        "page /requests/{id}/ (request page)": ("GET", f"/requests/{detail}/", None, "member"),
        "page /approvals/ (approval queue)": ("GET", "/approvals/", None, "approver"),
        "page /teams/{slug}/ (team page)": ("GET", f"/teams/{team}/", None, "lead"),
        "page /billing/dashboards/ (dashboards)": ("GET", "/billing/dashboards/", None, "finance"),
    }  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--baseline-commit", default=BASELINE_COMMIT)
    parser.add_argument("--runs", type=int, default=3, help="repetitions; ratios are printed as min/median/max")
    parser.add_argument("--requests", type=int, default=800, help="requests per API endpoint, per tree and run")
    parser.add_argument("--page-requests", type=int, default=400, help="requests per HTML page, per tree and run")
    parser.add_argument(
        "--seconds",
        type=float,
        default=3.0,
        help="about how long one measurement lasts: a slow page is asked fewer times (--min-requests at least), "
        "the same number on both trees",
    )
    parser.add_argument("--min-requests", type=int, default=20, help="the fewest requests per measurement")
    parser.add_argument(
        "--warm", type=int, default=20, help="untimed requests per endpoint and tree first (5 s at most)"
    )
    parser.add_argument("--concurrency", type=int, default=4, help="client threads")
    parser.add_argument("--extra-requests", type=int, default=5000, help="GPU requests added to the demo data")
    parser.add_argument("--only", default="", help="only the endpoints whose names contain this")
    parser.add_argument("--skip", default="", help="not the endpoints whose names contain this")
    parser.add_argument("--strict", action="store_true", help="exit non-zero when a row fails its target")
    args = parser.parse_args()
    url = postgres_url()
    if url is None:
        sys.exit("DATABASE_URL must name a PostgreSQL database (the benchmark creates <name>_pages* beside it)")

    baseline_tree = baseline_worktree(args.baseline_commit)
    settings = {"DJANGO_SETTINGS_MODULE": "benchmarks.bench_settings"}
    baseline_url, described = create_database(url, "pages")
    baseline_env = {**settings, "DATABASE_URL": baseline_url, "PORTAL_VAR_DIR": tempfile.mkdtemp(prefix="bench-base-")}
    print(f"seeding {described} with {baseline_tree.name}'s code ...", flush=True)
    seed = json.loads(in_tree("seed", baseline_tree, baseline_env, str(args.extra_requests)))
    current_url, _ = create_database(url, "pages_current", template=database_name(baseline_url))
    current_env = {**settings, "DATABASE_URL": current_url, "PORTAL_VAR_DIR": tempfile.mkdtemp(prefix="bench-cur-")}
    in_tree("migrate", ROOT, current_env)
    trees = {"current": (ROOT, current_env), "baseline": (baseline_tree, baseline_env)}
    cookies = {
        side: json.loads(in_tree("sessions", tree, env, *sorted(set(USERS.values()))))
        for side, (tree, env) in trees.items()
    }
    wanted = {
        name: spec
        for name, spec in endpoints(seed).items()
        if (args.only in name and not (args.skip and args.skip in name)) or name in (RECOMMEND, NOOP)
    }

    servers = {side: Server(tree, env) for side, (tree, env) in trees.items()}
    figures: dict[str, dict[str, list[dict]]] = {side: {name: [] for name in wanted} for side in servers}
    try:
        for server in servers.values():
            server.wait_ready()

        def ask(side: str, name: str, total: int, seconds: float | None = None) -> dict:
            method, path, body, who = wanted[name]
            headers = {"Host": "127.0.0.1", "Content-Type": "application/json"}
            if who == "token":
                headers["Authorization"] = f"Token {seed['token']}"
            else:
                headers["Cookie"] = cookies[side][USERS[who]]
            return hammer(servers[side].port, method, path, body, headers, total, args.concurrency, seconds=seconds)

        totals = {}
        for name in wanted:
            warm_rates = []
            for side in servers:
                warm = ask(side, name, args.warm, seconds=5)
                if set(warm["statuses"]) != {200}:
                    sys.exit(f"{side}: {name} answered {warm['statuses']}")
                # From the median latency, not the throughput: the first, cold requests weigh little on it.
                warm_rates.append(args.concurrency / warm["p50_ms"] * 1000)
            most = args.page_requests if name.startswith("page") else args.requests
            totals[name] = max(min(most, int(min(warm_rates) * args.seconds)), args.min_requests)
        sides = list(servers)
        for run in range(args.runs):
            for index, name in enumerate(wanted):
                for side in sides if (run + index) % 2 == 0 else reversed(sides):
                    figures[side][name].append(ask(side, name, totals[name]))
            print(f"run {run + 1} of {args.runs} done", flush=True)
    finally:
        for server in servers.values():
            server.stop()

    for side, by_name in figures.items():
        for name, measured in by_name.items():
            if any(set(m["statuses"]) != {200} for m in measured):
                sys.exit(f"{side}: {name} answered {[m['statuses'] for m in measured]}")
    failed = report(figures, seed, totals, args)
    if args.strict and failed:
        sys.exit(f"{len(failed)} rows below target: {', '.join(failed)}")


def report(
    figures: dict[str, dict[str, list[dict]]], seed: dict, totals: dict[str, int], args: argparse.Namespace
) -> list[str]:
    """Print the table and record its rows; the names of those below target."""
    current, baseline = figures["current"], figures["baseline"]
    failed = []
    print(
        f"{seed['rows']:,} GPU requests; gunicorn 2 workers per tree, {args.concurrency} client threads, "
        f"up to {args.requests} requests per API endpoint and {args.page_requests} per page (about {args.seconds:g} s "
        f"each), the same on both trees; {args.runs} runs; {os.cpu_count()} CPU cores"
    )
    print(
        f"{'endpoint':46} {'requests':>8} {'current req/s':>13} {'baseline req/s':>14} {'current/baseline':>17} "
        f"{'target':>7} {'result':>6}"
    )
    for name in current:
        ratios = [c["rps"] / b["rps"] for c, b in zip(current[name], baseline[name], strict=True)]
        target = None if name == NOOP else PAGE_TARGET  # the no-op is the same code on both sides: a yardstick
        row = record(
            BENCHMARK,
            f"{name} vs {args.baseline_commit[:7]}",
            ratios,
            target,
            detail=f"{_rate(current[name])} vs {_rate(baseline[name])} req/s",
        )
        if row.verdict == "FAIL":
            failed.append(name)
        print(
            f"{name:46} {totals[name]:8} {_rate(current[name]):>13} {_rate(baseline[name]):>14} {spread(ratios):>17} "
            f"{str(target) if target else '-':>7} {row.verdict:>6}"
        )
    if RECOMMEND in current and NOOP in current:
        for side, by_name in figures.items():
            over = [a["rps"] / n["rps"] for a, n in zip(by_name[RECOMMEND], by_name[NOOP], strict=True)]
            latency = [a["p50_ms"] / n["p50_ms"] for a, n in zip(by_name[RECOMMEND], by_name[NOOP], strict=True)]
            row = record(
                BENCHMARK,
                f"recommendation API / no-op DRF view ({side})",
                over,
                API_OVER_NOOP_TARGET if side == "current" else None,
                detail=f"p50 latency {spread(latency)}x the no-op's",
            )
            if row.verdict == "FAIL":
                failed.append(row.name)
            print(
                f"recommendation API / no-op DRF view, {side}: throughput {spread(over)}x, p50 latency "
                f"{spread(latency)}x (target on the current tree: throughput >= 0.5x, latency <= 2x) {row.verdict}"
            )
    return failed


def _rate(measured: list[dict]) -> str:
    """The median throughput of the runs, in requests per second."""
    rps = statistics.median(m["rps"] for m in measured)
    return f"{rps:.0f}" if rps >= 10 else f"{rps:.2f}"


if __name__ == "__main__":
    main()
