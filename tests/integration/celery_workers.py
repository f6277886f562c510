"""The toolkit of the tests that run tasks in real Celery worker processes against Redis (and, for provisioning, the
Kubernetes API emulator): worker processes on a private queue, the fixtures that start them and route this process's
tasks to them, the demo organisation on an emulated cluster, and the waits and readings those tests share.

A test module imports what it needs, fixtures included (``from tests.integration.celery_workers import workers``),
and marks itself ``integration``, ``postgres``, ``redis`` and ``django_db(transaction=True)``: the worker reads the
committed data of the test database (``worker_database_url``).
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
from allocations.requests.services import gpu_request_submit
from tests.factories import DemoOrg, build_demo_org
from tests.integration.k8s_emulator import EmulatedCluster

REPO_ROOT = Path(__file__).resolve().parents[2]
# Short, so a message left unacknowledged by a killed worker is visible again within the test's time.
VISIBILITY_TIMEOUT_S = 5
WORKER_START_TIMEOUT_S = 30
TASK_TIMEOUT_S = 30
PROFILE = {"workload_type": "training", "gpu_memory_gb": 40}
# The audit log of a request provisioned once: one event per status, however often its task ran.
PROVISIONED_ONCE = Counter({"pending_approval": 1, "approved": 1, "provisioning": 1, "active": 1})


# --- The worker processes ------------------------------------------------------------------------------------------


def worker_database_url() -> str:
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
            "DATABASE_URL": worker_database_url(),
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


def integration_broker_url() -> str:
    """The integration broker (``CELERY_BROKER_URL``); its database is flushed, so it must be one kept for tests."""
    return str(settings.INTEGRATION_BROKER_URL)


@pytest.fixture
def workers(transactional_db: None, tmp_path: Path) -> Iterator[Workers]:
    """Real worker processes, killed however the test ends; this process publishes to their queue, never eagerly."""
    import redis

    from portal.celery import app

    broker_url = integration_broker_url()
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
    reset_task_routing(app)
    try:
        yield pool
    finally:
        pool.kill_all()
        broker.flushdb()  # what a failed test left queued or unacknowledged
        broker.close()
        for key, value in saved.items():
            setattr(app.conf, key, value)
        reset_task_routing(app)
        # pytest shows this only when the test failed: what each worker did.
        print(pool.logs())


def reset_task_routing(app: Any) -> None:
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


def submit_training_request(org: DemoOrg, cluster: EmulatedCluster) -> GpuRequest:
    """A training request waiting for approval, with the pod its Job will have already running (no controller here)."""
    request = gpu_request_submit(
        command=["python", "main.py"], acting_user=org.member, team=org.team, name="resnet", profile_data=PROFILE
    )
    assert request.status == RequestStatus.PENDING_APPROVAL
    cluster.put(running_pod_of(request))
    return request


def running_pod_of(request: GpuRequest) -> dict[str, Any]:
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


def job_path_of(request: GpuRequest) -> str:
    return f"/apis/batch/v1/namespaces/{request.team.namespace}/jobs/gpr-{request.pk}"


def wait_for(condition: Callable[[], bool], what: str, workers: Workers, timeout: float = TASK_TIMEOUT_S) -> None:
    """Poll ``condition`` until it holds, or fail after ``timeout`` seconds with the workers' logs."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(0.1)
    pytest.fail(f"timed out after {timeout} s waiting for {what}\n{workers.logs()}")


def status_of(request: GpuRequest) -> str:
    return GpuRequest.objects.values_list("status", flat=True).get(pk=request.pk)


def transitions_of(request: GpuRequest) -> Counter[str]:
    return Counter(RequestEvent.objects.filter(request=request).values_list("to_status", flat=True))


def owned_objects_of(cluster: EmulatedCluster, request: GpuRequest) -> list[tuple[str, str, str]]:
    """(kind, namespace, name) of every object labelled as the request's, pods (the kubelet's) aside."""
    found = cluster.labelled("gpu-portal/request", str(request.pk))
    return sorted(
        (obj["kind"], obj["metadata"].get("namespace", ""), obj["metadata"]["name"])
        for obj in found
        if obj["kind"] != "Pod"
    )


def patches_to(cluster: EmulatedCluster, path: str) -> int:
    return sum(1 for seen in cluster.requests if seen.method.value == "PATCH" and seen.url.path == path)


def assert_team_objects(cluster: EmulatedCluster, namespace: str) -> None:
    """The team's namespace objects and the tier's PriorityClass, which every request of the team shares."""
    assert cluster.get("Namespace", namespace) is not None
    for kind, name in (
        ("NetworkPolicy", "gpu-portal-default"),
        ("ResourceQuota", "gpu-portal-quota"),
        ("LimitRange", "gpu-portal-limits"),
    ):
        assert cluster.get(kind, name, namespace) is not None, f"{kind} {name} missing"
