"""CPU and memory for a GPU container, sized per GPU-equivalent as the guides advise. Pure: no Django.

Rule of thumb of guide 002 (§7.2 "Set Appropriate CPU and Memory"): training 8-16 CPU cores and 32-64 GB RAM per GPU,
inference 4-8 cores and 8-16 GB per GPU. The low end of each range is the request, the high end the limit. A
container's GPU-equivalent is its GPU share as billing counts it (``gpucore.pricing.gpu_share``): N dedicated GPUs,
1/replicas for a time-sliced share, a MIG instance's weight (scaled by its pool's layout), so sizing and billing agree.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from decimal import Decimal

from gpucore.catalog import Catalog, CatalogError
from gpucore.manifests.contexts import AllocationSpec
from gpucore.manifests.naming import ManifestError
from gpucore.pricing import PricingError
from gpucore.pricing import gpu_share as unit_gpu_share


@dataclass(frozen=True, slots=True)
class PerGpuSizing:
    """CPU cores and GiB of memory one whole GPU needs: request (low end), limit (high end) and Guaranteed size."""

    cpu_request: int
    cpu_limit: int
    memory_request_gib: int
    memory_limit_gib: int
    # Requests = limits for Guaranteed QoS: 8 cores per GPU ("8 CPU cores per GPU", guide 004 §6), so that an 8-GPU
    # pod asks 64 cores and fits common 8-GPU servers; memory at the low end for training (256 GiB for 8 GPUs),
    # at the high end for inference (guide 002 §7.2's "GOOD: Balanced" 8 cores / 16Gi, requests = limits).
    guaranteed_cpu: int
    guaranteed_memory_gib: int


TRAINING = PerGpuSizing(
    cpu_request=8, cpu_limit=16, memory_request_gib=32, memory_limit_gib=64, guaranteed_cpu=8, guaranteed_memory_gib=32
)
INFERENCE = PerGpuSizing(
    cpu_request=4, cpu_limit=8, memory_request_gib=8, memory_limit_gib=16, guaranteed_cpu=8, guaranteed_memory_gib=16
)
# HPC simulation is compute-heavy like training (guide 000 §4.1); development gets the lighter inference sizing
# because notebooks idle most of the time (guide 000 §4.1: "Variable patterns").
SIZING_BY_WORKLOAD = {
    "training": TRAINING,
    "hpc_simulation": TRAINING,
    "batch_inference": INFERENCE,
    "realtime_inference": INFERENCE,
    "development": INFERENCE,
}

# Floors for small slices (a 1g MIG slice or a 1/8 time-sliced share would otherwise get a fraction of a core):
# one core and 4 GiB to start a CUDA framework, and guide 004 §6's "minimum 8GB" as the memory limit.
CPU_REQUEST_FLOOR_M = 1000
CPU_LIMIT_FLOOR_M = 2000
MEMORY_REQUEST_FLOOR_MI = 4 * 1024
MEMORY_LIMIT_FLOOR_MI = 8 * 1024
_CPU_STEP_M = 100
_MEMORY_STEP_MI = 256


@dataclass(frozen=True, slots=True)
class ContainerSize:
    """CPU (millicores) and memory (MiB) requests and limits of one container."""

    cpu_request_m: int
    cpu_limit_m: int
    memory_request_mi: int
    memory_limit_mi: int

    @property
    def guaranteed(self) -> bool:
        """Whether requests equal limits, which gives the pod the Guaranteed QoS class."""
        return self.cpu_request_m == self.cpu_limit_m and self.memory_request_mi == self.memory_limit_mi

    def requests(self) -> dict[str, str]:
        """The ``resources.requests`` entries for CPU and memory."""
        return {"cpu": format_cpu(self.cpu_request_m), "memory": format_memory(self.memory_request_mi)}

    def limits(self) -> dict[str, str]:
        """The ``resources.limits`` entries for CPU and memory."""
        return {"cpu": format_cpu(self.cpu_limit_m), "memory": format_memory(self.memory_limit_mi)}


def format_cpu(millicores: int) -> str:
    """A CPU quantity: whole cores as ``"8"``, otherwise millicores as ``"1500m"``."""
    return str(millicores // 1000) if millicores % 1000 == 0 else f"{millicores}m"


def format_memory(mebibytes: int) -> str:
    """A memory quantity: whole GiB as ``"16Gi"``, otherwise ``"4352Mi"``."""
    return f"{mebibytes // 1024}Gi" if mebibytes % 1024 == 0 else f"{mebibytes}Mi"


def _round_up(value: Decimal, step: int) -> int:
    return math.ceil(value / step) * step


def gpu_share(allocation: AllocationSpec, catalog: Catalog, *, layout: Mapping[str, int] | None = None) -> Decimal:
    """Whole GPUs one replica holds, exactly as billing counts them (``gpucore.pricing.gpu_share`` x quantity)."""
    try:
        model = catalog.get(allocation.gpu_model)
        share = unit_gpu_share(
            allocation.strategy,
            model=model,
            mig_profile=allocation.mig_profile,
            layout=layout,
            time_slice_replicas=allocation.time_slice_replicas,
        )
    except (CatalogError, PricingError) as error:
        raise ManifestError(str(error)) from error
    return share * allocation.quantity


INFERENCE_WORKLOADS = frozenset({"batch_inference", "realtime_inference"})


def size_container(
    workload_type: str, share: Decimal, *, guaranteed: bool = False, model_memory_gib: Decimal | None = None
) -> ContainerSize:
    """CPU and memory for a container holding ``share`` GPUs of a workload type, with floors for small slices.

    Inference loads its model's weights through host memory (a checkpoint is read into RAM before it is copied to
    the GPU), so an inference container's memory request and limit are at least ``model_memory_gib``, the replica's
    GPU memory: a 40 GiB model on one GPU gets 40 GiB of RAM, not the 16 GiB the per-GPU rule of thumb gives.
    """
    size = _by_share(workload_type, share, guaranteed=guaranteed)
    if model_memory_gib is None or workload_type not in INFERENCE_WORKLOADS:
        return size
    # At most the training high end per GPU-equivalent, so the container stays within the namespace's LimitRange and
    # ResourceQuota, which are sized by that rule (gpucore.manifests.namespace).
    ceiling_mi = max(MEMORY_LIMIT_FLOOR_MI, _round_up(share * TRAINING.memory_limit_gib * 1024, _MEMORY_STEP_MI))
    model_mi = min(ceiling_mi, _round_up(Decimal(model_memory_gib) * 1024, _MEMORY_STEP_MI))
    request = max(size.memory_request_mi, model_mi)
    return ContainerSize(size.cpu_request_m, size.cpu_limit_m, request, max(size.memory_limit_mi, request))


def _by_share(workload_type: str, share: Decimal, *, guaranteed: bool) -> ContainerSize:
    # Burstable (default): the guide's low end as the request, its high end as the limit. Guaranteed: requests equal
    # limits, with whole cores, so that the kubelet's static CPU manager can pin cores and its Topology Manager can
    # align them with the GPU's NUMA node (guide 000 §2.3 "Guaranteed QoS for critical GPU workloads").
    sizing = SIZING_BY_WORKLOAD[workload_type]
    if guaranteed:
        cores = max(CPU_REQUEST_FLOOR_M, _round_up(share * sizing.guaranteed_cpu * 1000, 1000))
        memory = max(MEMORY_LIMIT_FLOOR_MI, _round_up(share * sizing.guaranteed_memory_gib * 1024, _MEMORY_STEP_MI))
        return ContainerSize(cores, cores, memory, memory)
    cpu_request = max(CPU_REQUEST_FLOOR_M, _round_up(share * sizing.cpu_request * 1000, _CPU_STEP_M))
    memory_request = max(MEMORY_REQUEST_FLOOR_MI, _round_up(share * sizing.memory_request_gib * 1024, _MEMORY_STEP_MI))
    cpu_limit = max(CPU_LIMIT_FLOOR_M, cpu_request, _round_up(share * sizing.cpu_limit * 1000, _CPU_STEP_M))
    memory_limit = max(
        MEMORY_LIMIT_FLOOR_MI, memory_request, _round_up(share * sizing.memory_limit_gib * 1024, _MEMORY_STEP_MI)
    )
    return ContainerSize(cpu_request, cpu_limit, memory_request, memory_limit)


def container_ceiling(max_gpus: int) -> ContainerSize:
    """The most CPU and memory any rendered container can ask for: ``max_gpus`` GPUs at the training high end."""
    cpu = max(CPU_LIMIT_FLOOR_M, max_gpus * TRAINING.cpu_limit * 1000)
    memory = max(MEMORY_LIMIT_FLOOR_MI, max_gpus * TRAINING.memory_limit_gib * 1024)
    return ContainerSize(cpu, cpu, memory, memory)
