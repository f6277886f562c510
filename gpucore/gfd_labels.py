"""What a GPU node's GPU Feature Discovery labels say against the node pool it belongs to. Pure: no Django.

GFD (part of the GPU Operator) labels each GPU node with what the device plugin really runs: the MIG strategy
(``nvidia.com/mig.strategy``), the product (``nvidia.com/gpu.product``, suffixed ``-SHARED`` when time-sliced and
``-MIG-<profile>`` or ``-MIG-INVALID`` under the ``single`` strategy), the time-slicing replicas
(``nvidia.com/gpu.replicas``) and the MIG manager's progress (``nvidia.com/mig.config.state``). A pool whose nodes
disagree with its configuration cannot run what the portal places there: the pods stay Pending. Each problem names
its fix (docs/kubernetes-and-kueue.md, "Operator settings the portal relies on").
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

MIG_STRATEGY = "nvidia.com/mig.strategy"
PRODUCT = "nvidia.com/gpu.product"
REPLICAS = "nvidia.com/gpu.replicas"
MIG_CONFIG_STATE = "nvidia.com/mig.config.state"
_MIG_PREFIX = "nvidia.com/mig-"

DEDICATED, MIG, TIME_SLICING = "none", "mig", "time-slicing"

_MIXED_FIX = (
    "Set the GPU Operator's ClusterPolicy mig.strategy to mixed (Helm: --set mig.strategy=mixed; the default is "
    "single, and the device plugin's MIG_STRATEGY environment variable overrides the portal's ConfigMap)."
)


@dataclass(frozen=True, slots=True)
class PoolExpectation:
    """What a pool's nodes should advertise, from its configuration."""

    sharing_mode: str  # DEDICATED, MIG or TIME_SLICING
    product_label: str
    time_slice_replicas: int | None = None


@dataclass(frozen=True, slots=True)
class NodeProblem:
    """One way a node disagrees with its pool, and what fixes it."""

    problem: str
    fix: str


def node_problems(
    expected: PoolExpectation, labels: Mapping[str, str], allocatable: Mapping[str, int]
) -> list[NodeProblem]:
    """How one node of the pool disagrees with it (empty: it agrees). Labels GFD has not written are not judged."""
    problems: list[NodeProblem] = []
    product = labels.get(PRODUCT, "")
    base = product.removesuffix("-SHARED").split("-MIG-", 1)[0]
    if product and base != expected.product_label:
        problems.append(
            NodeProblem(
                f"GPU Feature Discovery reports {base}, the pool is configured for {expected.product_label}",
                "Correct the pool's GPU model, or its node labels so that only nodes of that model match.",
            )
        )
    strategy = labels.get(MIG_STRATEGY)
    if expected.sharing_mode == MIG:
        problems.extend(_mig_problems(labels, allocatable, strategy, product))
    elif expected.sharing_mode == TIME_SLICING:
        replicas = labels.get(REPLICAS)
        if replicas is not None and replicas != str(expected.time_slice_replicas):
            problems.append(
                NodeProblem(
                    f"the nodes share each GPU {replicas} way(s), the pool is configured for "
                    f"{expected.time_slice_replicas}",
                    "Apply the portal's device-plugin ConfigMap and set the GPU Operator's devicePlugin.config "
                    "(name and default) to it, then label the nodes nvidia.com/device-plugin.config with the "
                    "pool's entry.",
                )
            )
    else:
        replicas = labels.get(REPLICAS)
        if replicas not in (None, "1"):
            problems.append(
                NodeProblem(
                    f"the nodes share each GPU {replicas} ways (time-slicing), the pool is configured for dedicated "
                    "GPUs",
                    "Remove the nodes' nvidia.com/device-plugin.config label (or point it at a config without "
                    "time-slicing), or configure the pool as time-sliced.",
                )
            )
        if any(name.startswith(_MIG_PREFIX) and count for name, count in allocatable.items()):
            problems.append(
                NodeProblem(
                    "the nodes advertise MIG slices, the pool is configured for dedicated GPUs",
                    "Set the nodes' nvidia.com/mig.config label to all-disabled, or configure the pool as MIG.",
                )
            )
    return problems


def _mig_problems(
    labels: Mapping[str, str], allocatable: Mapping[str, int], strategy: str | None, product: str
) -> list[NodeProblem]:
    problems: list[NodeProblem] = []
    if strategy is not None and strategy != "mixed":
        problems.append(NodeProblem(f"the nodes run the MIG strategy {strategy}, the portal needs mixed", _MIXED_FIX))
    elif product.endswith("-MIG-INVALID"):
        problems.append(
            NodeProblem(
                "GPU Feature Discovery labels the nodes MIG-INVALID (several profiles under single)", _MIXED_FIX
            )
        )
    state = labels.get(MIG_CONFIG_STATE)
    if state == "failed":
        problems.append(
            NodeProblem(
                "the MIG manager failed to apply the nodes' MIG config (nvidia.com/mig.config.state=failed)",
                "Read the nvidia-mig-manager pod's log on the node; check that the config named by "
                "nvidia.com/mig.config exists in the ConfigMap of the GPU Operator's migManager.config.",
            )
        )
    if not any(name.startswith(_MIG_PREFIX) and count for name, count in allocatable.items()) and state != "pending":
        problems.append(
            NodeProblem(
                "the nodes advertise no nvidia.com/mig-* resources, so no MIG pod can be scheduled",
                "Check that MIG is enabled (nvidia.com/mig.config set, state success) and that mig.strategy is mixed; "
                + _MIXED_FIX.split(" (", 1)[0]
                + ".",
            )
        )
    return problems


def pool_problems(per_node: Iterable[tuple[str, list[NodeProblem]]]) -> list[dict[str, object]]:
    """The problems of a pool's nodes, one entry per distinct problem with the nodes that have it (JSON-ready)."""
    grouped: dict[NodeProblem, list[str]] = {}
    for node, problems in per_node:
        for problem in problems:
            grouped.setdefault(problem, []).append(node)
    return [
        {"problem": problem.problem, "fix": problem.fix, "nodes": sorted(nodes)} for problem, nodes in grouped.items()
    ]
