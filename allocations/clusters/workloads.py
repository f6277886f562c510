"""What runs on a request's cluster: the cluster's gateway, the workload's pods and events read live (or left for
the page's script to read), and how to reach it."""

from __future__ import annotations

from dataclasses import dataclass

from django.conf import settings

from allocations.clusters.gateways import gateway_for
from allocations.clusters.gateways.base import ClusterGateway, GatewayError, PodStatus, WorkloadEvent
from allocations.models import Cluster, GpuRequest, RequestStatus
from gpucore.manifests.access import WorkloadAccess, workload_access


def cluster_gateway(cluster: Cluster, *, timeout_seconds: float = 30.0) -> ClusterGateway:
    """The gateway for a cluster's backend, configured from its secret references (never from stored secrets)."""
    return gateway_for(
        backend=cluster.backend,
        api_endpoint=cluster.api_endpoint,
        kubeconfig_ref=cluster.kubeconfig_secret_ref,
        gitops_root=settings.PORTAL_GITOPS_ROOT,
        gitops_path=cluster.gitops_path or cluster.name,
        gitops_commit=cluster.gitops_commit,
        timeout_seconds=timeout_seconds,
    )


# Statuses whose objects are (or are about to be) on the cluster: the request page reads their pods and events.
ON_CLUSTER_STATUSES = (RequestStatus.PROVISIONING, RequestStatus.ACTIVE)


@dataclass(frozen=True)
class WorkloadLive:
    """A request's pods and recent events as its cluster reports them now, or why they cannot be read."""

    observable: bool
    pods: tuple[PodStatus, ...] = ()
    events: tuple[WorkloadEvent, ...] = ()
    error: str = ""
    # Observable but not read yet: the request page renders without calling the cluster, then its script reads the
    # pods and events from the workload endpoint.
    unread: bool = False


def _workload_observable(request: GpuRequest) -> bool:
    cluster = request.cluster
    return cluster is not None and request.status in ON_CLUSTER_STATUSES and cluster.backend == "kubernetes"


def gpu_request_workload_unread(*, request: GpuRequest) -> WorkloadLive:
    """What the request page shows of the workload before any cluster call: not observable (a GitOps tree, no
    cluster yet), or observable and still to be read (``unread``), which the page's script then does."""
    observable = _workload_observable(request)
    return WorkloadLive(observable=observable, unread=observable)


def gpu_request_workload_live(*, request: GpuRequest, gateway: ClusterGateway | None = None) -> WorkloadLive:
    """Read the request's pods and newest events from its cluster (short timeout); an unreachable or refusing cluster
    gives ``error`` instead of an exception, so the page still renders. GitOps clusters are not observable."""
    cluster = request.cluster
    if not _workload_observable(request):
        return WorkloadLive(observable=False)
    try:
        gateway = gateway or cluster_gateway(cluster, timeout_seconds=settings.PORTAL_CLUSTER_READ_TIMEOUT_SECONDS)
        status = gateway.workload_status(namespace=request.team.namespace, request_id=request.pk)
        events = gateway.workload_events(namespace=request.team.namespace, request_id=request.pk)
    except GatewayError as exc:
        return WorkloadLive(observable=True, error=f"Cluster {cluster.name} could not be read just now: {exc}")
    return WorkloadLive(observable=True, pods=status.pods, events=events)


def gpu_request_access(*, request: GpuRequest) -> WorkloadAccess:
    """Its Services' DNS names and ports and the kubectl commands, from the objects last rendered for it."""
    return workload_access(request.manifests or [], request_id=request.pk, workload_type=request.workload_type)
