"""A request's workload objects: a Job, JobSet or Deployment holding the GPUs, and its Service, PodDisruptionBudget
and callers' NetworkPolicy. The pod template is ``pod``'s, where it may run ``scheduling``'s.

Pure: plain dicts out. Patterns from the guides (docs/reference-sources.md#guides): the Job pattern and model serving of
guide 003, PodDisruptionBudgets for critical work (guide 002 §7.3).
"""

from __future__ import annotations

import math
from decimal import Decimal
from typing import Any

from gpucore.catalog import BUILTIN_CATALOG, Catalog
from gpucore.manifests.contexts import WorkloadContext
from gpucore.manifests.dra import DraTarget, render_resource_claim_template
from gpucore.manifests.jobset import render_jobset, topology_annotations
from gpucore.manifests.kai import kai_pod_labels
from gpucore.manifests.kueue import workload_queue_labels
from gpucore.manifests.namespace import max_per_container
from gpucore.manifests.naming import (
    MANAGED_BY_LABEL,
    REQUEST_LABEL,
    ManifestError,
    catalog_model,
    request_labels,
    workload_name,
)
from gpucore.manifests.pod import (
    JOB_WORKLOADS,
    STARTUP_FAILURE_THRESHOLD,
    STARTUP_PERIOD_SECONDS,
    is_critical_tier,
    is_distributed,
    pod_template,
)
from gpucore.manifests.scheduling import check_pool, check_tier
from gpucore.manifests.sizing import gpu_share, size_container
from gpucore.vocabulary import Strategy

WORKLOAD_TYPE_LABEL = "gpu-portal/workload-type"
REQUEST_NAME_ANNOTATION = "gpu-portal/request-name"
STRATEGY_ANNOTATION = "gpu-portal/strategy"
GPU_MODEL_ANNOTATION = "gpu-portal/gpu-model"
GPU_SHARE_ANNOTATION = "gpu-portal/gpu-share"
JOB_BACKOFF_LIMIT = 2  # guide 003, "GPU Job Pattern"


def active_deadline_seconds(duration_hours: float | Decimal | None) -> int | None:
    """A Job's ``activeDeadlineSeconds`` for a requested duration, rounded up to the second (``None``: no deadline)."""
    if duration_hours is None:
        return None
    return math.ceil(Decimal(str(duration_hours)) * 3600)


def render_workload_objects(ctx: WorkloadContext, *, catalog: Catalog = BUILTIN_CATALOG) -> list[dict[str, Any]]:
    """A request's objects in apply order: NetworkPolicy, PodDisruptionBudget, Service, then the Job or Deployment."""
    allocation = ctx.allocation
    model = catalog_model(catalog, allocation.gpu_model)
    check_tier(ctx.tier, allocation)
    check_pool(ctx.pool, allocation, model, catalog)
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
    template = pod_template(ctx, {**labels, **kai}, model, size)
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
