"""A cluster's own objects, the ones no single request owns: what ``GET /api/v1/clusters/{name}/manifests/`` serves.

Pure: plain dicts out, in apply order (docs/kubernetes-and-kueue.md): the SLA tiers' PriorityClasses, the GPU Operator's
device plugin and mig-parted ConfigMaps, with ``scheduler: kueue`` the Kueue objects (``kueue.py``), with
``scheduler: kai`` the KAI Scheduler's queues (``kai.py``), and where the
Prometheus Operator runs, the guides' GPU alerts and the dcgm-exporter scrape (``monitoring.py``).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from gpucore.catalog import BUILTIN_CATALOG, Catalog
from gpucore.manifests.contexts import PoolContext
from gpucore.manifests.gpu_operator import (
    GPU_OPERATOR_NAMESPACE,
    render_mig_parted_configmap,
    render_time_slicing_configmap,
)
from gpucore.manifests.kai import KaiQueueContext, render_kai_objects
from gpucore.manifests.kueue import ClusterQueueContext, render_kueue_objects
from gpucore.manifests.monitoring import render_dcgm_service_monitor, render_gpu_alert_rule
from gpucore.manifests.namespace import render_priority_classes
from gpucore.manifests.naming import ManifestError, check_labels, is_dns_label, is_dns_subdomain
from gpucore.sla import SlaTierSpec
from gpucore.utilization_promql import DEFAULT_MAX_AGE_SECONDS
from gpucore.vocabulary import SharingMode

SCHEDULERS = ("default", "kueue", "kai")


@dataclass(frozen=True, slots=True, kw_only=True)
class ClusterContext:
    """A cluster as its own objects need it: name, scheduler, node pools, SLA tiers and the teams' queues."""

    name: str
    scheduler: str = "default"
    pools: Sequence[PoolContext] = ()
    tiers: Sequence[SlaTierSpec] = ()
    queues: Sequence[ClusterQueueContext] = field(default_factory=tuple)
    # The teams' KAI Scheduler queues, rendered when ``scheduler`` is ``kai``.
    kai_queues: Sequence[KaiQueueContext] = field(default_factory=tuple)
    # The Kueue cohort the cluster's ClusterQueues share (their ``cohortName``); None: the cluster's name.
    cohort: str | None = None
    # Where the Prometheus Operator's PrometheusRule and the dcgm-exporter ServiceMonitor go; None: not rendered
    # (a cluster without the Prometheus Operator's CRDs would refuse them).
    monitoring_namespace: str | None = None
    # Extra labels on the PrometheusRule and ServiceMonitor, for the Prometheus Operator's selectors (a default
    # kube-prometheus-stack selects ``release: <its Helm release>``).
    monitoring_labels: Mapping[str, str] = field(default_factory=dict)
    # The age under which a sample counts as measured at a minute, in the pull's recording rules.
    scrape_max_age: int = DEFAULT_MAX_AGE_SECONDS
    # Where the GPU Operator runs and reads its device plugin and mig-parted ConfigMaps (OpenShift: another one).
    gpu_operator_namespace: str = GPU_OPERATOR_NAMESPACE
    # Named per-node MIG configs that MIG plans put on nodes (``mig_node_config``), kept beside the pools' own.
    mig_node_configs: Mapping[str, list[dict[str, Any]]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not is_dns_label(self.name):
            raise ManifestError(f"Cluster name '{self.name}' is not a DNS label.")
        if self.scheduler not in SCHEDULERS:
            raise ManifestError(f"Unknown scheduler '{self.scheduler}': expected one of {', '.join(SCHEDULERS)}.")
        if self.cohort is not None and not is_dns_subdomain(self.cohort):
            raise ManifestError(f"Cohort name '{self.cohort}' is not a DNS subdomain.")
        if not is_dns_label(self.gpu_operator_namespace):
            raise ManifestError(f"GPU Operator namespace '{self.gpu_operator_namespace}' is not a DNS label.")
        check_labels(self.monitoring_labels, "Monitoring labels")
        object.__setattr__(self, "monitoring_labels", dict(self.monitoring_labels))
        for name in ("pools", "tiers", "queues", "kai_queues"):
            object.__setattr__(self, name, tuple(getattr(self, name)))

    @property
    def kueue(self) -> bool:
        """Whether Kueue admits the cluster's Jobs."""
        return self.scheduler == "kueue"

    @property
    def cohort_name(self) -> str:
        """The cohort of the cluster's ClusterQueues."""
        return self.cohort or self.name


def render_cluster_objects(ctx: ClusterContext, *, catalog: Catalog = BUILTIN_CATALOG) -> list[dict[str, Any]]:
    """The cluster's own objects in apply order: PriorityClasses, GPU Operator ConfigMaps, then the Kueue objects."""
    objects = render_priority_classes(ctx.tiers)
    sliced = [pool for pool in ctx.pools if pool.sharing_mode is SharingMode.TIME_SLICING]
    mig = [pool for pool in ctx.pools if pool.sharing_mode is SharingMode.MIG]
    namespace = ctx.gpu_operator_namespace
    objects.append(render_time_slicing_configmap(sliced, namespace=namespace))
    objects.append(
        render_mig_parted_configmap(mig, catalog=catalog, node_configs=ctx.mig_node_configs, namespace=namespace)
    )
    if ctx.kueue:
        objects.extend(
            render_kueue_objects(pools=ctx.pools, queues=ctx.queues, tiers=ctx.tiers, cohort=ctx.cohort_name)
        )
    if ctx.scheduler == "kai":
        objects.extend(render_kai_objects(ctx.kai_queues))
    if ctx.monitoring_namespace is not None:
        labels = ctx.monitoring_labels
        objects.append(
            render_gpu_alert_rule(
                namespace=ctx.monitoring_namespace, cluster=ctx.name, labels=labels, scrape_max_age=ctx.scrape_max_age
            )
        )
        objects.append(render_dcgm_service_monitor(namespace=ctx.monitoring_namespace, labels=labels))
    keys = [(o["apiVersion"], o["kind"], o["metadata"].get("namespace", ""), o["metadata"]["name"]) for o in objects]
    if len(set(keys)) != len(keys):
        raise ManifestError(f"Two cluster objects share a name: {sorted(k for k in keys if keys.count(k) > 1)}.")
    # Renderers share small dicts (labels); hand out independent trees (they are plain JSON).
    return json.loads(json.dumps(objects))
