"""The one small interface every cluster gateway implements, and the results and errors it speaks in.

A gateway turns rendered Kubernetes objects (plain dicts from ``gpucore.manifests``) into reality on one cluster:
server-side apply through the Kubernetes API, or files in a GitOps tree that Argo CD or Flux applies. Services and
tasks only see this interface, so the provisioning logic is the same for both.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Protocol

FIELD_MANAGER = "gpu-portal"
KubeObject = dict[str, Any]


class GatewayError(Exception):
    """A cluster operation failed; ``transient`` says whether retrying later may succeed."""

    transient: bool = False

    def __init__(self, message: str, *, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


class TransientGatewayError(GatewayError):
    """The cluster could not be reached or answered 5xx/429: retry with backoff."""

    transient = True


class PermanentGatewayError(GatewayError):
    """The cluster refused the objects (4xx other than 429): retrying will not help; show the message."""


@dataclass(frozen=True)
class ObjectRef:
    """Which object: enough to find it again."""

    api_version: str
    kind: str
    name: str
    namespace: str | None = None

    @classmethod
    def of(cls, obj: KubeObject) -> ObjectRef:
        meta = obj.get("metadata", {})
        return cls(obj["apiVersion"], obj["kind"], meta["name"], meta.get("namespace"))

    def __str__(self) -> str:
        where = f"{self.namespace}/" if self.namespace else ""
        return f"{self.kind} {where}{self.name}"


@dataclass(frozen=True)
class ApplyResult:
    """What an apply did: the objects applied, and those whose live state had drifted from the rendering."""

    applied: tuple[ObjectRef, ...] = ()
    drifted: tuple[ObjectRef, ...] = ()
    location: str = ""


@dataclass(frozen=True)
class PodStatus:
    """One pod of a workload, as the scheduler and kubelet report it."""

    name: str
    phase: str
    ready: bool = False
    reason: str = ""
    message: str = ""


@dataclass(frozen=True)
class WorkloadStatus:
    """The observed state of a request's workload.

    ``phase``: ``Running`` (every wanted pod runs), ``Pending`` (some pod waits; ``pending_reason`` says why, e.g.
    ``0/4 nodes are available: 4 Insufficient nvidia.com/gpu``), ``Succeeded``, ``Failed``, ``NotFound`` (nothing is
    there), or ``Unobservable`` (a GitOps tree cannot see the cluster).

    ``finished_at`` is set only when a Job's ``Complete`` or ``Failed`` condition is true: the workload has ended
    for good (no retry follows), at that time. Pods that ended while their Job may still retry leave it ``None``.
    """

    phase: str
    pods: tuple[PodStatus, ...] = ()
    pending_reason: str = ""
    message: str = ""
    finished_at: datetime | None = None


@dataclass(frozen=True)
class WorkloadEvent:
    """One Kubernetes event about a request's objects (its Job or Deployment, their ReplicaSets and pods)."""

    object_kind: str
    object_name: str
    type: str  # Normal or Warning
    reason: str
    message: str
    count: int = 1
    last_seen: datetime | None = None


@dataclass(frozen=True)
class QueuedWorkload:
    """A request's Kueue Workload: its name and conditions (QuotaReserved, Admitted, Evicted, Preempted, ...), each a
    dict of ``type``, ``status``, ``reason``, ``message`` and ``lastTransitionTime`` as the cluster wrote them."""

    name: str
    conditions: tuple[dict[str, str], ...] = ()


@dataclass(frozen=True)
class NodeInventory:
    """One GPU node: its labels (GPU Feature Discovery), taints, and allocatable GPU resources."""

    name: str
    labels: dict[str, str] = field(default_factory=dict)
    allocatable: dict[str, int] = field(default_factory=dict)
    taints: tuple[dict[str, str], ...] = ()
    ready: bool = True


class ClusterGateway(Protocol):
    """Apply, observe and delete a request's objects on one cluster."""

    def apply(self, objects: Sequence[KubeObject]) -> ApplyResult:
        """Create or update the objects idempotently (server-side apply, field manager ``gpu-portal``)."""
        ...

    def delete(self, objects: Sequence[KubeObject]) -> tuple[ObjectRef, ...]:
        """Delete the objects; ones already gone are not an error. Returns what was deleted."""
        ...

    def workload_status(self, *, namespace: str, request_id: int) -> WorkloadStatus:
        """Pods of the request's workload (label ``gpu-portal/request=<id>``) and why any is Pending."""
        ...

    def list_gpu_nodes(self) -> tuple[NodeInventory, ...]:
        """Nodes that advertise GPU resources (``nvidia.com/gpu`` or ``nvidia.com/mig-*``)."""
        ...

    def workload_events(self, *, namespace: str, request_id: int, limit: int = 10) -> tuple[WorkloadEvent, ...]:
        """The newest events about the request's objects (``gpr-<id>`` and ``gpr-<id>-*``), newest first."""
        ...

    def queued_workload(self, *, namespace: str, request_id: int) -> QueuedWorkload | None:
        """The Kueue Workload of the request's objects, or None (no Kueue, none yet, or the cluster cannot be seen)."""
        ...


@dataclass(frozen=True)
class GpuPod:
    """A pod on a node that holds GPU resources (``nvidia.com/gpu*`` or ``nvidia.com/mig-*``) and has not ended."""

    namespace: str
    name: str
    phase: str
    request_id: str = ""
    # MIG instances the pod holds, by profile (``nvidia.com/mig-1g.5gb: 2`` -> ``{"1g.5gb": 2}``).
    mig_instances: dict[str, int] = field(default_factory=dict)


class NodeMaintenanceGateway(Protocol):
    """What rolling a MIG layout onto nodes needs besides apply: node reads and patches, GPU pods, eviction."""

    def read_node(self, name: str) -> dict[str, Any] | None:
        """The Node object, or None when there is no such node."""
        ...

    def patch_node(self, name: str, *, labels: dict[str, str] | None = None, unschedulable: bool | None = None) -> None:
        """Merge-patch a node's labels and/or ``spec.unschedulable`` (cordon / uncordon)."""
        ...

    def gpu_pods_on_node(self, name: str) -> tuple[GpuPod, ...]:
        """Pods scheduled on the node that hold GPU resources and are neither finished nor being deleted."""
        ...

    def evict_pod(self, *, namespace: str, name: str) -> None:
        """Evict a pod through the Eviction API (PodDisruptionBudgets apply); one already gone is not an error."""
        ...
