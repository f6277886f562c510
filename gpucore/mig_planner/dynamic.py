"""Dynamic MIG as an admission policy: on which GPU a new MIG instance should be created so the fewest GPUs are
fragmented (pure).

With NVIDIA's DRA driver and its ``DynamicMIG`` feature (alpha upstream) there is no static layout to roll out: the
driver creates an instance when a pod is prepared and destroys it on release. The planner's rule becomes the policy:
put the new instance on a GPU that is already partitioned and that it fills best (the least room left over), and
only open an untouched GPU when no partitioned one can host it, so whole GPUs stay whole for whole-GPU work.

The policy reasons about instance counts per GPU: a count is admitted when the GPU's instances plus the new one form a
valid layout (``check_mig_layout``, placements included). The driver chooses the exact placement; instances fixed at
other starts may leave less room than the counts suggest (docs/dra-and-kai.md).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from gpucore.catalog import GpuModelSpec
from gpucore.manifests.gpu_operator import check_mig_layout
from gpucore.manifests.naming import ManifestError


@dataclass(frozen=True, slots=True)
class DynamicPlacement:
    """Where the policy puts a new instance: the GPU's index, and whether it opens a GPU that was whole."""

    gpu: int
    opens_whole_gpu: bool
    memory_slices_left: int


def _fits(model: GpuModelSpec, counts: Mapping[str, int]) -> bool:
    try:
        check_mig_layout(model, {name: count for name, count in counts.items() if count})
    except ManifestError:
        return False
    return True


def _used_memory_slices(model: GpuModelSpec, counts: Mapping[str, int]) -> int:
    return sum(model.profile(name).memory_slices * count for name, count in counts.items())


def choose_gpu(model: GpuModelSpec, gpus: Sequence[Mapping[str, int]], profile: str) -> DynamicPlacement | None:
    """The GPU a new ``profile`` instance should go on, given each GPU's current instances (``{}``: whole, unused);
    ``None`` when no GPU can host it."""
    model.profile(profile)  # an unknown profile is the catalog's error, not "no room"
    best: tuple[tuple[int, int, int], DynamicPlacement] | None = None
    for index, current in enumerate(gpus):
        after = {**current, profile: current.get(profile, 0) + 1}
        if not _fits(model, after):
            continue
        opens = not any(current.values())
        left = model.mig_memory_slices - _used_memory_slices(model, after)
        # Partitioned GPUs first, then the best fit, then the lowest index: a stable, explainable choice.
        key = (int(opens), left, index)
        if best is None or key < best[0]:
            best = (key, DynamicPlacement(gpu=index, opens_whole_gpu=opens, memory_slices_left=left))
    return None if best is None else best[1]


def fragmented_gpus(gpus: Sequence[Mapping[str, int]]) -> int:
    """How many GPUs hold at least one instance (and so cannot serve a whole-GPU claim)."""
    return sum(1 for counts in gpus if any(counts.values()))
