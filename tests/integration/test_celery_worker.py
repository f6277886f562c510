"""The request lifecycle through a real Celery worker process, Redis and the Kubernetes API emulator.

The test process plays the web tier: it submits and approves through the services, whose ``on_commit`` publishes
``allocations.provision_request`` to Redis (eager mode off). A separate ``celery worker --pool=solo`` process, with
the production settings module (``portal.settings.base``) pointed at the test database, consumes a queue of its own
and applies the objects over real HTTP to the emulator served from this process. The data is committed
(``transaction=True``) so the worker sees it.

The kill test proves the broker contract in ``allocations.clusters.tasks``: ``acks_late`` leaves the message
unacknowledged while the task runs, so a worker SIGKILLed in the middle of the server-side apply loses nothing; once
the visibility timeout has passed, the next worker to start restores the message and finishes the task, and because
provisioning re-reads state and applies idempotently, the cluster ends with one set of objects and the audit log with
one ``provisioning`` and one ``active`` event.

Redelivery timing (kombu's Redis transport): an unacknowledged message becomes visible again only after
``CELERY_VISIBILITY_TIMEOUT`` seconds, and only when a consumer sweeps for such messages: once when a worker starts
polling, then about every 100 s (``unacked_restore_interval`` 10 s x ``unacked_restore_throttle`` 10). The test
therefore starts the replacement worker after the timeout, as an orchestrator restarting a crashed pod would.
"""

from __future__ import annotations

import signal
import time

import pytest

from allocations.models import GpuRequest, RequestStatus
from allocations.requests.services import gpu_request_approve, gpu_request_release
from tests.factories import DemoOrg
from tests.integration.celery_workers import (  # noqa: F401 (fixtures)
    PROVISIONED_ONCE,
    TASK_TIMEOUT_S,
    VISIBILITY_TIMEOUT_S,
    Workers,
    assert_team_objects,
    cluster,
    job_path_of,
    org,
    owned_objects_of,
    patches_to,
    status_of,
    submit_training_request,
    transitions_of,
    wait_for,
    workers,
)
from tests.integration.k8s_emulator import EmulatedCluster

pytestmark = [
    pytest.mark.integration,
    pytest.mark.postgres,
    pytest.mark.redis,
    pytest.mark.django_db(transaction=True),
]


# --- The tests -----------------------------------------------------------------------------------------------------


def test_approval_is_provisioned_by_a_worker_and_release_deletes_the_workload(
    workers: Workers,  # noqa: F811 (the fixtures imported above)
    cluster: EmulatedCluster,  # noqa: F811
    org: DemoOrg,  # noqa: F811
) -> None:
    workers.start()
    request = submit_training_request(org, cluster)

    gpu_request_approve(request=request, acting_user=org.approver, comment="ok")

    wait_for(lambda: status_of(request) == RequestStatus.ACTIVE, "the request to become active", workers)
    request.refresh_from_db()
    namespace = request.team.namespace
    assert owned_objects_of(cluster, request) == [("Job", namespace, f"gpr-{request.pk}")]
    job = cluster.get("Job", f"gpr-{request.pk}", namespace)
    assert job is not None and job["metadata"]["labels"]["app.kubernetes.io/managed-by"] == "gpu-portal"
    assert_team_objects(cluster, namespace)
    assert request.observed_phase == "Running" and request.activated_at is not None
    assert request.last_task_id, "the task id is kept on the request"
    assert transitions_of(request) == PROVISIONED_ONCE, workers.logs()
    # The audit trail says the worker's writes came from the task (its own process, through Celery's task signals).
    from audit.models import AuditEvent

    by_worker = AuditEvent.objects.filter(
        object_type="allocations.gpurequest", object_id=str(request.pk), source="task"
    )
    assert {e.after.get("status") for e in by_worker} >= {"provisioning", "active"}, workers.logs()
    assert {e.source_detail for e in by_worker} == {"allocations.provision_request"}
    approved = AuditEvent.objects.get(
        object_type="allocations.gpurequest", object_id=str(request.pk), after__status="approved"
    )
    assert (approved.actor, approved.source) == (org.approver, "system")  # called from this test: no request, no task

    gpu_request_release(request=request, acting_user=org.member, comment="done")

    wait_for(lambda: not owned_objects_of(cluster, request), "the workload to be deleted", workers)
    wait_for(
        lambda: GpuRequest.objects.filter(pk=request.pk, observed_phase="NotFound").exists(),
        "the release task to record the removal",
        workers,
    )
    deletes = [seen for seen in cluster.requests if seen.method.value == "DELETE"]
    assert [seen.url.path for seen in deletes] == [job_path_of(request)]
    assert_team_objects(cluster, namespace)  # the team's namespace objects stay
    assert status_of(request) == RequestStatus.RELEASED


def test_a_worker_killed_during_the_apply_is_replaced_and_the_request_provisioned_once(
    workers: Workers,  # noqa: F811 (the fixtures imported above)
    cluster: EmulatedCluster,  # noqa: F811
    org: DemoOrg,  # noqa: F811
) -> None:
    first = workers.start()
    request = submit_training_request(org, cluster)
    job_path = job_path_of(request)
    # The first worker's apply of the Job hangs in the API server until the test lets it through, and the server
    # finishes it even though its client is dead by then: the worst case, a stale write landing late.
    held = cluster.delay("PATCH", job_path, seconds=TASK_TIMEOUT_S, outlive_client=True)

    gpu_request_approve(request=request, acting_user=org.approver, comment="ok")

    assert held.arrived.wait(TASK_TIMEOUT_S), f"the Job's apply never reached the API server\n{workers.logs()}"
    delivered_by = time.monotonic()  # the worker had taken the message (and Redis timed it) before it got this far
    first.kill()
    assert first.process.returncode == -signal.SIGKILL
    request.refresh_from_db()
    task_id = request.last_task_id
    assert request.status == RequestStatus.PROVISIONING and task_id, "the first worker had started the task"
    assert cluster.get("Job", f"gpr-{request.pk}", request.team.namespace) is None

    # A worker that starts once the visibility timeout has passed takes the unacknowledged message back.
    time.sleep(max(0.0, delivered_by + VISIBILITY_TIMEOUT_S + 0.5 - time.monotonic()))
    second = workers.start()

    wait_for(
        lambda: status_of(request) == RequestStatus.ACTIVE, "the redelivered task to activate the request", workers
    )
    wait_for(lambda: f"provision_request[{task_id}] succeeded" in second.log(), "the second worker's log", workers)
    assert f"provision_request[{task_id}]" in first.log() and "succeeded" not in first.log()
    namespace = request.team.namespace
    job = cluster.get("Job", f"gpr-{request.pk}", namespace)
    assert job is not None, "the second worker created the Job"

    held.release()  # the dead worker's apply lands now, after the second worker's
    assert held.done.wait(TASK_TIMEOUT_S) and held.outcome == 200, "served late, onto the existing Job"

    request.refresh_from_db()
    assert owned_objects_of(cluster, request) == [("Job", namespace, f"gpr-{request.pk}")]
    late = cluster.get("Job", f"gpr-{request.pk}", namespace)
    assert late is not None
    assert late["metadata"]["uid"] == job["metadata"]["uid"], "the same Job, not a second one"
    assert late["metadata"]["resourceVersion"] == job["metadata"]["resourceVersion"], "the late apply was a no-op"
    assert_team_objects(cluster, namespace)
    assert patches_to(cluster, job_path) == 2, "one apply by each worker: the message was delivered twice"
    assert request.last_task_id == task_id, "the same message, redelivered"
    assert transitions_of(request) == PROVISIONED_ONCE, workers.logs()
    assert request.status == RequestStatus.ACTIVE and request.observed_phase == "Running"


def test_a_transient_api_error_is_retried_with_backoff(
    workers: Workers,  # noqa: F811 (the fixtures imported above)
    cluster: EmulatedCluster,  # noqa: F811
    org: DemoOrg,  # noqa: F811
) -> None:
    workers.start()
    request = submit_training_request(org, cluster)
    job_path = job_path_of(request)
    cluster.fail("PATCH", job_path, 503, "etcdserver: request timed out")

    gpu_request_approve(request=request, acting_user=org.approver, comment="ok")

    # RETRY_POLICY's first countdown is at most retry_backoff (5 s), with full jitter.
    wait_for(lambda: status_of(request) == RequestStatus.ACTIVE, "the retried task to activate the request", workers)
    worker_log = workers.started[0].log()
    assert "etcdserver: request timed out" in worker_log and "retry" in worker_log.lower(), worker_log
    assert patches_to(cluster, job_path) == 2, "the failed apply and the retried one"
    request.refresh_from_db()
    assert owned_objects_of(cluster, request) == [("Job", request.team.namespace, f"gpr-{request.pk}")]
    assert transitions_of(request) == PROVISIONED_ONCE, workers.logs()
