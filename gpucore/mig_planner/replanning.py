"""Plans against a pool's current GPUs: keep the fewest GPUs, then change as few GPUs as possible (pure).

A changed GPU is re-partitioned, so the instances in use on it must move: the plan names them and their holders;
then it moves as few in-use instances as possible.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
from scipy.optimize import Bounds, LinearConstraint, milp

from gpucore.catalog import GpuModelSpec
from gpucore.manifests.naming import ManifestError
from gpucore.mig_planner.fewest_gpus import lp_lower_bound, solve_min_gpus
from gpucore.mig_planner.layouts import (
    MigLayout,
    MigPlanError,
    candidate_layouts,
    gpu_shares,
    layout_of,
    layout_order,
    normalise_demand,
)


@dataclass(frozen=True, slots=True)
class CurrentGpu:
    """One GPU of a pool as it is: an id (``node/index``), the node, its layout, and the instances in use on it."""

    gpu_id: str
    node: str
    layout: Mapping[str, int]
    in_use: Mapping[str, int] = field(default_factory=dict)
    # Who holds the in-use instances (request ids or pod names), named in the plan when the GPU must change.
    holders: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class PlannedGpu:
    """One GPU of a plan: its layout, the demanded instances it hosts, and what changes from its current layout."""

    gpu_id: str | None  # None: a GPU the pool does not have yet
    node: str | None
    layout: MigLayout | None  # None: a current layout with no MIG instances, kept
    hosts: Mapping[str, int]
    changed: bool
    current: Mapping[str, int] = field(default_factory=dict)
    must_move: Mapping[str, int] = field(default_factory=dict)
    moved_holders: tuple[str, ...] = ()

    @property
    def used(self) -> bool:
        return any(self.hosts.values())

    @property
    def added(self) -> bool:
        return self.gpu_id is None


@dataclass(frozen=True, slots=True)
class MigPlan:
    """A MIG plan: per-GPU layouts hosting ``demand`` on ``gpu_count`` GPUs (the optimum), and the changes."""

    model_name: str
    demand: Mapping[str, int]
    gpus: tuple[PlannedGpu, ...]
    gpu_count: int
    lower_bound: int

    @property
    def gpus_changed(self) -> int:
        return sum(1 for gpu in self.gpus if gpu.changed and not gpu.added)

    @property
    def gpus_added(self) -> int:
        return sum(1 for gpu in self.gpus if gpu.added)

    @property
    def gpus_free(self) -> int:
        return sum(1 for gpu in self.gpus if not gpu.used)

    def nodes_to_drain(self) -> list[str]:
        """Nodes with a changed GPU: the MIG manager re-partitions a node only once its GPU pods are gone."""
        return sorted({gpu.node for gpu in self.gpus if gpu.changed and gpu.node is not None})

    def requests_to_move(self) -> list[str]:
        return sorted({holder for gpu in self.gpus for holder in gpu.moved_holders})


def _assign(gpus: list[dict], wanted: Mapping[str, int]) -> None:
    """Give each used GPU the demanded instances it hosts: in-use instances first, then first fit per profile."""
    for name, count in wanted.items():
        remaining = count - sum(gpu["in_use"].get(name, 0) for gpu in gpus if gpu["used"])
        for gpu in gpus:
            if not gpu["used"]:
                continue
            here = gpu["in_use"].get(name, 0)
            extra = min(max(remaining, 0), gpu["capacity"].get(name, 0) - here)
            remaining -= extra
            if here + extra:
                gpu["hosts"][name] = here + extra


def plan(
    model: GpuModelSpec,
    demand: Mapping[str, int],
    *,
    current: Sequence[CurrentGpu] | None = None,
) -> MigPlan:
    """The exact plan: the fewest GPUs hosting ``demand``; with ``current`` GPUs, then the fewest GPUs changed.

    Instances in use stay on their GPU unless that GPU changes; the plan then lists them (``must_move``) and their
    holders. The demand is raised to at least what is in use, so a plan never strands a running instance.
    """
    wanted = normalise_demand(model, demand)
    current = list(current or [])
    currents = [_check_current(model, gpu, index) for index, gpu in enumerate(current)]
    for name in {name for gpu in current for name, count in gpu.in_use.items() if count}:
        wanted[name] = max(wanted.get(name, 0), sum(gpu.in_use.get(name, 0) for gpu in current))
    wanted = {p.name: wanted[p.name] for p in model.mig_profiles if wanted.get(p.name)}
    if not wanted:
        kept = [_kept(gpu, layout) for gpu, layout in zip(current, currents, strict=True)]
        return MigPlan(model.name, {}, tuple(kept), 0, 0)
    layouts = candidate_layouts(model, wanted)
    optimum = solve_min_gpus(layouts, wanted)
    gpu_count = sum(optimum.values())
    lower_bound = math.ceil(lp_lower_bound(model, wanted) - 1e-6)
    if not current:
        rows = [
            {"layout": layouts[i], "capacity": layouts[i].counts(), "in_use": {}, "hosts": {}, "used": True}
            for i, count in sorted(optimum.items(), key=lambda item: layout_order(layouts[item[0]]))
            for _ in range(count)
        ]
        _assign(rows, wanted)
        gpus = tuple(PlannedGpu(None, None, row["layout"], row["hosts"], changed=True) for row in rows)
        return MigPlan(model.name, wanted, gpus, gpu_count, lower_bound)
    return _plan_against_current(model, wanted, layouts, gpu_count, lower_bound, current, currents)


def _check_current(model: GpuModelSpec, gpu: CurrentGpu, index: int) -> MigLayout | None:
    label = f"current[{index}]"
    layout = {name: count for name, count in gpu.layout.items() if count}
    if layout:
        try:
            checked = layout_of(model, layout)
        except ManifestError as error:
            raise MigPlanError(label, f"GPU {gpu.gpu_id}: {error}") from error
    else:
        checked = None
    for name, count in gpu.in_use.items():
        if count and count > layout.get(name, 0):
            raise MigPlanError(label, f"GPU {gpu.gpu_id} has {count} x '{name}' in use but its layout holds fewer.")
    return checked


def _kept(gpu: CurrentGpu, layout: MigLayout | None) -> PlannedGpu:
    current = dict(layout.instances) if layout else {}
    return PlannedGpu(gpu.gpu_id, gpu.node, layout, {}, changed=False, current=current)


def _plan_against_current(
    model: GpuModelSpec,
    wanted: dict[str, int],
    layouts: Sequence[MigLayout],
    gpu_count: int,
    lower_bound: int,
    current: Sequence[CurrentGpu],
    currents: Sequence[MigLayout | None],
) -> MigPlan:
    names = list(wanted)
    # GPUs with the same layout and the same instances in use are interchangeable: one class, integer counts.
    classes: dict[tuple, list[int]] = {}
    for index, (gpu, layout) in enumerate(zip(current, currents, strict=True)):
        key = (layout.instances if layout else (), tuple(gpu.in_use.get(name, 0) for name in names))
        classes.setdefault(key, []).append(index)
    class_keys = list(classes)
    total_in_use = sum(sum(key[1]) for key in class_keys for _ in classes[key])
    big = total_in_use + 1
    extra = max(0, gpu_count - len(current))

    # Variables: x_l (re-partitioned or added GPUs per candidate layout), then per class keep_c, used_c, y_{c,p}.
    n_layouts, n_classes, n_names = len(layouts), len(class_keys), len(names)
    keep0 = n_layouts
    used0 = keep0 + n_classes
    y0 = used0 + n_classes
    size = y0 + n_classes * n_names
    cost = np.zeros(size)
    upper = np.full(size, np.inf)
    upper[:n_layouts] = gpu_count
    rows: list[np.ndarray] = []
    lows: list[float] = []
    highs: list[float] = []

    def row() -> np.ndarray:
        return np.zeros(size)

    constant = 0.0
    for c, key in enumerate(class_keys):
        members = len(classes[key])
        in_use = sum(key[1])
        # Changing one GPU of this class costs `big` (GPU changes first) plus the in-use instances that move.
        cost[keep0 + c] = -(big + in_use)
        constant += members * (big + in_use)
        upper[keep0 + c] = members
        upper[used0 + c] = members
        capacity = dict(key[0])
        for p, name in enumerate(names):
            r = row()
            r[y0 + c * n_names + p] = 1
            r[used0 + c] = -capacity.get(name, 0)
            rows.append(r), lows.append(-np.inf), highs.append(0)  # y <= capacity * used
            if key[1][p]:
                r = row()
                r[y0 + c * n_names + p] = 1
                r[keep0 + c] = -key[1][p]
                rows.append(r), lows.append(0), highs.append(np.inf)  # kept GPUs host what runs on them
        r = row()
        r[used0 + c] = 1
        r[keep0 + c] = -1
        # used <= keep; a kept GPU with instances in use is a used GPU.
        rows.append(r), lows.append(0 if in_use else -np.inf), highs.append(0)
    for p, name in enumerate(names):
        r = row()
        r[:n_layouts] = [layout.capacity(name) for layout in layouts]
        for c in range(n_classes):
            r[y0 + c * n_names + p] = 1
        rows.append(r), lows.append(wanted[name]), highs.append(np.inf)  # demand covered
    r = row()
    r[:n_layouts] = 1
    r[used0 : used0 + n_classes] = 1
    rows.append(r), lows.append(gpu_count), highs.append(gpu_count)  # still the fewest GPUs
    r = row()
    r[:n_layouts] = 1
    r[keep0 : keep0 + n_classes] = 1
    rows.append(r), lows.append(-np.inf), highs.append(len(current) + extra)  # GPUs the pool has (plus added)
    result = milp(
        cost,
        integrality=np.ones(size),
        bounds=Bounds(np.zeros(size), upper),
        constraints=LinearConstraint(np.array(rows), lows, highs),
        options={"mip_rel_gap": 0.0},
    )
    if result.status != 0:
        raise RuntimeError(f"The MIG re-planning program failed: {result.message}")
    values = [round(v) for v in result.x]
    new_layouts = sorted((layouts[i] for i in range(n_layouts) for _ in range(values[i])), key=layout_order)
    keep = {key: values[keep0 + c] for c, key in enumerate(class_keys)}
    used = {key: values[used0 + c] for c, key in enumerate(class_keys)}
    to_change = _gpus_to_change(current, classes, keep)

    planned: list[dict] = []
    kept_used = dict(used)
    layouts_left = list(new_layouts)
    for index, (gpu, layout) in enumerate(zip(current, currents, strict=True)):
        before = dict(layout.instances) if layout else {}
        if index in to_change:
            new = layouts_left.pop(0)
            moving = {name: count for name, count in gpu.in_use.items() if count}
            planned.append(
                {
                    "gpu": gpu,
                    "layout": new,
                    "capacity": new.counts(),
                    "in_use": {},
                    "hosts": {},
                    "used": True,
                    "changed": True,
                    "current": before,
                    "must_move": moving,
                }
            )
        else:
            key = (layout.instances if layout else (), tuple(gpu.in_use.get(name, 0) for name in names))
            is_used = kept_used[key] > 0
            if is_used:
                kept_used[key] -= 1
            planned.append(
                {
                    "gpu": gpu,
                    "layout": layout,
                    "capacity": before,
                    "in_use": dict(gpu.in_use),
                    "hosts": {},
                    "used": is_used,
                    "changed": False,
                    "current": before,
                    "must_move": {},
                }
            )
    for new in layouts_left:  # GPUs beyond the pool
        planned.append(
            {
                "gpu": None,
                "layout": new,
                "capacity": new.counts(),
                "in_use": {},
                "hosts": {},
                "used": True,
                "changed": True,
                "current": {},
                "must_move": {},
            }
        )
    _assign(planned, wanted)
    gpus = tuple(
        PlannedGpu(
            gpu_id=row["gpu"].gpu_id if row["gpu"] else None,
            node=row["gpu"].node if row["gpu"] else None,
            layout=row["layout"],
            hosts=row["hosts"],
            changed=row["changed"],
            current=row["current"],
            must_move=row["must_move"],
            moved_holders=tuple(row["gpu"].holders) if row["gpu"] and row["must_move"] else (),
        )
        for row in planned
    )
    return MigPlan(model.name, wanted, gpus, gpu_count, lower_bound)


def _gpus_to_change(current: Sequence[CurrentGpu], classes: Mapping[tuple, list[int]], keep: Mapping) -> set[int]:
    """Which GPUs of each class change: whole nodes first, so fewer nodes are drained for the same GPU changes."""
    remaining = {key: len(members) - keep[key] for key, members in classes.items()}
    class_of = {index: key for key, members in classes.items() for index in members}
    by_node: dict[str, list[int]] = {}
    for index, gpu in enumerate(current):
        by_node.setdefault(gpu.node, []).append(index)
    chosen: set[int] = set()
    while any(remaining.values()):
        # The node that can take the most of the changes still to place.
        def takes(node: str) -> int:
            need = dict(remaining)
            count = 0
            for index in by_node[node]:
                if index not in chosen and need[class_of[index]] > 0:
                    need[class_of[index]] -= 1
                    count += 1
            return count

        node = max(sorted(by_node), key=takes)
        for index in by_node[node]:
            key = class_of[index]
            if index not in chosen and remaining[key] > 0:
                remaining[key] -= 1
                chosen.add(index)
    return chosen


def plan_summary_gpus(model: GpuModelSpec, plan_: MigPlan) -> list[dict[str, object]]:
    """The preview contract's ``gpus`` list: instances, ``profile@start`` placement and GPU share per profile."""
    result = []
    for gpu in plan_.gpus:
        if gpu.layout is None or not gpu.used:
            continue
        result.append(
            {
                "instances": gpu.layout.counts(),
                "placement": gpu.layout.placement_strings(),
                "gpu_share": gpu_shares(model, gpu.layout),
            }
        )
    return result
