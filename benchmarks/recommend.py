"""Recommendations per second of ``recommend()`` now against ``recommend()`` at an older commit, in the same run.

The older commit's ``gpucore`` (main before the framework was first profiled) is extracted with ``git archive``;
each tree's ``recommend()`` is timed in a fresh process (``bench_recommend_rate.py``) on the same profiles, per second
of that process's CPU time (on a shared machine wall time mostly measures the others), the two trees one after the
other in every run, in alternating order: the speed-up is a ratio of the same run. Only the pure core is imported:
no Django, no database. No target: printed for information.

Every timed pass answers profiles its process has not seen: each run draws its own mix, after a warm-up pass over
another. Timing profiles already answered would time what the framework keeps per process, not what a new profile
costs.

    .venv/bin/python benchmarks/recommend.py [--profiles 10000] [--runs 3] [--baseline-commit SHA]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # the project, and benchmarks as a package

from benchmarks.bench_results import record, spread  # noqa: E402

# main before the framework was first profiled.
BASELINE_COMMIT = "52feb892582c9491e55e490cd3c6570cc5491fe5"
WARM_SEED = 1_000  # the warm-up mix; run i times the mix of seed 7 + i

WORKLOADS = ["training", "batch_inference", "realtime_inference", "development", "hpc_simulation"]
TIERS = [None, "tier1_realtime", "tier2_batch", "tier3_development"]
MODELS = [None, None, None, "A100-40GB", "A100-80GB", "H100-80GB", "A30", "L4", "T4"]


def profile_mix(count: int, seed: int = 7) -> list[dict[str, object]]:
    """A reproducible mix of valid profiles across workload types, tiers, models and sizes."""
    rng = random.Random(seed)
    profiles = []
    for _ in range(count):
        model = rng.choice(MODELS)
        ceiling = {"A30": 24, "L4": 24, "T4": 16}.get(model or "", 80)
        profile: dict[str, object] = {
            "workload_type": rng.choice(WORKLOADS),
            "gpu_memory_gb": round(rng.uniform(1, ceiling * 0.9), 1),
            "gpu_count": rng.choice([1, 1, 1, 2, 4]),
            "replicas": rng.choice([1, 1, 2, 3]),
            "isolation_required": rng.random() < 0.2,
        }
        if tier := rng.choice(TIERS):
            profile["sla_tier"] = tier
        if model:
            profile["gpu_model"] = model
        profiles.append(profile)
    return profiles


def baseline_tree(commit: str) -> Path | None:
    """``gpucore`` as it was at ``commit``, extracted into a temporary folder; None without git or that history."""
    target = Path(tempfile.mkdtemp(prefix="bench-recommend-baseline-"))
    archive = subprocess.run(
        ["git", "-C", str(ROOT), "archive", "--format=tar", commit, "gpucore"], capture_output=True, check=False
    )
    if archive.returncode != 0:
        return None
    subprocess.run(["tar", "-x", "-C", str(target)], input=archive.stdout, check=True)
    return target


def tree_rate(root: Path, profiles_json: bytes) -> float:
    """Recommendations per second of ``root``'s ``recommend()`` in a fresh process (bench_recommend_rate.py): it
    warms on ``{"warm": [...]}`` and times ``{"profiles": [...]}``, CPU time."""
    runner = ROOT / "benchmarks" / "bench_recommend_rate.py"
    done = subprocess.run(
        [sys.executable, str(runner), str(root)], input=profiles_json, capture_output=True, check=True
    )
    return json.loads(done.stdout)["rate"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--profiles", type=int, default=10_000, help="profiles timed per run")
    parser.add_argument("--runs", type=int, default=3, help="repetitions; figures are printed as min/median/max")
    parser.add_argument(
        "--baseline-commit", default=BASELINE_COMMIT, help="the commit whose recommend() is the baseline"
    )
    args = parser.parse_args()
    baseline = baseline_tree(args.baseline_commit)
    if baseline is None:
        sys.exit(f"no baseline: git history with {args.baseline_commit[:12]} is not available")
    warm = profile_mix(args.profiles, seed=WARM_SEED)
    before_rates, after_rates = [], []
    for run in range(args.runs):
        given = json.dumps({"warm": warm, "profiles": profile_mix(args.profiles, seed=7 + run)}).encode()
        # Alternating which tree goes first, so that a drift of the machine's speed does not favour one.
        order = [(baseline, before_rates), (ROOT, after_rates)]
        for root, rates in order if run % 2 == 0 else reversed(order):
            rates.append(tree_rate(root, given))
    speedups = [a / b for a, b in zip(after_rates, before_rates, strict=True)]
    commit = args.baseline_commit[:7]
    print(
        f"{os.cpu_count()} CPU cores; {args.runs} runs of {args.profiles} profiles not seen before (after a warm-up "
        "on another mix), each tree in a fresh process; figures min/median/max"
    )
    print(f"recommend() at {commit} (built-in catalog):  {spread(before_rates, '{:.0f}'):>20} recommendations/s")
    print(f"recommend() now (same profiles):            {spread(after_rates, '{:.0f}'):>20} recommendations/s")
    print(f"speed-up now / {commit}:                     {spread(speedups):>20} x")
    record(
        "recommend",
        f"recommend() in-process now / {commit}",
        speedups,
        detail=f"{statistics.median(after_rates):.0f} vs {statistics.median(before_rates):.0f} /s",
    )


if __name__ == "__main__":
    main()
