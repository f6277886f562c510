"""The words every layer shares: strategies, workload types, isolation floors and pool sharing modes.

Defined once here as plain enums; the Django apps build their ``TextChoices`` from them (``allocations.choices``),
so a value or a label cannot differ between the core, the database and the forms.
"""

from __future__ import annotations

from enum import StrEnum


class Strategy(StrEnum):
    """How a workload gets its GPU: the whole device, a hardware MIG partition, or a time-sliced share."""

    DEDICATED = "dedicated"
    MIG = "mig"
    TIME_SLICING = "time-slicing"


class WorkloadType(StrEnum):
    """The kinds of workload of the characterization matrix (Part 4.1 of the allocation guide)."""

    TRAINING = "training"
    BATCH_INFERENCE = "batch_inference"
    REALTIME_INFERENCE = "realtime_inference"
    DEVELOPMENT = "development"
    HPC_SIMULATION = "hpc_simulation"


class IsolationFloor(StrEnum):
    """The least isolation a tier accepts."""

    DEDICATED = "dedicated"  # a whole GPU per container
    HARDWARE = "hardware"  # MIG or dedicated: memory and fault isolation in hardware
    NONE = "none"  # any strategy, time-slicing included


class SharingMode(StrEnum):
    """How a node pool's GPUs are exposed: whole GPUs, MIG partitions (mixed strategy) or time-sliced replicas."""

    NONE = "none"
    MIG = "mig"
    TIME_SLICING = "time-slicing"


# Human labels, for forms, tables and the admin; keyed by enum first, since StrEnum members of different enums
# with the same value ("none") are equal and hash alike.
LABELS: dict[type[StrEnum], dict[str, str]] = {
    Strategy: {
        Strategy.DEDICATED: "Dedicated GPU",
        Strategy.MIG: "MIG slice",
        Strategy.TIME_SLICING: "Time-sliced share",
    },
    WorkloadType: {
        WorkloadType.TRAINING: "Training",
        WorkloadType.BATCH_INFERENCE: "Batch inference",
        WorkloadType.REALTIME_INFERENCE: "Real-time inference",
        WorkloadType.DEVELOPMENT: "Development",
        WorkloadType.HPC_SIMULATION: "HPC simulation",
    },
    IsolationFloor: {
        IsolationFloor.DEDICATED: "Dedicated GPU only",
        IsolationFloor.HARDWARE: "Hardware isolation (MIG or dedicated)",
        IsolationFloor.NONE: "Any strategy",
    },
    SharingMode: {
        SharingMode.NONE: "None (whole GPUs)",
        SharingMode.MIG: "MIG",
        SharingMode.TIME_SLICING: "Time-slicing",
    },
}


def label(member: StrEnum) -> str:
    """The human label of a vocabulary member."""
    return LABELS[type(member)][member]


__all__ = ["LABELS", "IsolationFloor", "SharingMode", "Strategy", "WorkloadType", "label"]
