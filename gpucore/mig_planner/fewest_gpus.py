"""The fewest GPUs that host a MIG demand: the exact integer program, its LP bound and the greedy baseline (pure).

A GPU of a 7-slice model has only 77 valid instance multisets without media extensions (9 on an A30), so the
exact optimum is affordable: an integer program over "how many GPUs get layout L" solved by HiGHS through
``scipy.optimize.milp``. First-fit decreasing (the greedy baseline) and the LP lower bound are exposed for the
benchmark and the tests.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
from scipy.optimize import Bounds, LinearConstraint, linprog, milp

from gpucore.catalog import GpuModelSpec
from gpucore.mig_planner.layouts import MigLayout, candidate_layouts, layout_of, layout_order, normalise_demand


def capacity_matrix(layouts: Sequence[MigLayout], profiles: Sequence[str]) -> np.ndarray:
    return np.array([[layout.capacity(name) for layout in layouts] for name in profiles], dtype=float)


def lp_lower_bound(model: GpuModelSpec, demand: Mapping[str, int]) -> float:
    """The LP relaxation's optimum: no plan hosts ``demand`` on fewer than ``ceil`` of it GPUs."""
    wanted = normalise_demand(model, demand)
    if not wanted:
        return 0.0
    layouts = candidate_layouts(model, wanted)
    matrix = capacity_matrix(layouts, list(wanted))
    result = linprog(
        np.ones(len(layouts)), A_ub=-matrix, b_ub=-np.array(list(wanted.values()), dtype=float), method="highs"
    )
    if result.status != 0:
        raise RuntimeError(f"The LP relaxation failed: {result.message}")
    return float(result.fun)


def solve_min_gpus(layouts: Sequence[MigLayout], wanted: Mapping[str, int]) -> dict[int, int]:
    """Exact: layout index -> GPU count, minimising the number of GPUs that cover ``wanted``."""
    matrix = capacity_matrix(layouts, list(wanted))
    needed = np.array(list(wanted.values()), dtype=float)
    result = milp(
        np.ones(len(layouts)),
        integrality=np.ones(len(layouts)),
        bounds=Bounds(0, float(needed.sum())),
        constraints=LinearConstraint(matrix, lb=needed, ub=np.inf),
        # mip_rel_gap 0: the objective is a GPU count, so stop only at the proven optimum.
        options={"mip_rel_gap": 0.0},
    )
    if result.status != 0:
        raise RuntimeError(f"The MIG planning program failed: {result.message}")
    return {index: round(value) for index, value in enumerate(result.x) if round(value) > 0}


def min_gpu_layouts(model: GpuModelSpec, demand: Mapping[str, int]) -> list[MigLayout]:
    """The layouts (one per GPU, largest first) of a plan that hosts ``demand`` on the fewest GPUs."""
    wanted = normalise_demand(model, demand)
    if not wanted:
        return []
    layouts = candidate_layouts(model, wanted)
    chosen = solve_min_gpus(layouts, wanted)
    result = [layouts[index] for index, count in chosen.items() for _ in range(count)]
    return sorted(result, key=layout_order)


def first_fit_decreasing(model: GpuModelSpec, demand: Mapping[str, int]) -> list[MigLayout]:
    """The greedy baseline: instances largest first, each onto the first GPU where the layout stays valid."""
    wanted = normalise_demand(model, demand)
    if not wanted:
        return []
    names = list(wanted)
    valid = {tuple(layout.capacity(name) for name in names) for layout in candidate_layouts(model, names)}
    order = sorted(names, key=lambda n: (-model.profile(n).memory_slices, -model.profile(n).compute_slices, n))
    gpus: list[list[int]] = []
    for name in order:
        slot = names.index(name)
        # A GPU a profile did not fit never fits it later (GPUs only fill up), so each profile's scan resumes where
        # its last instance went: linear in GPUs + instances per profile.
        start = 0
        for _ in range(wanted[name]):
            placed = False
            for index in range(start, len(gpus)):
                counts = gpus[index]
                counts[slot] += 1
                if tuple(counts) in valid:
                    placed, start = True, index
                    break
                counts[slot] -= 1
            if not placed:
                counts = [0] * len(names)
                counts[slot] = 1
                gpus.append(counts)
                start = len(gpus) - 1
    return [layout_of(model, dict(zip(names, counts, strict=True))) for counts in gpus]
