"""Spec + context -> Kubernetes objects (plain dicts), the pure core of provisioning (docs/operating.md).

Frozen contexts in (``contexts``), lists of objects out, in apply order. Nothing here imports Django, DRF, Celery or
the Kubernetes client (an import-linter contract enforces it). ``render_request_objects`` is what a cluster gateway
applies for one request; the GPU Operator ConfigMaps (``gpu_operator``) and the PriorityClasses are rendered per
cluster. Objects carrying ``gpu-portal/request`` belong to one request; the rest (Namespace, quota, PriorityClass)
are shared, so a release deletes only the former (``is_request_owned``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import yaml

from gpucore.catalog import BUILTIN_CATALOG, Catalog
from gpucore.manifests.cluster import ClusterContext, render_cluster_objects
from gpucore.manifests.contexts import AllocationSpec, PoolContext, Taint, TeamContext, WorkloadContext
from gpucore.manifests.gpu_operator import (
    check_mig_layout,
    mig_config_name,
    mig_node_config,
    mig_node_config_name,
    mig_parted_config,
    mig_placement,
    pool_node_labels,
    render_mig_parted_configmap,
    render_time_slicing_configmap,
    time_slicing_config,
    validate_device_plugin_config,
)
from gpucore.manifests.kueue import (
    LOCAL_QUEUE_NAME,
    PRIORITY_CLASS_LABEL,
    QUEUE_NAME_LABEL,
    ClusterQueueContext,
    FlavorQuota,
    queue_objects_for,
    render_cluster_queue,
    render_kueue_objects,
    render_local_queue,
    render_resource_flavor,
    render_workload_priority_class,
)
from gpucore.manifests.namespace import (
    render_limit_range,
    render_namespace,
    render_network_policy,
    render_priority_class,
    render_priority_classes,
    render_resource_quota,
    render_team_objects,
)
from gpucore.manifests.naming import (
    FIELD_MANAGER,
    MANAGED_BY,
    MANAGED_BY_LABEL,
    REQUEST_LABEL,
    TEAM_LABEL,
    WORKLOAD_TYPES,
    ManifestError,
    request_labels,
    team_labels,
    workload_name,
)
from gpucore.manifests.sizing import ContainerSize, gpu_share, size_container
from gpucore.manifests.workload import render_workload_objects
from gpucore.vocabulary import SharingMode

__all__ = [
    "FIELD_MANAGER",
    "LOCAL_QUEUE_NAME",
    "MANAGED_BY",
    "MANAGED_BY_LABEL",
    "PRIORITY_CLASS_LABEL",
    "QUEUE_NAME_LABEL",
    "REQUEST_LABEL",
    "TEAM_LABEL",
    "WORKLOAD_TYPES",
    "AllocationSpec",
    "ClusterContext",
    "ClusterQueueContext",
    "ContainerSize",
    "FlavorQuota",
    "ManifestError",
    "PoolContext",
    "SharingMode",
    "Taint",
    "TeamContext",
    "WorkloadContext",
    "check_mig_layout",
    "gpu_share",
    "is_request_owned",
    "mig_config_name",
    "mig_node_config",
    "mig_node_config_name",
    "mig_parted_config",
    "mig_placement",
    "object_key",
    "pool_node_labels",
    "queue_objects_for",
    "render_cluster_objects",
    "render_cluster_queue",
    "render_kueue_objects",
    "render_limit_range",
    "render_local_queue",
    "render_mig_parted_configmap",
    "render_namespace",
    "render_network_policy",
    "render_priority_class",
    "render_priority_classes",
    "render_request_objects",
    "render_resource_flavor",
    "render_resource_quota",
    "render_team_objects",
    "render_time_slicing_configmap",
    "render_workload_objects",
    "render_workload_priority_class",
    "request_labels",
    "size_container",
    "team_labels",
    "time_slicing_config",
    "to_yaml",
    "validate_device_plugin_config",
    "workload_name",
]


def render_request_objects(ctx: WorkloadContext, *, catalog: Catalog = BUILTIN_CATALOG) -> list[dict[str, Any]]:
    """Every object one request needs, in apply order: its tier's PriorityClass, the namespace objects (with the
    LocalQueue on a Kueue cluster), the workload."""
    # The order follows Helm's install order (PriorityClass, Namespace, NetworkPolicy, ResourceQuota, LimitRange,
    # PodDisruptionBudget, Service, Deployment/Job): the namespace, its quota and its defaults exist before a pod is
    # admitted, and the PriorityClass before a pod names it.
    objects: list[dict[str, Any]] = []
    if ctx.tier is not None:
        objects.append(render_priority_class(ctx.tier))
    objects.extend(render_team_objects(ctx.team))
    if ctx.team.cluster_queue is not None:
        objects.append(render_local_queue(ctx.team))
    objects.extend(render_workload_objects(ctx, catalog=catalog))
    keys = [object_key(obj) for obj in objects]
    if len(set(keys)) != len(keys):
        raise ManifestError(f"Two rendered objects share a name: {keys}.")
    # Renderers reuse small dicts (selectors, labels); hand out independent trees so a caller can edit one safely.
    return [_fresh(obj) for obj in objects]


def _fresh(value: Any) -> Any:
    # Unlike copy.deepcopy, which keeps shared references shared, this rebuilds every dict and list.
    if isinstance(value, Mapping):
        return {key: _fresh(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_fresh(item) for item in value]
    return value


def object_key(obj: Mapping[str, Any]) -> tuple[str, str, str, str]:
    """The identity of an object: ``(apiVersion, kind, namespace, name)``; namespace is ``""`` when cluster-scoped."""
    meta = obj.get("metadata") or {}
    return (obj["apiVersion"], obj["kind"], meta.get("namespace", ""), meta["name"])


def is_request_owned(obj: Mapping[str, Any]) -> bool:
    """Whether an object belongs to one request (and goes when it is released) rather than to a team or the cluster."""
    return REQUEST_LABEL in ((obj.get("metadata") or {}).get("labels") or {})


# libyaml's emitter where PyYAML was built with it: the same YAML, several times faster than the pure-Python one.
_SafeDumper = getattr(yaml, "CSafeDumper", yaml.SafeDumper)


class _Dumper(_SafeDumper):
    """A safe dumper that writes multi-line strings (ConfigMap payloads) as literal blocks and never uses anchors."""

    def ignore_aliases(self, data: Any) -> bool:
        """Never emit anchors and aliases: kubectl and reviewers read each object on its own."""
        return True


def _represent_str(dumper: yaml.SafeDumper, value: str) -> yaml.Node:
    style = "|" if "\n" in value else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_Dumper.add_representer(str, _represent_str)


def to_yaml(objects: Iterable[Mapping[str, Any]]) -> str:
    """Objects as one multi-document YAML stream, keys in rendering order (``kubectl apply -f`` or a gitops tree)."""
    return yaml.dump_all(
        [dict(obj) for obj in objects], Dumper=_Dumper, sort_keys=False, default_flow_style=False, explicit_start=True
    )
