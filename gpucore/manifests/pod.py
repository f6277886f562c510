"""A request's pod template: its one container (GPUs, environment, probes, mounts) and the pod around it.

Pure: plain dicts out. Patterns from the guides (docs/reference-sources.md#guides): probes and the pod security context
of guide 004 §6, requests equal to limits for GPUs (guide 002 §7.1), model serving of guide 003.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from gpucore.catalog import GpuModelSpec
from gpucore.manifests.contexts import WorkloadContext
from gpucore.manifests.dra import container_claims, pod_claims
from gpucore.manifests.jobset import master_pod_hostname
from gpucore.manifests.kai import KAI_SCHEDULER_NAME
from gpucore.manifests.naming import PRODUCT_LABEL, REPLICAS_LABEL, workload_name
from gpucore.manifests.scheduling import node_selector, spread_across_nodes, tolerations, topology_affinity
from gpucore.manifests.sizing import ContainerSize, format_memory
from gpucore.sla import SlaTierSpec

JOB_WORKLOADS = ("training", "batch_inference", "hpc_simulation")
# Several pods of these form one process group (torchrun/NCCL, MPI): rendezvous and all-or-nothing admission.
DISTRIBUTED_WORKLOADS = ("training", "hpc_simulation")
COMPLETION_INDEX_ANNOTATION = "batch.kubernetes.io/job-completion-index"
SAFE_TO_EVICT_ANNOTATION = "cluster-autoscaler.kubernetes.io/safe-to-evict"
CONTAINER_NAME = "main"
NUMA_ANNOTATION = "gpu-portal/numa-alignment"
SHM_PATH = "/dev/shm"  # noqa: S108 - the container's shared memory mount, not a temporary file
RUN_AS_ID = 1000  # guide 004 §6, "Pod Security Standards"
# User 1000 has no writable home in NGC images (/root, or a /home without that user): Hugging Face, torch and pip
# caches would fail on first download. HOME and the caches point at an emptyDir the user owns (fsGroup); a request's
# own env still wins.
HOME_PATH = "/home/portal"
WRITABLE_HOME_ENV = {
    "HOME": HOME_PATH,
    "XDG_CACHE_HOME": f"{HOME_PATH}/.cache",
    "HF_HOME": f"{HOME_PATH}/.cache/huggingface",
    "TORCH_HOME": f"{HOME_PATH}/.cache/torch",
}
# Model loading can take minutes: 60 x 10 s = 10 minutes before liveness starts (guide 003, "Complete GPU Deployment").
STARTUP_PERIOD_SECONDS = 10
STARTUP_FAILURE_THRESHOLD = 60
# Tiers at or above this availability get a PodDisruptionBudget and Guaranteed QoS (tier 1: 99.99 %).
CRITICAL_AVAILABILITY_PCT = Decimal("99.99")


def is_critical_tier(tier: SlaTierSpec | None) -> bool:
    """Whether a tier's availability target calls for a PodDisruptionBudget and Guaranteed QoS (tier 1)."""
    return (
        tier is not None
        and not tier.preemptible
        and tier.availability_pct is not None
        and tier.availability_pct >= CRITICAL_AVAILABILITY_PCT
    )


def _container(ctx: WorkloadContext, size: ContainerSize) -> dict[str, Any]:
    allocation = ctx.allocation
    distributed = is_distributed(ctx)
    # With DRA the GPUs come from the pod's claim, not from an extended resource.
    gpus = {} if ctx.device_api == "dra" else {allocation.resource_name: str(allocation.quantity)}
    # One process per GPU (or per MIG instance) is the norm; without this, OpenMP and PyTorch start a thread per
    # core of the whole node (guide 004 §6 sets OMP_NUM_THREADS to the cores per process).
    threads = max(1, size.cpu_request_m // 1000 // allocation.quantity)
    env = {
        "GPU_PORTAL_REQUEST_ID": str(ctx.request_id),
        "OMP_NUM_THREADS": str(threads),
        **WRITABLE_HOME_ENV,
        **ctx.env,
    }
    container: dict[str, Any] = {"name": CONTAINER_NAME, "image": ctx.image}
    if ctx.command:
        container["command"] = list(ctx.command)
    if ctx.args:
        container["args"] = list(ctx.args)
    container["env"] = [{"name": name, "value": value} for name, value in env.items()]
    if distributed:
        taken = set(env)
        container["env"].extend(item for item in _distributed_env(ctx) if item["name"] not in taken)
    # GPUs are not overcommittable: requests must equal limits (guide 002 §7.1).
    container["resources"] = {"requests": {**size.requests(), **gpus}, "limits": {**size.limits(), **gpus}}
    if ctx.device_api == "dra":
        container["resources"]["claims"] = container_claims()
    container["securityContext"] = {
        "allowPrivilegeEscalation": False,
        "capabilities": {"drop": ["ALL"]},
        "runAsNonRoot": True,
    }
    container["volumeMounts"] = [{"name": "dshm", "mountPath": SHM_PATH}, {"name": "home", "mountPath": HOME_PATH}]
    # A failed container's last log lines become its termination message, so the request page can name the cause
    # ("CUDA out of memory", "no CUDA-capable device", gpucore.troubleshooting) without anyone reading logs.
    container["terminationMessagePolicy"] = "FallbackToLogsOnError"
    if ctx.workload_type == "realtime_inference":
        container["ports"] = [{"name": "http", "containerPort": ctx.port, "protocol": "TCP"}]
        container["startupProbe"] = {
            **_probe(ctx.health_path),
            "periodSeconds": STARTUP_PERIOD_SECONDS,
            "failureThreshold": STARTUP_FAILURE_THRESHOLD,
        }
        container["readinessProbe"] = {**_probe(ctx.readiness_path), "periodSeconds": 5, "failureThreshold": 3}
        container["livenessProbe"] = {
            **_probe(ctx.health_path),
            "periodSeconds": 30,
            "timeoutSeconds": 5,
            "failureThreshold": 3,
        }
    elif distributed:
        container["ports"] = [{"name": "rendezvous", "containerPort": ctx.rendezvous_port, "protocol": "TCP"}]
    return container


def _probe(path: str | None) -> dict[str, Any]:
    # An HTTP probe where the image's health endpoint is known (Triton's /v2/health/live and /ready), else a TCP
    # check of the serving port: a wrong HTTP path would restart a healthy server forever.
    if path is None:
        return {"tcpSocket": {"port": "http"}}
    return {"httpGet": {"path": path, "port": "http"}}


def is_distributed(ctx: WorkloadContext) -> bool:
    """Whether a request runs one training or HPC process group over several pods (rendezvous, all-or-nothing)."""
    return ctx.workload_type in DISTRIBUTED_WORKLOADS and ctx.allocation.replicas > 1


def _distributed_env(ctx: WorkloadContext) -> list[dict[str, Any]]:
    """The environment torchrun and NCCL expect, as Kubeflow's PyTorchJob sets it, from the Job's completion index."""
    # Pod 0 of the JobSet is <name>-worker-0-0 and, with the JobSet's subdomain and the headless Service of the same
    # name, resolves as <name>-worker-0-0.<service> inside the namespace: the rendezvous master. WORLD_SIZE and RANK
    # count pods (nodes, in torchrun's words); torchrun reads PET_NNODES/PET_NODE_RANK/PET_NPROC_PER_NODE/PET_MASTER_*
    # as its --nnodes/--node-rank/--nproc-per-node/--master-addr/--master-port and sets the per-process RANK and
    # WORLD_SIZE.
    name = workload_name(ctx.request_id)
    master = master_pod_hostname(name)
    index = {"fieldRef": {"fieldPath": f"metadata.annotations['{COMPLETION_INDEX_ANNOTATION}']"}}
    replicas = str(ctx.allocation.replicas)
    port = str(ctx.rendezvous_port)
    return [
        {"name": "MASTER_ADDR", "value": master},
        {"name": "MASTER_PORT", "value": port},
        {"name": "WORLD_SIZE", "value": replicas},
        {"name": "RANK", "valueFrom": index},
        {"name": "PET_MASTER_ADDR", "value": master},
        {"name": "PET_MASTER_PORT", "value": port},
        {"name": "PET_NNODES", "value": replicas},
        {"name": "PET_NODE_RANK", "valueFrom": index},
        {"name": "PET_NPROC_PER_NODE", "value": str(ctx.allocation.quantity)},
    ]


def pod_template(
    ctx: WorkloadContext, labels: dict[str, str], model: GpuModelSpec, size: ContainerSize
) -> dict[str, Any]:
    """The pod template of a request's Job, JobSet or Deployment."""
    allocation = ctx.allocation
    annotations = {"kubectl.kubernetes.io/default-container": CONTAINER_NAME}
    spec: dict[str, Any] = {}
    if ctx.tier is not None:
        spec["priorityClassName"] = ctx.tier.priority_class_name
    if ctx.team.kai_queue is not None:
        spec["schedulerName"] = KAI_SCHEDULER_NAME
    spec["automountServiceAccountToken"] = False  # workloads never talk to the API server
    spec["securityContext"] = {
        "runAsNonRoot": True,
        "runAsUser": RUN_AS_ID,
        "runAsGroup": RUN_AS_ID,
        "fsGroup": RUN_AS_ID,
        "seccompProfile": {"type": "RuntimeDefault"},
    }
    selector = node_selector(allocation, model, ctx.pool)
    if ctx.device_api == "dra":
        # The claim's CEL selectors choose the device; GPU Feature Discovery's labels are not needed (nor may exist).
        selector = {key: value for key, value in selector.items() if key not in (PRODUCT_LABEL, REPLICAS_LABEL)}
        spec["resourceClaims"] = pod_claims(ctx.request_id)
    if selector:
        spec["nodeSelector"] = selector
    spec["tolerations"] = tolerations(ctx.pool)
    if ctx.topology_aware:
        spec["affinity"] = topology_affinity(ctx.request_id, allocation.replicas)
        annotations[NUMA_ANNOTATION] = "single-numa-node"
    if ctx.workload_type not in JOB_WORKLOADS and allocation.replicas > 1 and is_critical_tier(ctx.tier):
        # 99.99 % is kept by two replicas only if one node's reboot cannot take both.
        spec["topologySpreadConstraints"] = spread_across_nodes(ctx.request_id)
    if ctx.workload_type in JOB_WORKLOADS:
        spec["restartPolicy"] = "Never"
        if ctx.tier is not None and not ctx.tier.preemptible:
            # Tier 1-2 batch work is not preemptible: the cluster autoscaler must not evict it to shrink the pool
            # (a drain by an operator is bounded by the PodDisruptionBudget instead).
            annotations[SAFE_TO_EVICT_ANNOTATION] = "false"
    if is_distributed(ctx):
        # Pod <job>-<index> becomes <job>-<index>.<subdomain>: the headless Service of that name publishes it.
        spec["subdomain"] = workload_name(ctx.request_id)
    spec["containers"] = [_container(ctx, size)]
    # The container runtime's 64 MiB /dev/shm is too small for PyTorch DataLoader workers and NCCL; a memory-backed
    # emptyDir counts against the container's memory limit, so half the memory request bounds it.
    shm = {"medium": "Memory", "sizeLimit": format_memory(size.memory_request_mi // 2)}
    spec["volumes"] = [{"name": "dshm", "emptyDir": shm}, {"name": "home", "emptyDir": {}}]
    return {"metadata": {"labels": dict(labels), "annotations": annotations}, "spec": spec}
