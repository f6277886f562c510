"""MIG planning: the exact planner's GPU count against first-fit decreasing and against the LP lower bound.

For every MIG model, a few hundred generated demands (a random profile mix sized from 1 to 1,000 GPUs, log-uniform):
the planner's GPUs (exact, ``scipy.optimize.milp``), first-fit decreasing's GPUs (the greedy baseline), and the LP
relaxation's lower bound, all in the same run. Prints the mean ratio to the lower bound, the saving against FFD and
the time per plan. ``exact/ceil(LP)`` is 1.0000 when every plan met the integer lower bound. No assertion on time.

    .venv/bin/python benchmarks/mig_planning.py [--demands 200] [--max-gpus 1000] [--seed 11]
"""

from __future__ import annotations

import argparse
import math
import random
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.bench_results import record
from gpucore.catalog import BUILTIN_CATALOG, GpuModelSpec
from gpucore.mig_planner import first_fit_decreasing, lp_lower_bound, plan

MODELS = ["A100-40GB", "A100-80GB", "H100-80GB", "H200", "A30"]


def generated_demands(model: GpuModelSpec, count: int, max_gpus: int, seed: int) -> list[dict[str, int]]:
    """Reproducible demands: a random subset of profiles with random weights, about 1..max_gpus GPUs of compute."""
    rng = random.Random(f"{seed}-{model.name}")
    profiles = [p for p in model.mig_profiles if not p.media_extensions]
    demands = []
    for _ in range(count):
        gpus = math.exp(rng.uniform(0, math.log(max_gpus)))
        chosen = rng.sample(profiles, rng.randint(1, len(profiles)))
        weights = [rng.random() for _ in chosen]
        total = sum(weights)
        # Fill 60-100 % of the compute slices of `gpus` GPUs, split among the chosen profiles by weight.
        slices = gpus * model.mig_compute_slices * rng.uniform(0.6, 1.0)
        demand = {
            p.name: max(1, round(slices * w / total / p.compute_slices)) for p, w in zip(chosen, weights, strict=True)
        }
        demands.append(demand)
    return demands


def percentile(values: list[float], pct: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(pct / 100 * (len(ordered) - 1)))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--demands", type=int, default=200, help="Generated demands per model")
    parser.add_argument("--max-gpus", type=int, default=1000, help="Largest demand, in GPUs")
    parser.add_argument("--seed", type=int, default=11)
    args = parser.parse_args()

    print(f"{args.demands} demands per model, 1..{args.max_gpus} GPUs (log-uniform), seed {args.seed}")
    header = (
        f"{'model':<10} {'GPUs (exact)':>12} {'FFD GPUs':>9} {'saving vs FFD':>14} {'mean/demand':>12}"
        f" {'FFD worse in':>13} {'exact/LP':>9} {'exact/ceil(LP)':>15} {'ms/plan p50':>12} {'p95':>7}"
        f" {'FFD ms p50':>11}"
    )
    print(header)
    print("-" * len(header))
    totals = {"exact": 0, "ffd": 0, "ratios": [], "times": []}
    for name in MODELS:
        model = BUILTIN_CATALOG.get(name)
        demands = generated_demands(model, args.demands, args.max_gpus, args.seed)
        plan(model, demands[0])  # warm the layout cache and scipy's imports out of the timings
        exact_gpus, ffd_gpus, ratios, times, ffd_times, savings = [], [], [], [], [], []
        at_bound = ffd_worse = 0
        for demand in demands:
            started = time.perf_counter()
            result = plan(model, demand)
            times.append((time.perf_counter() - started) * 1000)
            started = time.perf_counter()
            greedy = len(first_fit_decreasing(model, demand))
            ffd_times.append((time.perf_counter() - started) * 1000)
            bound = lp_lower_bound(model, demand)
            if result.gpu_count > greedy or result.gpu_count < math.ceil(bound - 1e-6):
                raise SystemExit(f"Planner outside [LP bound, FFD] on {name} {demand}: {result.gpu_count}")
            exact_gpus.append(result.gpu_count)
            ffd_gpus.append(greedy)
            ratios.append(result.gpu_count / bound)
            at_bound += result.gpu_count == math.ceil(bound - 1e-6)
            savings.append((greedy - result.gpu_count) / greedy)
            ffd_worse += greedy > result.gpu_count
        exact, ffd = sum(exact_gpus), sum(ffd_gpus)
        totals["exact"] += exact
        totals["ffd"] += ffd
        totals["ratios"] += ratios
        totals["times"] += times
        print(
            f"{name:<10} {exact:>12} {ffd:>9} {100 * (ffd - exact) / ffd:>13.2f}%"
            f" {100 * statistics.mean(savings):>11.2f}% {ffd_worse:>6}/{len(demands):<6}"
            f" {statistics.mean(ratios):>9.4f} {'1.0000' if at_bound == len(demands) else 'above':>15}"
            f" {percentile(times, 50):>12.1f}"
            f" {percentile(times, 95):>7.1f} {percentile(ffd_times, 50):>11.1f}"
        )
    print("-" * len(header))
    exact, ffd = totals["exact"], totals["ffd"]
    print(
        f"all models: exact planner uses {exact} GPUs, first-fit decreasing {ffd} "
        f"(FFD/exact {ffd / exact:.4f}, saving {100 * (ffd - exact) / ffd:.2f}%); "
        f"mean exact/LP-bound ratio {statistics.mean(totals['ratios']):.4f} "
        f"(max {max(totals['ratios']):.4f}); median {percentile(totals['times'], 50):.1f} ms per plan"
    )
    record(
        "mig_planning",
        "first-fit decreasing GPUs / exact planner's",
        [ffd / exact],
        detail=f"exact/LP bound {statistics.mean(totals['ratios']):.4f}",
    )


if __name__ == "__main__":
    main()
