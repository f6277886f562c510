"""Scale a request's Deployment to zero on its cluster (the idle reclaim's suspension), keeping every other object.

Only the replica count changes: the Service, the PodDisruptionBudget, the NetworkPolicy, the pod template and any
volume it names stay as they are, so a resume (provisioning applies the rendered objects again) brings the same
workload back. A Job is never scaled: only development workloads, which run as Deployments, are suspended.
"""

from __future__ import annotations

import copy
from typing import Any

from allocations.clusters.gateways.base import ApplyResult, ClusterGateway
from allocations.clusters.workloads import cluster_gateway
from allocations.models import GpuRequest
from gpucore.manifests import is_request_owned


class NothingToSuspend(Exception):
    """The request has no Deployment of its own to scale to zero (never rendered, or it runs as a Job)."""


def scaled_to_zero(objects: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The request's own Deployments from ``objects``, each with ``spec.replicas`` 0 and nothing else changed."""
    scaled = []
    for obj in objects:
        if obj.get("kind") == "Deployment" and is_request_owned(obj):
            zero = copy.deepcopy(obj)
            zero.setdefault("spec", {})["replicas"] = 0
            scaled.append(zero)
    return scaled


def workload_scale_to_zero(*, request: GpuRequest, gateway: ClusterGateway | None = None) -> ApplyResult:
    """Apply the request's Deployment with zero replicas through its cluster's gateway; idempotent.

    Raises ``NothingToSuspend`` when it has none, and the gateway's errors as they are.
    """
    deployments = scaled_to_zero(list(request.manifests or []))
    if not deployments or request.cluster is None:
        raise NothingToSuspend(f"Request #{request.pk} has no Deployment of its own on a cluster to scale to zero.")
    gateway = gateway or cluster_gateway(request.cluster)
    return gateway.apply(deployments)
