"""The request lifecycle through a real Celery worker process, Redis and the Kubernetes API emulator (issue #5).

The test process plays the web tier: it submits and approves through the services, whose ``on_commit`` publishes
``allocations.provision_request`` to Redis (eager mode off). A separate ``celery worker --pool=solo`` process, with
the production settings module (``portal.settings.base``) pointed at the test database, consumes a queue of its own
and applies the objects over real HTTP to the emulator served from this process. The data is committed
(``transaction=True``) so the worker sees it.

The kill test proves the broker contract in ``allocations.tasks``: ``acks_late`` leaves the message unacknowledged
while the task runs, so a worker SIGKILLed in the middle of the server-side apply loses nothing; once the visibility
timeout has passed, the next worker to start restores the message and finishes the task, and because provisioning
re-reads state and applies idempotently, the cluster ends with one set of objects and the audit log with one
``provisioning`` and one ``active`` event.

Redelivery timing (kombu's Redis transport): an unacknowledged message becomes visible again only after
``CELERY_VISIBILITY_TIMEOUT`` seconds, and only when a consumer sweeps for such messages: once when a worker starts
polling, then about every 100 s (``unacked_restore_interval`` 10 s x ``unacked_restore_throttle`` 10). The test
therefore starts the replacement worker after the timeout, as an orchestrator restarting a crashed pod would.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest
from django.conf import settings

from allocations.models import ClusterBackend, GpuRequest, RequestEvent, RequestStatus
from allocations.services import gpu_request_approve, gpu_request_release, gpu_request_submit
from tests.factories import DemoOrg, build_demo_org
from tests.integration.k8s_emulator import EmulatedCluster

pytestmark = [
    pytest.mark.integration,
    pytest.mark.postgres,
    pytest.mark.redis,
    pytest.mark.django_db(transaction=True),
]

REPO_ROOT = Path(__file__).resolve().parents[2]
# Short, so a message left unacknowledged by a killed worker is visible again within the test's time.
VISIBILITY_TIMEOUT_S = 5
WORKER_START_TIMEOUT_S = 30
TASK_TIMEOUT_S = 30
PROFILE = {"workload_type": "training", "gpu_memory_gb": 40}
# The audit log of a request provisioned once: one event per status, however often its task ran.
PROVISIONED_ONCE = Counter({"pending_approval": 1, "approved": 1, "provisioning": 1, "active": 1})


# --- The worker processes ------------------------------------------------------------------------------------------


def _database_url() -> str:
    """The URL of the database this test runs on (pytest-django's ``test_<NAME>``), for the worker."""
    from django.db import connection

    db = connection.settings_dict
    user = quote(db.get("USER") or "", safe="")
    password = f":{quote(db['PASSWORD'], safe='')}" if db.get("PASSWORD") else ""
    credentials = f"{user}{password}@" if user else ""
    port = f":{db['PORT']}" if db.get("PORT") else ""
    return f"postgres://{credentials}{db.get('HOST') or '127.0.0.1'}{port}/{quote(db['NAME'], safe='')}"


class Worker:
    """One ``celery worker`` process (``--pool=solo`` unless ``pool_args`` say otherwise) consuming ``queue``, its
    output in a log file."""

    def __init__(
        self, name: str, queue: str, broker_url: str, log_path: Path, pool_args: tuple[str, ...] = ("--pool=solo",)
    ) -> None:
        self.name = name
        self.log_path = log_path
        env = {
            **os.environ,
            # The production settings module: eager off because a broker is configured, nothing test-only.
            "DJANGO_SETTINGS_MODULE": "portal.settings.base",
            "DATABASE_URL": _database_url(),
            "CELERY_BROKER_URL": broker_url,
            "CELERY_VISIBILITY_TIMEOUT": str(VISIBILITY_TIMEOUT_S),
            "DEBUG": "1",
            "LOG_LEVEL": "INFO",
            "PYTHONUNBUFFERED": "1",
        }
        command = [
            sys.executable,
            "-m",
            "celery",
            "-A",
            "portal",
            "worker",
            *pool_args,
            "-Q",
            queue,
            "-n",
            f"{name}@%h",
            "--without-gossip",
            "--without-mingle",
            "--without-heartbeat",
            "--loglevel=INFO",
        ]
        self._log = log_path.open("wb")
        self.process = subprocess.Popen(
            command, cwd=REPO_ROOT, env=env, stdout=self._log, stderr=subprocess.STDOUT, start_new_session=True
        )

    def log(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    def wait_ready(self) -> None:
        """Wait until the worker consumes its queue (it logs ``ready.``), or fail with its log."""
        deadline = time.monotonic() + WORKER_START_TIMEOUT_S
        while time.monotonic() < deadline:
            if f"{self.name}@" in self.log() and " ready." in self.log():
                return
            if self.process.poll() is not None:
                pytest.fail(f"worker {self.name} exited with {self.process.returncode}:\n{self.log()}")
            time.sleep(0.05)
        pytest.fail(f"worker {self.name} not ready after {WORKER_START_TIMEOUT_S} s:\n{self.log()}")

    def kill(self) -> None:
        """SIGKILL: no warm shutdown, so nothing is acknowledged or handed back to the broker."""
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait(timeout=10)
        self._log.close()


class Workers:
    """Starts workers on one private queue of a flushed Redis database and routes this process's tasks to it."""

    def __init__(self, broker_url: str, log_dir: Path) -> None:
        self.broker_url = broker_url
        self.queue = f"test-worker-{uuid.uuid4().hex[:10]}"
        self.log_dir = log_dir
        self.started: list[Worker] = []

    def start(self, pool_args: tuple[str, ...] = ("--pool=solo",)) -> Worker:
        index = len(self.started) + 1
        name = f"{self.queue}-{index}"
        worker = Worker(name, self.queue, self.broker_url, self.log_dir / f"worker-{index}.log", pool_args)
        self.started.append(worker)
        worker.wait_ready()
        return worker

    def logs(self) -> str:
        return "\n".join(f"----- {w.name} (exit {w.process.poll()}) -----\n{w.log()}" for w in self.started)

    def kill_all(self) -> None:
        for worker in self.started:
            with contextlib.suppress(ProcessLookupError, subprocess.TimeoutExpired):
                worker.kill()


def _broker_url() -> str:
    """The integration broker (``CELERY_BROKER_URL``); its database is flushed, so it must be one kept for tests."""
    return str(settings.INTEGRATION_BROKER_URL)


@pytest.fixture
def workers(transactional_db: None, tmp_path: Path) -> Iterator[Workers]:
    """Real worker processes, killed however the test ends; this process publishes to their queue, never eagerly."""
    import redis

    from portal.celery import app

    broker_url = _broker_url()
    broker = redis.Redis.from_url(broker_url)
    broker.flushdb()  # no message or unacked entry left by an earlier run
    pool = Workers(broker_url, tmp_path)
    saved = {
        "task_always_eager": app.conf.task_always_eager,
        "broker_url": app.conf.broker_url,
        "task_routes": app.conf.task_routes,
    }
    app.conf.task_always_eager = False
    app.conf.broker_url = broker_url
    app.conf.task_routes = {"allocations.*": {"queue": pool.queue}}
    _reset_routing(app)
    try:
        yield pool
    finally:
        pool.kill_all()
        broker.flushdb()  # what a failed test left queued or unacknowledged
        broker.close()
        for key, value in saved.items():
            setattr(app.conf, key, value)
        _reset_routing(app)
        # pytest shows this only when the test failed: what each worker did.
        print(pool.logs())


def _reset_routing(app: Any) -> None:
    """Drop the router Celery caches on first use, so a change to ``task_routes`` applies."""
    app.amqp.flush_routes()
    app.amqp.__dict__.pop("router", None)


# --- The cluster and the organisation ------------------------------------------------------------------------------


@pytest.fixture
def cluster() -> Iterator[EmulatedCluster]:
    with EmulatedCluster.running() as running:
        yield running


@pytest.fixture
def org(transactional_db: None, cluster: EmulatedCluster) -> DemoOrg:
    """The demo organisation, its cluster on the kubernetes backend with a bare API endpoint (no kubeconfig)."""
    demo = build_demo_org()
    demo.cluster.backend = ClusterBackend.KUBERNETES
    demo.cluster.api_endpoint = cluster.url
    demo.cluster.gitops_path = ""
    demo.cluster.full_clean()
    demo.cluster.save()
    return demo


def _submit(org: DemoOrg, cluster: EmulatedCluster) -> GpuRequest:
    """A training request waiting for approval, with the pod its Job will have already running (no controller here)."""
    request = gpu_request_submit(acting_user=org.member, team=org.team, name="resnet", profile_data=PROFILE)
    assert request.status == RequestStatus.PENDING_APPROVAL
    cluster.put(_running_pod(request))
    return request


def _running_pod(request: GpuRequest) -> dict[str, Any]:
    """The Job's pod as the Job controller, the scheduler and the kubelet would have written it."""
    name = f"gpr-{request.pk}"
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": f"{name}-x7k2p",
            "namespace": request.team.namespace,
            "labels": {"gpu-portal/request": str(request.pk), "job-name": name},
        },
        "spec": {"containers": [{"name": "main", "image": "nvcr.io/nvidia/pytorch:24.05-py3"}]},
        "status": {
            "phase": "Running",
            "conditions": [{"type": "PodScheduled", "status": "True"}, {"type": "Ready", "status": "True"}],
        },
    }


def _job_path(request: GpuRequest) -> str:
    return f"/apis/batch/v1/namespaces/{request.team.namespace}/jobs/gpr-{request.pk}"


def _wait_for(condition: Callable[[], bool], what: str, workers: Workers, timeout: float = TASK_TIMEOUT_S) -> None:
    """Poll ``condition`` until it holds, or fail after ``timeout`` seconds with the workers' logs."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(0.1)
    pytest.fail(f"timed out after {timeout} s waiting for {what}\n{workers.logs()}")


def _status(request: GpuRequest) -> str:
    return GpuRequest.objects.values_list("status", flat=True).get(pk=request.pk)


def _transitions(request: GpuRequest) -> Counter[str]:
    return Counter(RequestEvent.objects.filter(request=request).values_list("to_status", flat=True))


def _owned_objects(cluster: EmulatedCluster, request: GpuRequest) -> list[tuple[str, str, str]]:
    """(kind, namespace, name) of every object labelled as the request's, pods (the kubelet's) aside."""
    found = cluster.labelled("gpu-portal/request", str(request.pk))
    return sorted(
        (obj["kind"], obj["metadata"].get("namespace", ""), obj["metadata"]["name"])
        for obj in found
        if obj["kind"] != "Pod"
    )


def _patches(cluster: EmulatedCluster, path: str) -> int:
    return sum(1 for seen in cluster.requests if seen.method.value == "PATCH" and seen.url.path == path)


def _assert_shared_objects(cluster: EmulatedCluster, namespace: str) -> None:
    """The team's namespace objects and the tier's PriorityClass, which every request of the team shares."""
    assert cluster.get("Namespace", namespace) is not None
    for kind, name in (
        ("NetworkPolicy", "gpu-portal-default"),
        ("ResourceQuota", "gpu-portal-quota"),
        ("LimitRange", "gpu-portal-limits"),
    ):
        assert cluster.get(kind, name, namespace) is not None, f"{kind} {name} missing"


# --- The tests -----------------------------------------------------------------------------------------------------


def test_approval_is_provisioned_by_a_worker_and_release_deletes_the_workload(
    workers: Workers, cluster: EmulatedCluster, org: DemoOrg
) -> None:
    workers.start()
    request = _submit(org, cluster)

    gpu_request_approve(request=request, acting_user=org.approver, comment="ok")

    _wait_for(lambda: _status(request) == RequestStatus.ACTIVE, "the request to become active", workers)
    request.refresh_from_db()
    namespace = request.team.namespace
    assert _owned_objects(cluster, request) == [("Job", namespace, f"gpr-{request.pk}")]
    job = cluster.get("Job", f"gpr-{request.pk}", namespace)
    assert job is not None and job["metadata"]["labels"]["app.kubernetes.io/managed-by"] == "gpu-portal"
    _assert_shared_objects(cluster, namespace)
    assert request.observed_phase == "Running" and request.activated_at is not None
    assert request.last_task_id, "the task id is kept on the request"
    assert _transitions(request) == PROVISIONED_ONCE, workers.logs()
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

    _wait_for(lambda: not _owned_objects(cluster, request), "the workload to be deleted", workers)
    _wait_for(
        lambda: GpuRequest.objects.filter(pk=request.pk, observed_phase="NotFound").exists(),
        "the release task to record the removal",
        workers,
    )
    deletes = [seen for seen in cluster.requests if seen.method.value == "DELETE"]
    assert [seen.url.path for seen in deletes] == [_job_path(request)]
    _assert_shared_objects(cluster, namespace)  # the team's namespace objects stay
    assert _status(request) == RequestStatus.RELEASED


def test_a_worker_killed_during_the_apply_is_replaced_and_the_request_provisioned_once(
    workers: Workers, cluster: EmulatedCluster, org: DemoOrg
) -> None:
    first = workers.start()
    request = _submit(org, cluster)
    job_path = _job_path(request)
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

    _wait_for(lambda: _status(request) == RequestStatus.ACTIVE, "the redelivered task to activate the request", workers)
    _wait_for(lambda: f"provision_request[{task_id}] succeeded" in second.log(), "the second worker's log", workers)
    assert f"provision_request[{task_id}]" in first.log() and "succeeded" not in first.log()
    namespace = request.team.namespace
    job = cluster.get("Job", f"gpr-{request.pk}", namespace)
    assert job is not None, "the second worker created the Job"

    held.release()  # the dead worker's apply lands now, after the second worker's
    assert held.done.wait(TASK_TIMEOUT_S) and held.outcome == 200, "served late, onto the existing Job"

    request.refresh_from_db()
    assert _owned_objects(cluster, request) == [("Job", namespace, f"gpr-{request.pk}")]
    late = cluster.get("Job", f"gpr-{request.pk}", namespace)
    assert late is not None
    assert late["metadata"]["uid"] == job["metadata"]["uid"], "the same Job, not a second one"
    assert late["metadata"]["resourceVersion"] == job["metadata"]["resourceVersion"], "the late apply was a no-op"
    _assert_shared_objects(cluster, namespace)
    assert _patches(cluster, job_path) == 2, "one apply by each worker: the message was delivered twice"
    assert request.last_task_id == task_id, "the same message, redelivered"
    assert _transitions(request) == PROVISIONED_ONCE, workers.logs()
    assert request.status == RequestStatus.ACTIVE and request.observed_phase == "Running"


def test_a_transient_api_error_is_retried_with_backoff(
    workers: Workers, cluster: EmulatedCluster, org: DemoOrg
) -> None:
    workers.start()
    request = _submit(org, cluster)
    job_path = _job_path(request)
    cluster.fail("PATCH", job_path, 503, "etcdserver: request timed out")

    gpu_request_approve(request=request, acting_user=org.approver, comment="ok")

    # RETRY_POLICY's first countdown is at most retry_backoff (5 s), with full jitter.
    _wait_for(lambda: _status(request) == RequestStatus.ACTIVE, "the retried task to activate the request", workers)
    worker_log = workers.started[0].log()
    assert "etcdserver: request timed out" in worker_log and "retry" in worker_log.lower(), worker_log
    assert _patches(cluster, job_path) == 2, "the failed apply and the retried one"
    request.refresh_from_db()
    assert _owned_objects(cluster, request) == [("Job", request.team.namespace, f"gpr-{request.pk}")]
    assert _transitions(request) == PROVISIONED_ONCE, workers.logs()
