"""MIG layout planning: which per-GPU layouts host a demand of MIG instances on the fewest GPUs (pure).

- ``layouts``: the valid layouts of a model and their placements;
- ``fewest_gpus``: the exact optimum (``scipy.optimize.milp``), its LP bound and the greedy baseline;
- ``replanning``: plans against a pool's current GPUs that change as few GPUs, then move as few instances, as possible.
"""

from gpucore.mig_planner.fewest_gpus import first_fit_decreasing, lp_lower_bound, min_gpu_layouts
from gpucore.mig_planner.layouts import (
    MigLayout,
    MigPlanError,
    candidate_layouts,
    gpu_shares,
    layout_of,
    valid_layouts,
)
from gpucore.mig_planner.replanning import CurrentGpu, MigPlan, PlannedGpu, plan, plan_summary_gpus

__all__ = [
    "CurrentGpu",
    "MigLayout",
    "MigPlan",
    "MigPlanError",
    "PlannedGpu",
    "candidate_layouts",
    "first_fit_decreasing",
    "gpu_shares",
    "layout_of",
    "lp_lower_bound",
    "min_gpu_layouts",
    "plan",
    "plan_summary_gpus",
    "valid_layouts",
]
