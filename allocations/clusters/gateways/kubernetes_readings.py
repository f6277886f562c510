"""What the Kubernetes API server's answers mean: its errors as gateway errors, drift (live vs wanted), and pod and
node readings as the portal's statuses and inventories. Pure functions over the client's objects and plain dicts."""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from kubernetes.utils import parse_quantity

from allocations.clusters.gateways.base import (
    GatewayError,
    NodeInventory,
    PermanentGatewayError,
    PodStatus,
    QueuedWorkload,
    TransientGatewayError,
    WorkloadStatus,
)
from gpucore.catalog import mig_profile_of_resource

GPU_RESOURCE = "nvidia.com/gpu"
# Time-slicing with renameByDefault advertises shares under this name (gpucore.manifests.contexts).
SHARED_GPU_RESOURCE = "nvidia.com/gpu.shared"
MIG_RESOURCE_PREFIX = "nvidia.com/mig-"
# Keys holding quantities (sizeLimit) or maps of them (limits, hard): the API server stores them canonically, so
# "1024Mi" reads back as "1Gi" and must not count as drift.
QUANTITY_PARENTS = frozenset({"limits", "requests", "hard", "default", "defaultRequest", "max", "min"})
# Top-level fields the API server refuses to change on an existing object: a new rendering of them means deleting
# and creating the object again (pods already admitted keep the priority they were given).
IMMUTABLE_FIELDS = {"PriorityClass": ("value", "preemptionPolicy")}


def needs_replacement(live: Mapping[str, Any] | None, wanted: Mapping[str, Any]) -> bool:
    """Whether the live object differs from the rendering in a field the API server will not update in place."""
    if live is None:
        return False
    return any(live.get(name) != wanted.get(name) for name in IMMUTABLE_FIELDS.get(str(wanted.get("kind")), ()))


def gateway_error(status: int, body: bytes | str | None, what: object) -> GatewayError:
    """The gateway error for an API answer: transient for 0 (no answer), 429 and 5xx; permanent otherwise."""
    text = body.decode("utf-8", "replace") if isinstance(body, bytes) else (body or "")
    message = text.strip()
    try:
        parsed = json.loads(text)
    except ValueError:
        parsed = None
    if isinstance(parsed, dict) and parsed.get("message"):
        message = str(parsed["message"])  # the Status body's own words, e.g. 'jobs.batch "x" is forbidden: ...'
    message = f"{what}: {message or f'HTTP {status}'}"
    if status == 0 and "SSLError" in text:
        return PermanentGatewayError(message)  # a certificate problem does not go away by waiting
    if status == 0 or status == 429 or status >= 500:
        return TransientGatewayError(message, status=status or None)
    return PermanentGatewayError(message, status=status)


def covers(live: Any, wanted: Any, *, quantities: bool = False) -> bool:
    """Whether the live state holds every field the rendering sets, with the same value (server defaults aside)."""
    if isinstance(wanted, Mapping):
        if not isinstance(live, Mapping):
            return False
        for key, value in wanted.items():
            if key not in live:
                # The API server drops nulls and empty values; their absence is no drift.
                if value is None or value == {} or value == []:
                    continue
                return False
            inner = quantities or key in QUANTITY_PARENTS or key == "sizeLimit"
            if not covers(live[key], value, quantities=inner):
                return False
        return True
    if isinstance(wanted, list):
        # Defaults land inside list items (a container's terminationMessagePath), so items are compared as subsets.
        return isinstance(live, list) and len(live) == len(wanted) and all(map(covers, live, wanted))
    if live == wanted:
        return True
    if quantities:
        try:
            return parse_quantity(live) == parse_quantity(wanted)
        except (ValueError, TypeError):
            return False
    return False


def condition_of(obj: Any, kind: str) -> dict[str, str]:
    for condition in (obj.status.conditions if obj.status else None) or []:
        if condition.type == kind:
            return {
                "status": condition.status or "",
                "reason": condition.reason or "",
                "message": condition.message or "",
            }
    return {}


def timestamp_of(value: datetime | None) -> float:
    return value.timestamp() if value is not None else 0.0


def _container_problem(pod: Any) -> tuple[str, str]:
    """The first waiting or terminated container's reason and message (ImagePullBackOff, OOMKilled, ...)."""
    status = pod.status
    for container in [*(status.init_container_statuses or []), *(status.container_statuses or [])]:
        state = container.state
        if state is None:
            continue
        for detail in (state.waiting, state.terminated):
            if detail is not None and detail.reason and detail.reason not in ("ContainerCreating", "PodInitializing"):
                return detail.reason, detail.message or ""
    return "", ""


def pod_status(pod: Any, unschedulable: Mapping[str, str]) -> PodStatus:
    """One pod as the portal reports it; a Pending pod's message says why it waits."""
    status = pod.status
    phase = (status.phase if status else None) or "Unknown"
    ready = condition_of(pod, "Ready").get("status") == "True"
    reason = (status.reason if status else None) or ""
    message = (status.message if status else None) or ""
    scheduled = condition_of(pod, "PodScheduled")
    if phase == "Pending" and scheduled.get("status") != "True":
        reason = scheduled.get("reason") or ("Unschedulable" if pod.metadata.name in unschedulable else reason)
        message = scheduled.get("message") or unschedulable.get(pod.metadata.name, "") or message
    elif status is not None and not message and not ready and phase != "Succeeded":
        problem_reason, problem_message = _container_problem(pod)
        reason, message = (problem_reason, problem_message) if problem_reason else (reason, message)
    return PodStatus(name=pod.metadata.name, phase=phase, ready=ready, reason=reason, message=message)


def summarize(pods: tuple[PodStatus, ...]) -> WorkloadStatus:
    """One phase for the workload: Pending if any pod waits, Running if the rest run, else how they ended."""
    pending = [pod for pod in pods if pod.phase == "Pending"]
    if pending:
        reason = next((pod.message or pod.reason for pod in pending if pod.message or pod.reason), "")
        return WorkloadStatus(phase="Pending", pods=pods, pending_reason=reason)
    live = [pod for pod in pods if pod.phase not in ("Succeeded", "Failed")]
    if live:
        phase = "Running" if all(pod.phase == "Running" for pod in live) else "Pending"
        troubled = [f"{pod.name}: {pod.reason}" for pod in live if not pod.ready and pod.reason]
        return WorkloadStatus(phase=phase, pods=pods, message="; ".join(troubled))
    failed = [pod for pod in pods if pod.phase == "Failed"]
    if failed:
        message = "; ".join(f"{pod.name}: {pod.message or pod.reason or 'failed'}" for pod in failed)
        return WorkloadStatus(phase="Failed", pods=pods, message=message)
    return WorkloadStatus(phase="Succeeded", pods=pods)


def _parse_time(value: Any) -> datetime | None:
    if not isinstance(value, str) or not value:
        return None
    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None


def job_finished(job: Mapping[str, Any], pods: tuple[PodStatus, ...] = ()) -> WorkloadStatus | None:
    """The ended workload of a Job (or JobSet) whose ``Complete`` (``Completed``) or ``Failed`` condition is true, else
    ``None`` (it may still run or retry). The end is the Job's ``completionTime`` or the condition's transition time."""
    status = job.get("status") or {}
    conditions = {c.get("type"): c for c in status.get("conditions") or []}
    if "Completed" in conditions:  # a JobSet's word for a Job's Complete
        conditions.setdefault("Complete", conditions["Completed"])
    for kind, phase in (("Complete", "Succeeded"), ("Failed", "Failed")):
        condition = conditions.get(kind) or {}
        if condition.get("status") != "True":
            continue
        ended = (_parse_time(status.get("completionTime")) if kind == "Complete" else None) or _parse_time(
            condition.get("lastTransitionTime")
        )
        message = condition.get("message") or condition.get("reason") or ""
        return WorkloadStatus(phase=phase, pods=pods, message=message, finished_at=ended or datetime.now(tz=UTC))
    return None


def node_inventory(node: Any) -> NodeInventory:
    """A node's GFD labels, taints, Ready condition and allocatable GPU resources (integers)."""
    allocatable: dict[str, int] = {}
    for resource, quantity in ((node.status.allocatable if node.status else None) or {}).items():
        if resource in (GPU_RESOURCE, SHARED_GPU_RESOURCE) or resource.startswith(MIG_RESOURCE_PREFIX):
            allocatable[resource] = int(parse_quantity(quantity))
    taints = tuple(
        {"key": taint.key, "value": taint.value or "", "effect": taint.effect}
        for taint in ((node.spec.taints if node.spec else None) or [])
    )
    return NodeInventory(
        name=node.metadata.name,
        labels=dict(node.metadata.labels or {}),
        allocatable=allocatable,
        taints=taints,
        ready=condition_of(node, "Ready").get("status") == "True",
    )


def mig_instances(pod_spec: Mapping[str, Any]) -> dict[str, int]:
    """MIG instances a pod's containers hold, by profile (limits; a GPU resource's request equals its limit)."""
    held: dict[str, int] = {}
    for container in pod_spec.get("containers") or []:
        for key, amount in ((container.get("resources") or {}).get("limits") or {}).items():
            profile = mig_profile_of_resource(key)
            if profile:
                held[profile] = held.get(profile, 0) + int(parse_quantity(amount))
    return held


def holds_gpus(pod_spec: Mapping[str, Any]) -> bool:
    """Whether any container asks for a GPU, a time-sliced share or a MIG instance."""
    for container in [*(pod_spec.get("containers") or []), *(pod_spec.get("initContainers") or [])]:
        resources = container.get("resources") or {}
        for amounts in (resources.get("limits") or {}, resources.get("requests") or {}):
            if any(key.startswith(("nvidia.com/gpu", MIG_RESOURCE_PREFIX)) for key in amounts):
                return True
    return False


def queued_workload_of(workloads: list[dict[str, Any]], owner: str) -> QueuedWorkload | None:
    """The Workload among ``workloads`` owned by ``owner`` (``gpr-<id>``) or by one of its pods (``gpr-<id>-*``),
    the newest if several; its conditions as plain dicts of text."""
    owned = []
    for item in workloads:
        refs = (item.get("metadata") or {}).get("ownerReferences") or []
        if any(ref.get("name") == owner or str(ref.get("name", "")).startswith(f"{owner}-") for ref in refs):
            owned.append(item)
    if not owned:
        return None
    newest = max(owned, key=lambda item: str((item.get("metadata") or {}).get("creationTimestamp") or ""))
    keys = ("type", "status", "reason", "message", "lastTransitionTime")
    conditions = tuple(
        {key: str(condition.get(key) or "") for key in keys}
        for condition in (newest.get("status") or {}).get("conditions") or []
        if isinstance(condition, dict)
    )
    return QueuedWorkload(name=str(newest["metadata"].get("name", "")), conditions=conditions)
