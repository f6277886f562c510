"""Why a workload waits, and what to do about it: scheduler and kubelet messages mapped to the guide's fixes.

Pure: strings in, frozen dataclasses out; nothing here imports Django. The reasons and fixes follow the GPU
scheduling guide, section 8.1 "Pod Stuck in Pending State" (Insufficient nvidia.com/gpu, no nodes with the label,
an untolerated taint, cordoned nodes), 8.2 "GPU Not Detected in Container" and 8.3 "GPU Memory Errors", topology
spread constraints, plus the image and ResourceQuota refusals a request's pods meet in practice.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

# Phases whose message never names a problem: the work is done, or a GitOps tree cannot see the cluster.
HEALTHY_PHASES = frozenset({"Succeeded", "Unobservable"})

_INSUFFICIENT = re.compile(r"Insufficient (nvidia\.com/(?:gpu(?:\.shared)?|mig-[\w.+]+))")
_INSUFFICIENT_OTHER = re.compile(r"Insufficient (cpu|memory|ephemeral-storage)")
_TAINT = re.compile(r"untolerated taint|didn't tolerate|had taint", re.IGNORECASE)
_SELECTOR = re.compile(
    r"didn't match (?:Pod's )?node (?:affinity|selector)|node\(s\) didn't match(?! pod topology)|"
    r"no nodes available with label",
    re.IGNORECASE,
)
_IMAGE = re.compile(r"ImagePullBackOff|ErrImagePull|InvalidImageName|pull access denied|manifest unknown")
_QUOTA = re.compile(r"exceeded quota", re.IGNORECASE)
_PRIORITY = re.compile(r"no PriorityClass with name", re.IGNORECASE)
_CRASH = re.compile(r"CrashLoopBackOff")
# Guide 8.1 solution 3: cordoned nodes. Older schedulers say "node(s) were unschedulable"; newer ones report the
# cordon as the taint node.kubernetes.io/unschedulable, which is not a GPU taint to tolerate.
_CORDON_TAINT = re.compile(r"(?:\d+ )?node\(s\) had (?:untolerated )?taint \{node\.kubernetes\.io/unschedulable: ?\}")
_CORDONED = re.compile(r"were unschedulable|node\.kubernetes\.io/unschedulable", re.IGNORECASE)
_SPREAD = re.compile(r"didn't match pod topology spread constraints", re.IGNORECASE)
# Guide 8.2 "GPU Not Detected in Container": CUDA, PyTorch, NVML and the NVIDIA container runtime's words.
_NO_GPU = re.compile(
    r"no CUDA-capable device is detected|Found no NVIDIA driver|Failed to initialize NVML|"
    r"could not select device driver|nvidia-container-cli|CUDA driver version is insufficient",
    re.IGNORECASE,
)
# Guide 8.3 "GPU Memory Errors (OOM)" (the container's last log lines reach the message on failure).
_CUDA_OOM = re.compile(r"CUDA out of memory|OutOfMemoryError|CUDA_ERROR_OUT_OF_MEMORY|cudaErrorMemoryAllocation")


@dataclass(frozen=True)
class Hint:
    """One recognised cause of a stuck workload: a stable code, a title, what it means and the fixes to try."""

    code: str
    title: str
    explanation: str
    fixes: tuple[str, ...]


def _pool_full(resource: str) -> Hint:
    mig = resource.startswith("nvidia.com/mig-")
    what = f"MIG slices ({resource})" if mig else f"{resource} units"
    return Hint(
        code="pool-full",
        title=f"The pool is full: no node has free {resource}",
        explanation=(
            f"The scheduler found no node with enough free {what}: every one of them is allocated to other pods."
        ),
        fixes=(
            "Wait: the pod is scheduled as soon as another allocation on the pool is released or expires.",
            "Release one of your team's allocations you no longer need.",
            "Ask the platform admins for more capacity on the pool, or submit the request again for another pool.",
            *(("Check that the nodes' MIG layout (nvidia.com/mig.config) offers this profile at all.",) if mig else ()),
        ),
    )


_TAINT_HINT = Hint(
    code="untolerated-taint",
    title="The GPU nodes carry a taint the pod does not tolerate",
    explanation=(
        "The pool's nodes are tainted (typically nvidia.com/gpu=present:NoSchedule) and the rendered pod has no "
        "matching toleration, so the scheduler keeps it off them."
    ),
    fixes=(
        "Platform admins: make the node pool's taints in the portal match the nodes' real taints "
        "(kubectl describe nodes | grep Taints), then re-apply the request.",
        "Check the tolerations in the manifests below against those taints (key, value and effect).",
    ),
)
_SELECTOR_HINT = Hint(
    code="no-matching-node",
    title="No node carries the labels the pod asks for",
    explanation=(
        "The pod's node selector names the GPU product label (nvidia.com/gpu.product) and the pool's labels, and no "
        "node has them all. Time-sliced nodes are often labelled '<product>-SHARED' by GPU "
        "Feature Discovery, which does not match the plain product name."
    ),
    fixes=(
        "Compare the nodeSelector in the manifests below with the nodes' labels "
        "(kubectl get nodes -L nvidia.com/gpu.product).",
        "Platform admins: fix the GPU model's product label or the pool's node labels in the portal (mind a "
        "-SHARED suffix on time-sliced nodes), or label the nodes; then re-apply the request.",
        "Check that the GPU Operator runs (kubectl get pods -n gpu-operator): without GPU Feature Discovery no "
        "node has the labels.",
    ),
)
_IMAGE_HINT = Hint(
    code="image-pull",
    title="The container image cannot be pulled",
    explanation="The kubelet could not pull the image: a wrong name or tag, or a registry that needs credentials.",
    fixes=(
        "Check the image name and tag (docker pull <image> from a machine that can reach the registry).",
        "For a private registry, ask the platform admins for an imagePullSecret in the team's namespace.",
    ),
)
_QUOTA_HINT = Hint(
    code="resource-quota",
    title="The namespace's ResourceQuota refused the pod",
    explanation=(
        "The team's namespace has a ResourceQuota on GPU requests, and this pod would take it over the limit; the "
        "pod is not created at all."
    ),
    fixes=(
        "Release an allocation of your team, or ask a platform admin to raise the team's quota in the portal "
        "(the ResourceQuota is rendered from it).",
        "If the quota in the portal is already high enough, re-apply the request so the namespace gets the new "
        "ResourceQuota.",
    ),
)
_PRIORITY_HINT = Hint(
    code="priority-class",
    title="The PriorityClass of the SLA tier is missing",
    explanation="The pod names a PriorityClass the cluster does not have, so the API server refuses it.",
    fixes=("Platform admins: re-apply the request; the PriorityClass of its tier is applied before the workload.",),
)
_CRASH_HINT = Hint(
    code="crash-loop",
    title="The container starts and crashes",
    explanation="The image runs but the process exits again and again (CrashLoopBackOff).",
    fixes=(
        "Read the container's logs (kubectl logs <pod> --previous) for the error.",
        "Check the command and that the image's CUDA version suits the node's driver (nvidia-smi).",
    ),
)


_CORDONED_HINT = Hint(
    code="cordoned",
    title="The GPU nodes are cordoned",
    explanation=(
        "The nodes that could run the pod are marked unschedulable (SchedulingDisabled), usually for maintenance or "
        "a drain; the scheduler places nothing new on them."
    ),
    fixes=(
        "Check: kubectl get nodes | grep SchedulingDisabled.",
        "Wait for the maintenance to end; platform admins uncordon the nodes with kubectl uncordon <node>.",
    ),
)
_SPREAD_HINT = Hint(
    code="topology-spread",
    title="A topology spread constraint keeps the pod off the free nodes",
    explanation=(
        "The free GPUs sit on nodes (or zones) that already hold their share of the pods under a topology spread "
        "constraint with whenUnsatisfiable: DoNotSchedule, so placing the pod there would skew the spread."
    ),
    fixes=(
        "Compare the constraints (kubectl get pod <pod> -o yaml | grep -A8 topologySpreadConstraints) with where "
        "the pods run; a cluster-wide default constraint may apply even if the pod names none.",
        "Platform admins: relax maxSkew or use whenUnsatisfiable: ScheduleAnyway for GPU pools, or add capacity "
        "in the under-filled zone.",
    ),
)
_NO_GPU_HINT = Hint(
    code="gpu-not-detected",
    title="The container does not see its GPU",
    explanation=(
        "The pod was given a GPU but CUDA finds no device or driver: the NVIDIA container toolkit or runtime on "
        "the node, or the device plugin, is not set up."
    ),
    fixes=(
        "Run nvidia-smi in the pod (kubectl exec <pod> -- nvidia-smi) and list /dev/nvidia*.",
        "Platform admins: check the node's containerd config for the nvidia runtime and restart the device plugin "
        "(kubectl rollout restart daemonset nvidia-device-plugin-daemonset -n gpu-operator).",
        "Check that the image's CUDA version suits the node's driver.",
    ),
)
_CUDA_OOM_HINT = Hint(
    code="cuda-oom",
    title="The workload ran out of GPU memory",
    explanation=(
        "CUDA could not allocate GPU memory: the model, batch or activations need more than the GPU (or MIG "
        "slice) holds."
    ),
    fixes=(
        "Reduce the batch size, or use gradient accumulation to keep the effective batch.",
        "Submit the request again with a higher GPU memory per replica: the portal then picks a larger MIG "
        "profile or GPU model.",
    ),
)


def _node_resources_hint(resource: str) -> Hint:
    return Hint(
        code="node-resources",
        title=f"The nodes have too little free {resource}",
        explanation=f"A node with free GPUs exists but not with enough free {resource} for the pod's request.",
        fixes=(
            "Wait for other pods on the pool to finish, or ask the platform admins to review the pool's CPU and "
            "memory per GPU.",
        ),
    )


def troubleshoot(message: str, *, phase: str = "") -> tuple[Hint, ...]:
    """The recognised causes in a scheduler or kubelet message, most specific first; empty when none is known."""
    if not message or phase in HEALTHY_PHASES:
        return ()
    hints: list[Hint] = []
    resources = list(dict.fromkeys(_INSUFFICIENT.findall(message)))
    hints.extend(_pool_full(resource) for resource in resources)
    # A cordon reported as a taint is not a taint the pod should tolerate: judge the other taints without it.
    without_cordon = _CORDON_TAINT.sub("", message)
    checks = (
        (_QUOTA, _QUOTA_HINT, message),
        (_CORDONED, _CORDONED_HINT, message),
        (_TAINT, _TAINT_HINT, without_cordon),
        (_SELECTOR, _SELECTOR_HINT, message),
        (_SPREAD, _SPREAD_HINT, message),
        (_IMAGE, _IMAGE_HINT, message),
        (_PRIORITY, _PRIORITY_HINT, message),
        (_NO_GPU, _NO_GPU_HINT, message),
        (_CUDA_OOM, _CUDA_OOM_HINT, message),
        (_CRASH, _CRASH_HINT, message),
    )
    hints.extend(hint for pattern, hint, text in checks if pattern.search(text))
    hints.extend(_node_resources_hint(other) for other in dict.fromkeys(_INSUFFICIENT_OTHER.findall(message)))
    return tuple(hints)
