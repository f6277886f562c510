"""The pure troubleshooting map: scheduler and kubelet messages -> the causes and fixes of the GPU guide (8.1)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from gpucore.troubleshooting import Hint, troubleshoot

CASES = [
    # (message as the cluster says it, phase, the hint codes expected in order)
    ("0/4 nodes are available: 4 Insufficient nvidia.com/gpu.", "Pending", ["pool-full"]),
    (
        "Pending: 0/2 nodes are available: 2 Insufficient nvidia.com/mig-2g.10gb. preemption: 0/2 nodes are "
        "available: 2 No preemption victims found for incoming pod.",
        "Pending",
        ["pool-full"],
    ),
    ("0/3 nodes are available: 3 Insufficient nvidia.com/gpu.shared.", "Pending", ["pool-full"]),
    (
        "0/3 nodes are available: 3 node(s) had untolerated taint {nvidia.com/gpu: present}.",
        "Pending",
        ["untolerated-taint"],
    ),
    (
        "Warning FailedScheduling node(s) had taint {nvidia.com/gpu: present}, that the pod didn't tolerate",
        "Pending",
        ["untolerated-taint"],
    ),
    ("0/5 nodes are available: 5 node(s) didn't match Pod's node affinity/selector.", "Pending", ["no-matching-node"]),
    ("no nodes available with label nvidia.com/gpu.present=true", "Pending", ["no-matching-node"]),
    ("gpr-7-abcde: ImagePullBackOff", "Pending", ["image-pull"]),
    ('Failed to pull image "nvcr.io/x": rpc error: ErrImagePull', "Pending", ["image-pull"]),
    (
        'pods "gpr-7-x" is forbidden: exceeded quota: gpu-quota, requested: requests.nvidia.com/gpu=1, '
        "used: requests.nvidia.com/gpu=8, limited: requests.nvidia.com/gpu=8",
        "Pending",
        ["resource-quota"],
    ),
    ('pods "gpr-7" is forbidden: no PriorityClass with name tier1-realtime was found', "Pending", ["priority-class"]),
    ("gpr-7-abcde: CrashLoopBackOff", "Running", ["crash-loop"]),
    ("0/4 nodes are available: 4 Insufficient cpu.", "Pending", ["node-resources"]),
    (
        "0/6 nodes are available: 2 Insufficient nvidia.com/gpu, 4 node(s) didn't match Pod's node affinity/selector.",
        "Pending",
        ["pool-full", "no-matching-node"],
    ),
    # The request failed before anything was observed: the message alone is diagnosed.
    ("The cluster refused the objects: exceeded quota: gpu-quota", "", ["resource-quota"]),
    # The guide's cordoned nodes, topology spread, GPU not detected and CUDA out of memory.
    ("0/4 nodes are available: 4 node(s) were unschedulable.", "Pending", ["cordoned"]),
    (
        "0/3 nodes are available: 3 node(s) had untolerated taint {node.kubernetes.io/unschedulable: }.",
        "Pending",
        ["cordoned"],  # a cordon, not a GPU taint to tolerate
    ),
    (
        "0/4 nodes are available: 2 node(s) had untolerated taint {node.kubernetes.io/unschedulable: }, 2 node(s) "
        "had untolerated taint {nvidia.com/gpu: present}.",
        "Pending",
        ["cordoned", "untolerated-taint"],
    ),
    (
        "0/6 nodes are available: 2 Insufficient nvidia.com/gpu, 4 node(s) didn't match pod topology spread "
        "constraints.",
        "Pending",
        ["pool-full", "topology-spread"],
    ),
    (
        "gpr-7-abc: Error: RuntimeError: No CUDA GPUs are available; no CUDA-capable device is detected",
        "Failed",
        ["gpu-not-detected"],
    ),
    (
        "gpr-7-abc: StartError: nvidia-container-cli: initialization error: nvml error: driver not loaded",
        "Failed",
        ["gpu-not-detected"],
    ),
    (
        "gpr-7-abc: Error: torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB",
        "Failed",
        ["cuda-oom"],
    ),
    # Nothing known, nothing to say, or nothing wrong.
    ("", "Pending", []),
    ("Running.", "Running", []),
    ("Written to the GitOps tree; Argo CD or Flux applies it.", "Unobservable", []),
    ("Insufficient nvidia.com/gpu (an old message)", "Succeeded", []),
]


@pytest.mark.parametrize(("message", "phase", "codes"), CASES)
def test_messages_map_to_the_guides_causes(message: str, phase: str, codes: list[str]) -> None:
    hints = troubleshoot(message, phase=phase)

    assert [hint.code for hint in hints] == codes
    assert all(isinstance(hint, Hint) and hint.title and hint.explanation and hint.fixes for hint in hints)


def test_a_full_pool_names_the_resource_and_the_ways_out() -> None:
    (hint,) = troubleshoot("0/2 nodes are available: 2 Insufficient nvidia.com/mig-1g.5gb.", phase="Pending")

    assert "nvidia.com/mig-1g.5gb" in hint.title
    fixes = " ".join(hint.fixes).lower()
    assert "wait" in fixes and "release" in fixes and "capacity" in fixes and "another pool" in fixes
    assert "mig.config" in fixes  # a MIG slice may simply not be in the nodes' layout


def test_a_selector_mismatch_mentions_the_shared_product_label() -> None:
    (hint,) = troubleshoot("3 node(s) didn't match Pod's node affinity/selector", phase="Pending")

    assert "-SHARED" in hint.explanation and "nvidia.com/gpu.product" in hint.explanation


def test_each_resource_is_reported_once() -> None:
    message = "2 Insufficient nvidia.com/gpu, 2 Insufficient nvidia.com/gpu, 1 Insufficient nvidia.com/mig-3g.20gb"

    assert [h.title for h in troubleshoot(message)] == [
        "The pool is full: no node has free nvidia.com/gpu",
        "The pool is full: no node has free nvidia.com/mig-3g.20gb",
    ]


def test_the_module_imports_no_framework() -> None:
    code = "import sys, gpucore.troubleshooting; print(sorted(m for m in sys.modules if m.startswith('django')))"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)

    assert result.stdout.strip() == "[]"
