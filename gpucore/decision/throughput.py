"""The work a GPU does per hour, for choosing training and HPC models by cost per unit of work. Pure: no Django.

The cheapest GPU-hour is not the cheapest run: a T4 hour costs a thirteenth of an H100 hour but does a fifteenth of
its FP16 work. Training is ranked by dense FP16/BF16 tensor throughput (``GpuModelSpec.dense_fp16_tflops``); HPC
simulation by FP64 throughput (the Tensor Core figure where the GPU has one), below. Other limits (memory bandwidth,
NVLink) are not in the catalog; the what-if's per-run estimate says so.
"""

from __future__ import annotations

from decimal import Decimal

from gpucore.catalog import GpuModelSpec
from gpucore.vocabulary import WorkloadType

# FP64 TFLOPS per GPU from NVIDIA's datasheets (docs/reference-sources.md, "Throughput"): A100 and A30 FP64 Tensor
# Core, H100/H200 SXM FP64 Tensor Core, V100 SXM2 double precision; T4 and L4 list none, so 1/32 (Turing) and 1/64
# (Ada) of their FP32 rate (8.1 and 30.3 TFLOPS).
FP64_TFLOPS: dict[str, Decimal] = {
    "a100-40gb": Decimal("19.5"),
    "a100-80gb": Decimal("19.5"),
    "h100-80gb": Decimal("67"),
    "h200": Decimal("67"),
    "a30": Decimal("10.3"),
    "v100-32gb": Decimal("7.8"),
    "t4": Decimal("0.25"),
    "l4": Decimal("0.47"),
}
PER_WORK_WORKLOADS = frozenset({WorkloadType.TRAINING, WorkloadType.HPC_SIMULATION})


def work_tflops(model: GpuModelSpec, workload_type: WorkloadType) -> Decimal | None:
    """The TFLOPS that measure one GPU's work for this workload type (None: not known, or not a per-run workload)."""
    if workload_type is WorkloadType.HPC_SIMULATION:
        return next((FP64_TFLOPS[name] for name in model.folded_names if name in FP64_TFLOPS), None)
    if workload_type is WorkloadType.TRAINING:
        return model.dense_fp16_tflops
    return None


def precision_words(workload_type: WorkloadType) -> str:
    return "FP64" if workload_type is WorkloadType.HPC_SIMULATION else "dense FP16/BF16"
