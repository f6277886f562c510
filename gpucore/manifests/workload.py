"""A request's workload objects: a Job or a Deployment holding the GPUs, and its Service and PodDisruptionBudget.

Pure: plain dicts out. Patterns from the guides (docs/reference-sources.md#guides): the Job pattern and model serving of
guide 003, probes and the pod security context of guide 004 §6, requests equal to limits for GPUs (guide 002 §7.1),
tolerating the GPU taint (guide 002 §4.3), PodDisruptionBudgets for critical work (guide 002 §7.3).
"""

from __future__ import annotations

import math
from decimal import Decimal
from typing import Any

from gpucore.catalog import BUILTIN_CATALOG, Catalog, GpuModelSpec
from gpucore.manifests.contexts import (
    GPU_RESOURCE,
    MANAGED_BY_LABEL,
    PRODUCT_LABEL,
    REPLICAS_LABEL,
    REQUEST_LABEL,
    SHARED_PRODUCT_SUFFIX,
    SHARING_FOR_STRATEGY,
    AllocationSpec,
    ManifestError,
    PoolContext,
    WorkloadContext,
    catalog_model,
    request_labels,
    workload_name,
)
from gpucore.manifests.dra import DraTarget, container_claims, pod_claims, render_resource_claim_template
from gpucore.manifests.jobset import master_pod_hostname, render_jobset, topology_annotations
from gpucore.manifests.kai import KAI_SCHEDULER_NAME, kai_pod_labels
from gpucore.manifests.kueue import workload_queue_labels
from gpucore.manifests.namespace import max_per_container
from gpucore.manifests.sizing import ContainerSize, format_memory, gpu_share, size_container
from gpucore.sla import SlaTierSpec
from gpucore.vocabulary import IsolationFloor, Strategy

JOB_WORKLOADS = ("training", "batch_inference", "hpc_simulation")
# Several pods of these form one process group (torchrun/NCCL, MPI): rendezvous and all-or-nothing admission.
DISTRIBUTED_WORKLOADS = ("training", "hpc_simulation")
COMPLETION_INDEX_ANNOTATION = "batch.kubernetes.io/job-completion-index"
SAFE_TO_EVICT_ANNOTATION = "cluster-autoscaler.kubernetes.io/safe-to-evict"
CONTAINER_NAME = "main"
WORKLOAD_TYPE_LABEL = "gpu-portal/workload-type"
REQUEST_NAME_ANNOTATION = "gpu-portal/request-name"
STRATEGY_ANNOTATION = "gpu-portal/strategy"
GPU_MODEL_ANNOTATION = "gpu-portal/gpu-model"
GPU_SHARE_ANNOTATION = "gpu-portal/gpu-share"
NUMA_ANNOTATION = "gpu-portal/numa-alignment"
# A label platform admins put on pools whose kubelets run the Topology Manager with this policy.
TOPOLOGY_POLICY_LABEL = "gpu-portal/topology-manager-policy"
HOSTNAME_LABEL = "kubernetes.io/hostname"
SHM_PATH = "/dev/shm"  # noqa: S108 - the container's shared memory mount, not a temporary file

JOB_BACKOFF_LIMIT = 2  # guide 003, "GPU Job Pattern"
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


def active_deadline_seconds(duration_hours: float | Decimal | None) -> int | None:
    """A Job's ``activeDeadlineSeconds`` for a requested duration, rounded up to the second (``None``: no deadline)."""
    if duration_hours is None:
        return None
    return math.ceil(Decimal(str(duration_hours)) * 3600)


def _check_tier(tier: SlaTierSpec | None, allocation: AllocationSpec) -> None:
    # The tier is a floor on isolation (sla.py, guide 000 §4.3); refuse to provision below it whatever the spec says.
    if tier is None:
        return
    if tier.isolation_floor == IsolationFloor.DEDICATED and allocation.strategy is not Strategy.DEDICATED:
        raise ManifestError(
            f"Tier '{tier.slug}' requires dedicated GPUs; the spec's strategy is {allocation.strategy}."
        )
    if tier.isolation_floor == IsolationFloor.HARDWARE and allocation.strategy is Strategy.TIME_SLICING:
        raise ManifestError(f"Tier '{tier.slug}' requires MIG or dedicated GPUs; time-slicing has no isolation.")


def _check_pool(pool: PoolContext | None, allocation: AllocationSpec, model: GpuModelSpec, catalog: Catalog) -> None:
    if allocation.strategy is Strategy.MIG and not model.mig_capable:
        raise ManifestError(f"{model.name} is not MIG-capable.")
    if pool is None:
        return
    if catalog_model(catalog, pool.gpu_model).name != model.name:
        raise ManifestError(f"Pool '{pool.name}' has {pool.gpu_model} GPUs; the spec asks for {model.name}.")
    wanted = SHARING_FOR_STRATEGY[allocation.strategy]
    if pool.sharing_mode is not wanted:
        raise ManifestError(
            f"Pool '{pool.name}' shares GPUs by '{pool.sharing_mode}'; a {allocation.strategy} allocation needs "
            f"'{wanted}'."
        )
    if allocation.strategy is Strategy.MIG and pool.mig_layout_holding(allocation.mig_profile) is None:
        raise ManifestError(f"Pool '{pool.name}' has no '{allocation.mig_profile}' MIG devices.")
    if allocation.strategy is Strategy.TIME_SLICING:
        if pool.time_slice_replicas != allocation.time_slice_replicas:
            raise ManifestError(
                f"The spec was priced for {allocation.time_slice_replicas} replicas per GPU; pool '{pool.name}' "
                f"runs {pool.time_slice_replicas}."
            )
        if pool.rename_by_default != (allocation.resource_name != GPU_RESOURCE):
            raise ManifestError(
                f"Pool '{pool.name}' advertises shared GPUs under another name than '{allocation.resource_name}'."
            )


def node_selector(allocation: AllocationSpec, model: GpuModelSpec, pool: PoolContext | None) -> dict[str, str]:
    """The pod's nodeSelector: the spec's, pinned to the GPU product as GFD labels it, plus the pool's labels."""
    # On a time-sliced node GFD appends ``-SHARED`` to ``nvidia.com/gpu.product`` (unless shared GPUs are renamed) and
    # sets ``nvidia.com/gpu.replicas``; selecting on both keeps the pod on nodes sliced the way it was priced.
    selector = dict(allocation.node_selector)
    # The pool's label wins: it is the same catalog model (checked) but may be another board, e.g. PCIe for SXM4.
    product = pool.product_label if pool is not None else model.product_label
    asked = selector.get(PRODUCT_LABEL)
    if asked is not None and asked.removesuffix(SHARED_PRODUCT_SUFFIX) not in (product, model.product_label):
        raise ManifestError(f"spec.node_selector asks for '{asked}' but the GPU product is '{product}'.")
    if allocation.strategy is Strategy.TIME_SLICING:
        if allocation.resource_name == GPU_RESOURCE:
            product += SHARED_PRODUCT_SUFFIX
        selector[REPLICAS_LABEL] = str(allocation.time_slice_replicas)
    selector[PRODUCT_LABEL] = product
    for key, value in (pool.node_labels if pool is not None else {}).items():
        if selector.setdefault(key, value) != value:
            raise ManifestError(f"Node label '{key}': the spec selects '{selector[key]}', the pool has '{value}'.")
    return selector


def tolerations(pool: PoolContext | None) -> list[dict[str, Any]]:
    """The GPU node taint toleration (guide 003 "Tolerations for GPU Taints") plus one per taint of the pool."""
    result: list[dict[str, Any]] = [{"key": GPU_RESOURCE, "operator": "Exists", "effect": "NoSchedule"}]
    for taint in pool.taints if pool is not None else ():
        if taint.key == GPU_RESOURCE and taint.effect == "NoSchedule":
            continue  # already tolerated whatever its value
        if taint.value is None:
            toleration = {"key": taint.key, "operator": "Exists", "effect": taint.effect}
        else:
            toleration = {"key": taint.key, "operator": "Equal", "value": taint.value, "effect": taint.effect}
        if toleration not in result:
            result.append(toleration)
    return result


def _topology_affinity(request_id: int, replicas: int) -> dict[str, Any]:
    # A pod cannot choose the kubelet's Topology Manager policy; it can only prefer nodes whose admins run
    # single-numa-node (marked with our label) and be Guaranteed with whole cores so that policy applies to it.
    affinity: dict[str, Any] = {
        "nodeAffinity": {
            "preferredDuringSchedulingIgnoredDuringExecution": [
                {
                    "weight": 100,
                    "preference": {
                        "matchExpressions": [
                            {"key": TOPOLOGY_POLICY_LABEL, "operator": "In", "values": ["single-numa-node"]}
                        ]
                    },
                }
            ]
        }
    }
    if replicas > 1:
        # Pack the replicas of one simulation on as few nodes as fit, so their GPUs talk over NVLink/PCIe rather
        # than the network (guide 000 §4.1: HPC is "NUMA-sensitive", "Dedicated + Affinity").
        term = {"labelSelector": {"matchLabels": {REQUEST_LABEL: str(request_id)}}, "topologyKey": HOSTNAME_LABEL}
        affinity["podAffinity"] = {
            "preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 100, "podAffinityTerm": term}]
        }
    return affinity


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


def _pod_template(
    ctx: WorkloadContext, labels: dict[str, str], model: GpuModelSpec, size: ContainerSize
) -> dict[str, Any]:
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
        spec["affinity"] = _topology_affinity(ctx.request_id, allocation.replicas)
        annotations[NUMA_ANNOTATION] = "single-numa-node"
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


def render_workload_objects(ctx: WorkloadContext, *, catalog: Catalog = BUILTIN_CATALOG) -> list[dict[str, Any]]:
    """A request's objects in apply order: NetworkPolicy, PodDisruptionBudget, Service, then the Job or Deployment."""
    allocation = ctx.allocation
    model = catalog_model(catalog, allocation.gpu_model)
    _check_tier(ctx.tier, allocation)
    _check_pool(ctx.pool, allocation, model, catalog)
    if allocation.strategy is Strategy.TIME_SLICING and allocation.quantity > 1:
        raise ManifestError(
            "A time-sliced container gets one share: more shares give no more compute, and the portal's device "
            "plugin config (failRequestsGreaterThanOne) refuses them at admission."
        )
    bound = max_per_container(ctx.team, allocation.resource_name)
    if bound is not None and allocation.quantity > bound:
        raise ManifestError(
            f"{allocation.quantity} x {allocation.resource_name} per container exceeds the namespace's maximum "
            f"of {bound}."
        )

    name = workload_name(ctx.request_id)
    namespace = ctx.team.namespace
    labels = {
        **request_labels(ctx.team.slug, ctx.request_id),
        "app.kubernetes.io/instance": name,
        WORKLOAD_TYPE_LABEL: ctx.workload_type,
    }
    selector = {MANAGED_BY_LABEL: labels[MANAGED_BY_LABEL], REQUEST_LABEL: labels[REQUEST_LABEL]}
    # The pool's MIG layout scales the share as billing does; a pool edited since submission no longer holding the
    # profile falls back to the instance's own weight rather than failing the render.
    layout = ctx.pool.mig_layout_holding(allocation.mig_profile) if ctx.pool is not None else None
    share = gpu_share(allocation, catalog, layout=layout)
    critical = is_critical_tier(ctx.tier)
    size = size_container(
        ctx.workload_type, share, guaranteed=critical or ctx.topology_aware, model_memory_gib=ctx.model_memory_gib
    )
    annotations = {
        REQUEST_NAME_ANNOTATION: ctx.name,
        STRATEGY_ANNOTATION: str(allocation.strategy),
        GPU_MODEL_ANNOTATION: model.name,
        GPU_SHARE_ANNOTATION: format(share.quantize(Decimal("0.000001")).normalize(), "f"),
    }
    # KAI reads its queue from the pod and the workload that owns it (its pod grouper); the other objects need none.
    kai = kai_pod_labels(ctx.team, ctx.tier)
    meta = {"name": name, "namespace": namespace, "labels": {**labels, **kai}, "annotations": annotations}
    template = _pod_template(ctx, {**labels, **kai}, model, size)
    replicas = allocation.replicas

    claims = []
    if ctx.device_api == "dra":
        claims.append(
            render_resource_claim_template(
                request_id=ctx.request_id,
                team_slug=ctx.team.slug,
                namespace=namespace,
                strategy=allocation.strategy,
                model=model,
                quantity=allocation.quantity,
                mig_profile=allocation.mig_profile,
                time_slice_replicas=allocation.time_slice_replicas,
                target=ctx.dra_target or DraTarget(),
                parent_gpus=tuple(ctx.dynamic_mig_gpus),
            )
        )
    if ctx.workload_type in JOB_WORKLOADS:
        return [*claims, *_job_objects(ctx, meta=meta, labels=labels, selector=selector, template=template)]

    objects: list[dict[str, Any]] = list(claims)
    if ctx.workload_type == "realtime_inference" and ctx.caller_namespace_selector:
        objects.append(_callers_policy(ctx, meta, labels, selector))
    if critical and replicas > 1:
        # One replica at a time may be drained. A single replica gets no budget: 'minAvailable: 1' (or
        # 'maxUnavailable: 0') of one pod blocks every drain of its node until an operator deletes the budget.
        pdb_spec = {"maxUnavailable": 1, "selector": {"matchLabels": selector}, **_PDB_UNHEALTHY}
        objects.append(_pdb(meta, labels, pdb_spec))
    deployment_spec: dict[str, Any] = {"replicas": replicas, "selector": {"matchLabels": selector}}
    if ctx.workload_type == "realtime_inference":
        service_spec = {
            "type": "ClusterIP",
            "selector": selector,
            "ports": [{"name": "http", "port": ctx.port, "targetPort": "http", "protocol": "TCP"}],
        }
        svc_meta = {"name": name, "namespace": namespace, "labels": dict(labels)}
        objects.append({"apiVersion": "v1", "kind": "Service", "metadata": svc_meta, "spec": service_spec})
        # No surge: a surge pod needs a GPU outside the request's allocation that the team quota may not have.
        deployment_spec["strategy"] = {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 0, "maxUnavailable": 1}}
        # Longer than the startup probe's 10 minutes of model loading, so a slow start is not reported as stuck.
        deployment_spec["progressDeadlineSeconds"] = 2 * STARTUP_PERIOD_SECONDS * STARTUP_FAILURE_THRESHOLD
    else:
        # A development pod holds its GPU share; the old pod must let go before the new one can start.
        deployment_spec["strategy"] = {"type": "Recreate"}
    deployment_spec["revisionHistoryLimit"] = 3
    deployment_spec["template"] = template
    objects.append({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": meta, "spec": deployment_spec})
    return objects


_PDB_UNHEALTHY = {"unhealthyPodEvictionPolicy": "AlwaysAllow"}  # a crash-looping pod never blocks a drain


def _pdb(meta: dict[str, Any], labels: dict[str, str], spec: dict[str, Any]) -> dict[str, Any]:
    pdb_meta = {"name": meta["name"], "namespace": meta["namespace"], "labels": dict(labels)}
    return {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": pdb_meta, "spec": spec}


def _callers_policy(
    ctx: WorkloadContext, meta: dict[str, Any], labels: dict[str, str], selector: dict[str, str]
) -> dict[str, Any]:
    """Let the namespaces the platform admin labelled (ingress controller, callers) reach the serving port."""
    # NetworkPolicies add up: the namespace's default policy still admits its own pods; this one adds the callers,
    # to this request's pods and port only.
    rule = {
        "from": [{"namespaceSelector": {"matchLabels": dict(ctx.caller_namespace_selector)}}],
        "ports": [{"protocol": "TCP", "port": ctx.port}],
    }
    policy_meta = {"name": meta["name"], "namespace": meta["namespace"], "labels": dict(labels)}
    return {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "NetworkPolicy",
        "metadata": policy_meta,
        "spec": {"podSelector": {"matchLabels": dict(selector)}, "policyTypes": ["Ingress"], "ingress": [rule]},
    }


def _job_objects(
    ctx: WorkloadContext,
    *,
    meta: dict[str, Any],
    labels: dict[str, str],
    selector: dict[str, str],
    template: dict[str, Any],
) -> list[dict[str, Any]]:
    """A batch request: its PodDisruptionBudget and headless Service where they apply, then the Job (the JobSet of
    distributed training and HPC)."""
    replicas = ctx.allocation.replicas
    objects: list[dict[str, Any]] = []
    if replicas > 1 and ctx.tier is not None and not ctx.tier.preemptible:
        # Guide 002 §7.3 protects long training Jobs with a PodDisruptionBudget, but never 'minAvailable' equal to
        # the pods (that blocks every drain). A Job has no scale subresource, so only an integer minAvailable works
        # (not maxUnavailable): a drain may take one pod at a time; the Job recreates that index (a JobSet restarts
        # its gang), and neither counts the eviction as a failure.
        pdb_spec = {"minAvailable": replicas - 1, "selector": {"matchLabels": selector}, **_PDB_UNHEALTHY}
        objects.append(_pdb(meta, labels, pdb_spec))
    if is_distributed(ctx):
        # Headless: no virtual IP, one DNS record per pod (<job>-<index>.<service>) even before it is ready, so the
        # workers find the rendezvous master while they all start.
        service_meta = {"name": meta["name"], "namespace": meta["namespace"], "labels": dict(labels)}
        service_spec = {
            "clusterIP": "None",
            "selector": dict(selector),
            "publishNotReadyAddresses": True,
            "ports": [
                {"name": "rendezvous", "port": ctx.rendezvous_port, "targetPort": "rendezvous", "protocol": "TCP"}
            ],
        }
        objects.append({"apiVersion": "v1", "kind": "Service", "metadata": service_meta, "spec": service_spec})
    deadline = active_deadline_seconds(ctx.duration_hours)
    if is_distributed(ctx):
        jobset = render_jobset(
            meta=meta,
            replicas=replicas,
            template=template,
            active_deadline_seconds=deadline,
            queue_labels=workload_queue_labels(ctx.team, ctx.tier),
            topology=topology_annotations(ctx.pool, kueue=ctx.team.cluster_queue is not None),
        )
        objects.append(jobset)
        return objects
    job_spec: dict[str, Any] = {"backoffLimit": JOB_BACKOFF_LIMIT, "completions": replicas, "parallelism": replicas}
    if replicas > 1:
        job_spec["completionMode"] = "Indexed"  # each worker knows its shard from its completion index
    if deadline is not None:
        job_spec["activeDeadlineSeconds"] = deadline
    # A pod evicted by preemption (tier 3) or a node drain did not fail: do not count it against backoffLimit.
    job_spec["podFailurePolicy"] = {
        "rules": [{"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget", "status": "True"}]}]
    }
    # Never 'suspend': Kueue's webhook suspends a queued Job on creation and un-suspends it on admission; a rendered
    # 'suspend: true', re-applied with force every reconcile, would stop an admitted Job again.
    job_spec["template"] = template
    # The queue labels go on the Job only: on the pod template they would make Kueue's pod integration queue each
    # pod on its own, breaking all-or-nothing admission of the Job.
    job_meta = {**meta, "labels": {**meta["labels"], **workload_queue_labels(ctx.team, ctx.tier)}}
    objects.append({"apiVersion": "batch/v1", "kind": "Job", "metadata": job_meta, "spec": job_spec})
    return objects
