"""The guide's hardware-vs-software troubleshooting tree, driven by what the portal measured. Pure.

Guide Part 3.4 ("Troubleshooting Decision Tree"): a GPU issue is a *hardware* issue when the GPU reported XID errors
or a temperature spike, a *software* issue on a driver mismatch or CUDA errors, and otherwise a matter for the
container runtime. Each question becomes a branch here with the evidence that answers it:

- XID errors: the codes ``DCGM_FI_DEV_XID_ERRORS`` showed (``gpucore.xid``), each with its meaning and next step.
  The guide files every XID under hardware; NVIDIA's catalog names a few (13, 31, 43, 45) as usually raised by the
  application, so a branch made only of those says "software" and why;
- driver mismatch: the GPUs' nodes report different driver versions (DCGM's ``DCGM_FI_DRIVER_VERSION``), or a
  message says the driver and the CUDA libraries disagree;
- temperature spike: a GPU's hottest minute above the guide's 83 °C alert (``gpucore.alerts``);
- CUDA errors: the workload's messages name one;
- container runtime: only when the caller knows something is wrong and no other branch applies.

Only the branches that apply are returned, in the tree's order.
"""

from __future__ import annotations

import enum
import re
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime

from gpucore.alerts import TEMPERATURE_LIMIT_C
from gpucore.xid import Cause, XidCode, describe

MAX_EXCERPT = 200

# What the NVIDIA driver, NVML, the CUDA runtime and PyTorch say when the node's driver and the container's CUDA
# libraries disagree (guide: "a mismatch between the driver on the node and the libraries in the container").
_DRIVER_MISMATCH = re.compile(
    r"Driver/library version mismatch|CUDA driver version is insufficient|cudaErrorInsufficientDriver|"
    r"CUDA_ERROR_(?:SYSTEM_DRIVER_MISMATCH|COMPAT_NOT_SUPPORTED_ON_DEVICE)|forward compatibility was attempted|"
    r"The NVIDIA driver on your system is too old",
    re.IGNORECASE,
)
# CUDA runtime and driver API errors and what the common libraries print for them.
_CUDA_ERROR = re.compile(
    r"CUDA error|CUDA_ERROR_\w+|cudaError\w+|CUDA out of memory|OutOfMemoryError|illegal memory access|"
    r"device-side assert|unspecified launch failure|CUBLAS_STATUS_\w+|CUDNN_STATUS_\w+|"
    r"NCCL error|ncclUnhandledCudaError",
    re.IGNORECASE,
)


class Verdict(enum.StrEnum):
    """Where a branch points: the GPU (hardware), the job or its stack (software), or the container runtime."""

    HARDWARE = "hardware"
    SOFTWARE = "software"
    RUNTIME = "runtime"


@dataclass(frozen=True, slots=True)
class GpuSignals:
    """What was measured on one GPU over the window looked at."""

    gpu_uuid: str
    hostname: str = ""
    gpu_index: int | None = None
    gpu_model: str = ""
    driver_version: str = ""
    xid_codes: tuple[int, ...] = ()
    xid_events: int = 0
    last_xid_hour: datetime | None = None
    max_temperature_c: float | None = None
    hottest_hour: datetime | None = None

    @property
    def label(self) -> str:
        index = f"GPU {self.gpu_index}" if self.gpu_index is not None else self.gpu_uuid
        return f"{index} on {self.hostname}" if self.hostname else index


@dataclass(frozen=True, slots=True)
class Message:
    """A text the workload or the cluster produced (a pod's status, a container's last log line), and whose it is."""

    source: str
    text: str


@dataclass(frozen=True, slots=True)
class XidFinding:
    """One XID code seen, what it means, and on which GPUs."""

    xid: XidCode
    gpus: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Branch:
    """One question of the tree that applies: its answer, what points there and what to do next."""

    key: str
    question: str
    verdict: Verdict
    title: str
    evidence: tuple[str, ...]
    next_steps: tuple[str, ...]
    xids: tuple[XidFinding, ...] = ()


def _excerpt(text: str, match: re.Match[str]) -> str:
    # The line holding the match, cut around it: a log tail can be long.
    start = text.rfind("\n", 0, match.start()) + 1
    end = text.find("\n", match.end())
    line = text[start : end if end >= 0 else len(text)].strip()
    if len(line) <= MAX_EXCERPT:
        return line
    at = max(0, match.start() - start - MAX_EXCERPT // 2)
    return "…" + line[at : at + MAX_EXCERPT] + "…"


def _matches(pattern: re.Pattern[str], messages: Iterable[Message]) -> list[str]:
    found = []
    for message in messages:
        match = pattern.search(message.text or "")
        if match:
            found.append(f"{message.source}: {_excerpt(message.text, match)}")
    return found


def _xid_branch(gpus: Sequence[GpuSignals]) -> Branch | None:
    on: dict[int, list[str]] = defaultdict(list)
    for gpu in gpus:
        for code in gpu.xid_codes:
            on[code].append(gpu.label)
    if not on:
        return None
    findings = tuple(XidFinding(describe(code), tuple(dict.fromkeys(on[code]))) for code in sorted(on))
    evidence = tuple(
        f"{gpu.label}: {gpu.xid_events} XID event{'s' if gpu.xid_events != 1 else ''}"
        f" (XID {', '.join(str(code) for code in gpu.xid_codes)})"
        + (f", the last in the hour of {gpu.last_xid_hour:%Y-%m-%d %H:00} UTC" if gpu.last_xid_hour else "")
        for gpu in gpus
        if gpu.xid_codes
    )
    software_only = all(f.xid.cause is Cause.SOFTWARE for f in findings)
    if software_only:
        return Branch(
            key="xid",
            question="XID errors?",
            verdict=Verdict.SOFTWARE,
            title="XID errors, of the kind the application raises",
            evidence=evidence,
            next_steps=(
                "XID errors usually point to the hardware, but NVIDIA's Xid catalog names these codes as usually "
                "caused by the application: fix the job first, and suspect the GPU only if they recur with "
                "other code on the same GPU.",
            ),
            xids=findings,
        )
    return Branch(
        key="xid",
        question="XID errors?",
        verdict=Verdict.HARDWARE,
        title="XID errors: suspect the GPU",
        evidence=evidence,
        next_steps=(
            "Platform admins: cordon the node (kubectl cordon <node>) so no new work lands on the GPU, then follow "
            "each code's next step below.",
            "Read the node's kernel log for the full XID lines (dmesg | grep -i xid) and run DCGM's diagnostics "
            "(dcgmi diag -r 2) before putting the GPU back.",
        ),
        xids=findings,
    )


def _driver_branch(
    gpus: Sequence[GpuSignals], drivers: Mapping[str, str], messages: Sequence[Message]
) -> Branch | None:
    by_version: dict[str, set[str]] = defaultdict(set)
    for host, version in drivers.items():
        if version:
            by_version[version].add(host)
    for gpu in gpus:
        if gpu.driver_version and gpu.hostname:
            by_version[gpu.driver_version].add(gpu.hostname)
    evidence = []
    if len(by_version) > 1:
        evidence.append(
            "Nodes run different NVIDIA drivers: "
            + "; ".join(f"{version} on {', '.join(sorted(hosts))}" for version, hosts in sorted(by_version.items()))
        )
    evidence.extend(_matches(_DRIVER_MISMATCH, messages))
    if not evidence:
        return None
    return Branch(
        key="driver",
        question="Driver mismatch?",
        verdict=Verdict.SOFTWARE,
        title="Driver mismatch",
        evidence=tuple(evidence),
        next_steps=(
            "Platform admins: let the GPU Operator roll one driver version out to every GPU node of the cluster "
            "(kubectl get pods -n gpu-operator -l app=nvidia-driver-daemonset), and reboot nodes whose kernel "
            "module and libraries disagree.",
            "Check that the image's CUDA version is supported by the node's driver (nvidia-smi shows the highest "
            "CUDA version the driver supports).",
        ),
    )


def _temperature_branch(gpus: Sequence[GpuSignals]) -> Branch | None:
    hot = [g for g in gpus if g.max_temperature_c is not None and g.max_temperature_c > TEMPERATURE_LIMIT_C]
    if not hot:
        return None
    evidence = tuple(
        f"{g.label} reached {g.max_temperature_c:.0f} °C"
        + (f" (hour of {g.hottest_hour:%Y-%m-%d %H:00} UTC)" if g.hottest_hour else "")
        for g in sorted(hot, key=lambda g: -(g.max_temperature_c or 0.0))
    )
    return Branch(
        key="temperature",
        question="Temperature spike?",
        verdict=Verdict.HARDWARE,
        title=f"Temperature above {TEMPERATURE_LIMIT_C:.0f} °C",
        evidence=evidence,
        next_steps=(
            "Platform admins: check the node's cooling (fans, airflow, inlet temperature) and whether the GPU "
            "throttles (nvidia-smi -q -d PERFORMANCE).",
            "If one GPU runs hot where its neighbours do not, drain the node and have the GPU inspected.",
        ),
    )


def _cuda_branch(messages: Sequence[Message]) -> Branch | None:
    evidence = _matches(_CUDA_ERROR, messages)
    if not evidence:
        return None
    return Branch(
        key="cuda",
        question="CUDA errors?",
        verdict=Verdict.SOFTWARE,
        title="CUDA errors in the workload",
        evidence=tuple(evidence),
        next_steps=(
            "Read the container's log around the error (kubectl logs <pod> --previous) and rerun with "
            "CUDA_LAUNCH_BLOCKING=1 to see the failing call.",
            "Out of memory: lower the batch size or ask for more GPU memory per replica; an illegal address or a "
            "device-side assert: a bug in the job or a library, not the GPU.",
        ),
    )


_RUNTIME_BRANCH = Branch(
    key="runtime",
    question="None of the above",
    verdict=Verdict.RUNTIME,
    title="Check the container runtime",
    evidence=("The workload fails, and no XID, driver mismatch, temperature spike or CUDA error was seen.",),
    next_steps=(
        "Run nvidia-smi in the pod (kubectl exec <pod> -- nvidia-smi): it must list the allocated GPU.",
        "Platform admins: check the NVIDIA container toolkit on the node (containerd's nvidia runtime, the "
        "RuntimeClass) and the device plugin's pod and logs in the gpu-operator namespace.",
    ),
)


def triage(
    *,
    gpus: Sequence[GpuSignals] = (),
    drivers: Mapping[str, str] | None = None,
    messages: Sequence[Message] = (),
    failing: bool = False,
) -> tuple[Branch, ...]:
    """The branches of the guide's tree that the evidence answers "yes", in the tree's order.

    ``gpus``: the GPUs looked at (a request's, or a cluster's); ``drivers``: the driver version of each node of the
    cluster (hostname -> version), to see a mismatch beyond these GPUs; ``messages``: what the workload said;
    ``failing``: the caller knows the workload is in trouble, so the tree's last leaf applies when nothing else does.
    """
    branches = [
        _xid_branch(gpus),
        _driver_branch(gpus, drivers or {}, messages),
        _temperature_branch(gpus),
        _cuda_branch(messages),
    ]
    found = tuple(branch for branch in branches if branch is not None)
    if not found and failing:
        return (_RUNTIME_BRANCH,)
    return found
