"""The broker restarted without persistence while work is queued: the reconcile sweeper finishes it.

A Redis of the test's own (``--save "" --appendonly no``, on a free port; the shared one is never touched) is the
broker. One ``--pool=solo`` worker (from ``celery_workers``) is busy with the first of 20 approved requests, its apply
held in the emulated API server; the other 19 provisioning messages wait in Redis, with the teardowns of five running
requests released meanwhile. Redis is then restarted: the queued messages, and the in-flight one's unacknowledged
entry, are gone; while it is down an approver approves one more request over the API (the approval stands; its
message cannot be sent). The worker reconnects on its own. The requests left in ``approved`` or not torn down are
untouched by anything but the sweeper: once they are older than ``STUCK_AFTER`` (their ``updated_at`` is moved back
by that much, as the clock would), beat's ``reconcile_requests`` message is sent as beat sends it, and every approved
request must end active, once, with one Job, and every released one's Job must be gone. docs/operating.md states
the resulting bound; ``test_operating_doc_states_the_sweepers_bound`` keeps it equal to the beat period plus
``STUCK_AFTER``.
"""

from __future__ import annotations

import re
import socket
import subprocess
import time
from collections import Counter
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import kombu.pools
import pytest
from django.db.models import F
from rest_framework.test import APIClient

from allocations.clusters.provisioning import STUCK_AFTER, gpu_request_provision
from allocations.models import GpuRequest, RequestStatus
from allocations.requests.services import gpu_request_approve, gpu_request_release
from tests.factories import DemoOrg
from tests.integration.celery_workers import (  # noqa: F401 (fixtures)
    PROVISIONED_ONCE,
    TASK_TIMEOUT_S,
    Workers,
    cluster,
    job_path_of,
    org,
    owned_objects_of,
    reset_task_routing,
    submit_training_request,
    transitions_of,
    wait_for,
)
from tests.integration.k8s_emulator import EmulatedCluster

REQUESTS = 20
RELEASED = 5  # requests running before, released while the approvals wait: their teardowns are queued too
OPERATING_DOC = Path(__file__).resolve().parents[2] / "docs" / "operating.md"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class EphemeralRedis:
    """A redis-server without persistence on a loopback port: restarting it loses everything, as a pod would."""

    def __init__(self, directory: Path) -> None:
        self.port = _free_port()
        self.directory = directory
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        command = ["redis-server", "--bind", "127.0.0.1", "--port", str(self.port), "--save", "", "--appendonly", "no"]
        log = (self.directory / "redis.log").open("ab")
        self.process = subprocess.Popen(command, cwd=self.directory, stdout=log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 10
        while not self._answers():
            if self.process.poll() is not None or time.monotonic() > deadline:
                pytest.fail(f"redis-server did not start:\n{(self.directory / 'redis.log').read_text()[-2000:]}")
            time.sleep(0.05)

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            self.process.wait(timeout=10)

    def queued(self, queue: str) -> int:
        import redis

        with redis.Redis.from_url(self.url) as client:
            return int(client.llen(queue))

    def flush(self) -> None:
        import redis

        with redis.Redis.from_url(self.url) as client:
            client.flushdb()

    def _answers(self) -> bool:
        import redis

        try:
            with redis.Redis.from_url(self.url, socket_timeout=1) as client:
                return bool(client.ping())
        except redis.RedisError:
            return False


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[EphemeralRedis]:
    redis = EphemeralRedis(tmp_path)
    redis.start()
    try:
        yield redis
    finally:
        redis.stop()


@pytest.fixture
def workers_on(broker: EphemeralRedis, transactional_db: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """The workers of ``celery_workers``, and this process's publishing, on the test's own broker's default queue."""
    from portal.celery import app

    # Celery reads CELERY_BROKER_URL from the environment before its configuration.
    monkeypatch.setenv("CELERY_BROKER_URL", broker.url)
    pool = Workers(broker.url, tmp_path)
    # The broker is the test's alone, so its workers consume the default queue, as in production: the sweeper (run
    # by a worker, with the production routing) re-queues provisioning there.
    pool.queue = app.conf.task_default_queue
    saved = {key: getattr(app.conf, key) for key in ("task_always_eager", "broker_url")}
    app.conf.task_always_eager = False
    app.conf.broker_url = broker.url
    _reset_publishing(app)
    try:
        yield pool
    finally:
        pool.kill_all()
        for key, value in saved.items():
            setattr(app.conf, key, value)
        monkeypatch.undo()
        _reset_publishing(app)
        print(pool.logs())


def _reset_publishing(app: Any) -> None:
    """Forget the routes and the connection pools Celery caches, so the next publish uses the current broker."""
    reset_task_routing(app)
    # Celery's pools live in kombu's registries, keyed by broker URL: closing one there without clearing the
    # registries left a closed pool behind for every later publish to that broker ("Acquire on closed pool").
    kombu.pools.reset()
    app._pool = None
    app.amqp._producer_pool = None


def _running_before(demo: DemoOrg, emulated: EmulatedCluster, broker: EphemeralRedis) -> list[GpuRequest]:
    """Requests provisioned before the test's story starts (by the services, as a worker would have run them)."""
    running = []
    for _ in range(RELEASED):
        request = submit_training_request(demo, emulated)
        gpu_request_approve(request=request, acting_user=demo.approver, comment="earlier")
        gpu_request_provision(request_id=request.pk)
        request.refresh_from_db()
        assert request.status == RequestStatus.ACTIVE and owned_objects_of(emulated, request)
        running.append(request)
    broker.flush()  # their provisioning messages were taken long ago
    return running


def _statuses(requests: list[GpuRequest]) -> Counter[str]:
    return Counter(GpuRequest.objects.filter(pk__in=[r.pk for r in requests]).values_list("status", flat=True))


@pytest.mark.integration
@pytest.mark.postgres
@pytest.mark.redis_server
@pytest.mark.django_db(transaction=True)
def test_after_a_broker_restart_the_sweeper_finishes_every_approval_and_release(
    broker: EphemeralRedis,
    workers_on: Workers,
    cluster: EmulatedCluster,  # noqa: F811 (the fixtures imported above)
    org: DemoOrg,  # noqa: F811
    record_property: pytest.RecordProperty,
) -> None:
    from allocations.clusters.tasks import reconcile_requests

    started = time.monotonic()
    org.team.quotas.update(limit=REQUESTS + 1 + RELEASED)
    org.pool.node_count = 4  # 32 GPUs: room for all
    org.pool.save(update_fields=["node_count"])
    running = _running_before(org, cluster, broker)
    requests = [submit_training_request(org, cluster) for _ in range(REQUESTS)]
    approved_in_outage = submit_training_request(org, cluster)
    busy = cluster.delay("PATCH", job_path_of(requests[0]), seconds=TASK_TIMEOUT_S * 3, outlive_client=True)
    worker = workers_on.start()
    for request in requests:
        gpu_request_approve(request=request, acting_user=org.approver, comment="batch")
    assert busy.arrived.wait(TASK_TIMEOUT_S), f"the first apply never came\n{workers_on.logs()}"
    for request in running:
        gpu_request_release(request=request, acting_user=org.member, comment="done")
    queued = REQUESTS - 1 + RELEASED
    wait_for(lambda: broker.queued(workers_on.queue) == queued, f"{queued} messages queued", workers_on)

    broker.stop()
    # An approver approves while Redis is down: the approval stands, its message cannot be sent.
    client = APIClient()
    client.force_authenticate(org.approver)
    approve_started = time.monotonic()
    response = client.post(f"/api/v1/requests/{approved_in_outage.pk}/approve/", {}, format="json")
    approve_s = time.monotonic() - approve_started
    assert response.status_code in (200, 202), response.content
    broker.start()
    lost = queued - broker.queued(workers_on.queue)
    requests.append(approved_in_outage)
    busy.release()  # the worker finishes what it had in hand, on a broker that forgot it
    wait_for(lambda: _statuses(requests)[RequestStatus.ACTIVE] == 1, "the in-flight request to activate", workers_on)
    assert worker.process.poll() is None, "the worker survives the broker's restart"
    after_restart = _statuses(requests)
    assert after_restart == {RequestStatus.ACTIVE: 1, RequestStatus.APPROVED: REQUESTS}, after_restart

    # Nothing but the sweeper picks them up: as the clock would, make them older than STUCK_AFTER, then beat's message.
    stuck = GpuRequest.objects.filter(status__in=(RequestStatus.APPROVED, RequestStatus.RELEASED))
    assert stuck.count() == REQUESTS + RELEASED
    stuck.update(updated_at=F("updated_at") - STUCK_AFTER - timedelta(seconds=1))
    swept_at = time.monotonic()
    reconcile_requests.apply_async()
    wait_for(
        lambda: _statuses(requests)[RequestStatus.ACTIVE] == len(requests),
        "the sweeper's re-queued provisioning to activate every request",
        workers_on,
        timeout=TASK_TIMEOUT_S * 3,
    )
    released = GpuRequest.objects.filter(pk__in=[r.pk for r in running])
    # The teardown deletes the Job, then records what it observed: wait for both, not the first alone.
    wait_for(
        lambda: (
            not any(owned_objects_of(cluster, request) for request in running)
            and set(released.values_list("observed_phase", flat=True)) == {"NotFound"}
        ),
        "the sweeper's re-queued teardowns to delete the released requests' Jobs",
        workers_on,
    )
    sweep_s = time.monotonic() - swept_at

    problems = []
    for request in requests:
        objects = owned_objects_of(cluster, request)
        if objects != [("Job", request.team.namespace, f"gpr-{request.pk}")]:
            problems.append(f"request {request.pk}: objects {objects}")
        if transitions_of(request) != PROVISIONED_ONCE:
            problems.append(f"request {request.pk}: events {dict(transitions_of(request))}")
    figure = (
        f"broker restarted without persistence with {REQUESTS - 1} provisioning and {RELEASED} teardown messages "
        f"queued ({lost} lost) and "
        f"1 in flight, and 1 request approved while it was down (HTTP {response.status_code} in {approve_s:.1f} s): "
        f"after one sweep {dict(_statuses(requests))} and {RELEASED} released requests' Jobs deleted in "
        f"{sweep_s:.1f} s, {len(problems)} requests with extra objects or events; "
        f"{time.monotonic() - started:.1f} s in all"
    )
    print(f"\n{figure}")
    record_property("figure", figure)
    assert lost == queued, "the restart must have lost the queued messages for the test to mean anything"
    assert set(released.values_list("observed_phase", flat=True)) == {"NotFound"}
    assert not problems, "\n".join(problems) + f"\n{workers_on.logs()}"


def test_operating_doc_states_the_sweepers_bound() -> None:
    """The documented bound for finishing an approval whose message was lost: beat's period plus ``STUCK_AFTER``."""
    from portal.celery import app

    period = app.conf.beat_schedule["reconcile-requests"]["schedule"]
    bound_minutes = (float(period) + STUCK_AFTER.total_seconds()) / 60
    operating = OPERATING_DOC.read_text().split("## Provisioning and lost work", 1)[1].split("\n## ", 1)[0]
    stated = re.search(r"within (\d+) minutes of (?:its|the) approval", operating)
    assert stated, "docs/operating.md must say within how long a lost approval is provisioned"
    assert float(stated[1]) == bound_minutes, f"the doc says {stated[1]} minutes, the schedule gives {bound_minutes}"
