"""Celery tasks of the request lifecycle: thin, named, idempotent; the work is in ``allocations.clusters.provisioning``.

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
from django.core.cache import cache

from allocations.choices import DeviceApi
from allocations.clusters.gateways.base import GatewayError, TransientGatewayError
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
# How long a request's chain of one task (a run and its retries: 8 retries backing off from 5 s to 600 s, about 20
# minutes) is taken as pending. Longer than a whole chain, so a live one is never doubled; a chain lost with its
# worker frees the request for the sweep after this.
PENDING_CHAIN_TTL_S = 30 * 60


def pending_chain_key(task_name: str, request_id: int) -> str:
    """The shared-cache marker (Redis in production) saying that ``task_name`` has a run or a retry pending for the
    request."""
    return f"allocations:pending-chain:{task_name}:{request_id}"


def _request_id(args: tuple, kwargs: dict) -> int | None:
    return args[0] if args else kwargs.get("request_id")


class RequestTask(Task):
    """A task about one request (first argument: its id) that records its final error on the request, and marks its
    chain pending while it retries so that the reconcile sweep starts no second one."""

    acks_late = True
    reject_on_worker_lost = True

    def on_retry(self, exc: BaseException, task_id: str, args: tuple, kwargs: dict, einfo: Any) -> None:
        # Also a chain the sweep did not start (an approval's): while it backs off, the sweep leaves the request alone.
        # Run eagerly (no broker), the retry has already run inside this one: nothing is pending.
        request_id = _request_id(args, kwargs)
        if request_id is not None and not self.request.is_eager:
            cache.set(pending_chain_key(self.name, request_id), task_id, timeout=PENDING_CHAIN_TTL_S)

    def after_return(self, status: str, retval: Any, task_id: str, args: tuple, kwargs: dict, einfo: Any) -> None:
        # Succeeded, or failed for good (Celery does not call this on a retry): the next sweep may queue it again.
        request_id = _request_id(args, kwargs)
        if request_id is not None:
            cache.delete(pending_chain_key(self.name, request_id))

    def on_failure(self, exc: BaseException, task_id: str, args: tuple, kwargs: dict, einfo: Any) -> None:
        from allocations.clusters.provisioning import gpu_request_record_error

        request_id = _request_id(args, kwargs)
        if request_id is None:
            return
        retry_note = " The reconcile sweeper will try again." if isinstance(exc, TransientGatewayError) else ""
        gpu_request_record_error(
            request_id=request_id, message=f"{type(exc).__name__}: {exc}.{retry_note}", task_id=task_id
        )


@shared_task(name="allocations.provision_request", base=RequestTask, bind=True, **RETRY_POLICY)
def provision_request(self: Task, request_id: int) -> str:
    """Render and apply an approved request on its cluster, then observe it (re-applies drift when active)."""
    from allocations.clusters.provisioning import gpu_request_provision

    return gpu_request_provision(request_id=request_id, task_id=self.request.id or "").action


@shared_task(name="allocations.release_request", base=RequestTask, bind=True, **RETRY_POLICY)
def release_request(self: Task, request_id: int) -> str:
    """Delete a released or expired request's workload from its cluster."""
    from allocations.clusters.provisioning import gpu_request_teardown

    return gpu_request_teardown(request_id=request_id).action


def _queue_unless_pending(task: Task, request_id: int) -> bool:
    """Queue ``task`` for the request unless a run or retry of it is already pending; True when queued.

    ``cache.add`` is atomic, so two sweeps at once queue one chain between them.
    """
    key = pending_chain_key(task.name, request_id)
    if not cache.add(key, "queued", timeout=PENDING_CHAIN_TTL_S):
        return False
    try:
        task.delay(request_id)
    except Exception:
        cache.delete(key)  # nothing was queued (or an eager run failed): the next sweep tries again
        raise
    return True


@shared_task(name="allocations.reconcile_requests", acks_late=True)
def reconcile_requests() -> dict[str, int]:
    """Beat, every minute: re-queue stuck requests, re-observe (and re-apply) every active one, and tear down again
    the workloads of ended requests whose teardown never finished; a request whose task is still pending (queued, or
    retrying while its cluster is unreachable) gets no second chain, so retries never pile up in the broker."""
    from allocations.clusters.provisioning import active_request_ids, stuck_request_ids, unremoved_request_ids

    stuck, active, unremoved = stuck_request_ids(), active_request_ids(), unremoved_request_ids()
    requeued = sum(_queue_unless_pending(provision_request, request_id) for request_id in stuck)
    observed = sum(_queue_unless_pending(provision_request, request_id) for request_id in active)
    torn_down = sum(_queue_unless_pending(release_request, request_id) for request_id in unremoved)
    pending = len(stuck) + len(active) + len(unremoved) - requeued - observed - torn_down
    return {"requeued": requeued, "observed": observed, "torn_down": torn_down, "already_pending": pending}


@shared_task(name="allocations.expire_requests", acks_late=True)
def expire_requests() -> dict[str, int]:
    """Beat: expire requests past their expiry (and delete their workloads); warn owners a day before."""
    from allocations.clusters.provisioning import gpu_requests_expire

    expired, warned = gpu_requests_expire()
    for request_id in expired:
        release_request.delay(request_id)
    return {"expired": len(expired), "warned": len(warned)}


@shared_task(name="allocations.sync_inventory", acks_late=True)
def sync_inventory(cluster_id: int | None = None) -> dict[str, str]:
    """Beat: read each (or one) Kubernetes cluster's GPU nodes into its node pools; a failure skips only that one."""
    from allocations.clusters.dra_inventory import cluster_sync_dra_inventory
    from allocations.clusters.inventory import cluster_sync_inventory
    from allocations.clusters.provisioning import cluster_gateway

    results = {}
    clusters = Cluster.objects.filter(is_active=True, backend=ClusterBackend.KUBERNETES)
    if cluster_id is not None:
        clusters = clusters.filter(pk=cluster_id)
    for cluster in clusters:
        try:
            gateway = cluster_gateway(cluster)
            nodes = gateway.list_gpu_nodes()
            summary = cluster_sync_inventory(cluster=cluster, nodes=nodes)
            if cluster.device_api == DeviceApi.DRA:
                cluster_sync_dra_inventory(cluster=cluster, slices=gateway.list_resource_slices())
        except GatewayError as exc:
            logger.warning("inventory sync of %s failed: %s", cluster.name, exc)
            error = str(exc)
        except Exception as exc:  # one cluster's surprise must not keep the others unsynced
            logger.exception("inventory sync of %s failed", cluster.name)
            error = f"{type(exc).__name__}: {exc}"
        else:
            error = ""
            results[cluster.name] = f"{len(nodes)} nodes, {len(summary['unmatched'])} unmatched"
        if error:
            results[cluster.name] = f"error: {error}"
        Cluster.objects.filter(pk=cluster.pk).update(inventory_error=error[:2000])
    return results


@shared_task(name="allocations.apply_cluster_objects", acks_late=True)
def apply_cluster_objects(cluster_id: int | None = None) -> dict[str, str]:
    """Beat (and on demand): apply each (or one) cluster's own objects; a failure skips only that cluster."""
    from allocations.clusters.rendering import cluster_objects_apply

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
