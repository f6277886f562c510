"""Celery tasks of the request lifecycle: thin, named, idempotent; the work is in ``allocations.provisioning``.

Every task takes ids and re-reads state. ``acks_late`` with ``reject_on_worker_lost`` means a worker killed mid-task
leaves the message to be delivered again, and the provisioning services are safe to run twice. Only transient
cluster errors are retried (exponential backoff with jitter); the failure hook keeps the readable error on the row.

Services queue these tasks and import them at module level; a task imports the services it runs inside its body
(HackSoft's Django styleguide, "Celery"), so loading the task module never loads the services.
"""

from __future__ import annotations

import logging
from typing import Any

from celery import Task, shared_task

from allocations.gateways.base import GatewayError, TransientGatewayError
from allocations.models import Cluster, ClusterBackend
from gpucore.manifests import ManifestError

logger = logging.getLogger(__name__)

RETRY_POLICY: dict[str, Any] = {
    "autoretry_for": (TransientGatewayError,),
    "retry_backoff": 5,
    "retry_backoff_max": 600,
    "retry_jitter": True,
    "max_retries": 8,
}


class RequestTask(Task):
    """A task about one request (first argument: its id) that records its final error on the request."""

    acks_late = True
    reject_on_worker_lost = True

    def on_failure(self, exc: BaseException, task_id: str, args: tuple, kwargs: dict, einfo: Any) -> None:
        from allocations.provisioning import gpu_request_record_error

        request_id = args[0] if args else kwargs.get("request_id")
        if request_id is None:
            return
        retry_note = " The reconcile sweeper will try again." if isinstance(exc, TransientGatewayError) else ""
        gpu_request_record_error(
            request_id=request_id, message=f"{type(exc).__name__}: {exc}.{retry_note}", task_id=task_id
        )


@shared_task(name="allocations.provision_request", base=RequestTask, bind=True, **RETRY_POLICY)
def provision_request(self: Task, request_id: int) -> str:
    """Render and apply an approved request on its cluster, then observe it (re-applies drift when active)."""
    from allocations.provisioning import gpu_request_provision

    return gpu_request_provision(request_id=request_id, task_id=self.request.id or "").action


@shared_task(name="allocations.release_request", base=RequestTask, bind=True, **RETRY_POLICY)
def release_request(self: Task, request_id: int) -> str:
    """Delete a released or expired request's workload from its cluster."""
    from allocations.provisioning import gpu_request_teardown

    return gpu_request_teardown(request_id=request_id).action


@shared_task(name="allocations.reconcile_requests", acks_late=True)
def reconcile_requests() -> dict[str, int]:
    """Beat, every minute: re-queue stuck requests, re-observe (and re-apply) every active one, and tear down again
    the workloads of ended requests whose teardown never finished."""
    from allocations.provisioning import active_request_ids, stuck_request_ids, unremoved_request_ids

    stuck, active, unremoved = stuck_request_ids(), active_request_ids(), unremoved_request_ids()
    for request_id in [*stuck, *active]:
        provision_request.delay(request_id)
    for request_id in unremoved:
        release_request.delay(request_id)
    return {"requeued": len(stuck), "observed": len(active), "torn_down": len(unremoved)}


@shared_task(name="allocations.expire_requests", acks_late=True)
def expire_requests() -> dict[str, int]:
    """Beat: expire requests past their expiry (and delete their workloads); warn owners a day before."""
    from allocations.provisioning import gpu_requests_expire

    expired, warned = gpu_requests_expire()
    for request_id in expired:
        release_request.delay(request_id)
    return {"expired": len(expired), "warned": len(warned)}


@shared_task(name="allocations.sync_inventory", acks_late=True)
def sync_inventory(cluster_id: int | None = None) -> dict[str, str]:
    """Beat: read each (or one) Kubernetes cluster's GPU nodes into its node pools; a failure skips only that one."""
    from allocations.inventory import cluster_sync_inventory
    from allocations.provisioning import cluster_gateway

    results = {}
    clusters = Cluster.objects.filter(is_active=True, backend=ClusterBackend.KUBERNETES)
    if cluster_id is not None:
        clusters = clusters.filter(pk=cluster_id)
    for cluster in clusters:
        try:
            nodes = cluster_gateway(cluster).list_gpu_nodes()
            summary = cluster_sync_inventory(cluster=cluster, nodes=nodes)
            results[cluster.name] = f"{len(nodes)} nodes, {len(summary['unmatched'])} unmatched"
        except GatewayError as exc:
            logger.warning("inventory sync of %s failed: %s", cluster.name, exc)
            results[cluster.name] = f"error: {exc}"
    return results


@shared_task(name="allocations.apply_cluster_objects", acks_late=True)
def apply_cluster_objects(cluster_id: int | None = None) -> dict[str, str]:
    """Beat (and on demand): apply each (or one) cluster's own objects; a failure skips only that cluster."""
    from allocations.provisioning import cluster_objects_apply

    results = {}
    clusters = Cluster.objects.filter(is_active=True)
    if cluster_id is not None:
        clusters = clusters.filter(pk=cluster_id)
    for cluster in clusters:
        try:
            result = cluster_objects_apply(cluster=cluster)
            results[cluster.name] = f"{len(result.applied)} objects applied, {len(result.drifted)} drifted"
        except (GatewayError, ManifestError) as exc:
            # The next run (or an admin's "apply cluster objects") tries again; the error is in the log and result.
            logger.warning("applying the cluster objects of %s failed: %s", cluster.name, exc)
            results[cluster.name] = f"error: {exc}"
    return results


# MIG plan rollouts live in their own module; importing it here registers them with autodiscovery.
from allocations.mig_plans import tasks as mig_plan_tasks  # noqa: E402, F401
