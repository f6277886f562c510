"""Two deliveries of one request's provisioning run at once, on two workers: the request is provisioned once, cleanly.

Duplicates are normal: the reconcile sweeper re-queues a request left in ``approved`` for ``STUCK_AFTER`` while its
first message may only be waiting behind a backlog, and Redis re-delivers a message whose worker died. Here the
approval's own message and a second one (as the sweeper sends) are taken by two ``--pool=solo`` workers
(from ``celery_workers``) while the test holds the request's row lock, so both read the request as ``approved`` and
both wait to start it; the lock is then let go. Both tasks must succeed, with one ``provisioning`` and one ``active``
event, one Job, and no error left on the request.
"""

from __future__ import annotations

import time

import psycopg
import pytest
from django.db import connection, transaction

from allocations.clusters.tasks import provision_request
from allocations.models import GpuRequest, RequestStatus
from allocations.requests.services import gpu_request_approve
from tests.factories import DemoOrg
from tests.integration.celery_workers import (  # noqa: F401 (fixtures)
    PROVISIONED_ONCE,
    Worker,
    Workers,
    cluster,
    job_path_of,
    org,
    owned_objects_of,
    patches_to,
    submit_training_request,
    transitions_of,
    wait_for,
    worker_database_url,
    workers,
)
from tests.integration.k8s_emulator import EmulatedCluster

pytestmark = [
    pytest.mark.integration,
    pytest.mark.postgres,
    pytest.mark.redis,
    pytest.mark.django_db(transaction=True),
]


def _lock_waiters(monitor: psycopg.Connection) -> int:
    """Backends of this database waiting for a lock (pg_stat_activity is read outside the test's transaction)."""
    row = monitor.execute(
        "SELECT count(*) FROM pg_stat_activity WHERE datname = %s AND wait_event_type = 'Lock'",
        [connection.settings_dict["NAME"]],
    ).fetchone()
    return int(row[0]) if row else 0


def _start_together(pool: Workers, count: int) -> list[Worker]:
    """Start ``count`` workers at once and wait for all: started one after the other, the later one would take back
    (at its start) a message the earlier one has held longer than the fixture's short visibility timeout."""
    started = []
    for index in range(count):
        name = f"{pool.queue}-{len(pool.started) + 1}"
        worker = Worker(name, pool.queue, pool.broker_url, pool.log_dir / f"worker-{index + 1}.log")
        pool.started.append(worker)
        started.append(worker)
    for worker in started:
        worker.wait_ready()
    return started


def _finished(log: str) -> int:
    return log.count(" succeeded in ") + log.count(" raised ")


def test_two_deliveries_of_one_provisioning_at_once_provision_it_once(
    workers: Workers,  # noqa: F811 (the fixtures imported above)
    cluster: EmulatedCluster,  # noqa: F811
    org: DemoOrg,  # noqa: F811
    record_property: pytest.RecordProperty,
) -> None:
    request = submit_training_request(org, cluster)
    gpu_request_approve(request=request, acting_user=org.approver, comment="ok")  # publishes the first message
    provision_request.delay(request.pk)  # the second, as the sweeper re-queues a request it finds still approved

    # The row lock holds both deliveries after they read the request as approved; let go, they race to start it.
    with psycopg.connect(worker_database_url(), autocommit=True) as monitor, transaction.atomic():
        GpuRequest.objects.select_for_update().get(pk=request.pk)
        first, second = _start_together(workers, 2)
        wait_for(lambda: _lock_waiters(monitor) >= 2, "both workers to wait for the request's lock", workers)
    for worker in (first, second):
        wait_for(lambda w=worker: _finished(w.log()) >= 1, f"{worker.name}'s task to finish", workers)
    wait_for(lambda: GpuRequest.objects.get(pk=request.pk).status == RequestStatus.ACTIVE, "activation", workers)
    time.sleep(0.5)  # anything a failed task would still write (its failure hook) lands before we look

    request.refresh_from_db()
    logs = first.log() + second.log()
    received, succeeded = logs.count("provision_request[") - _finished(logs), logs.count(" succeeded in ")
    figure = (
        f"{received} deliveries of one approved request's provisioning at once on 2 workers: "
        f"events {dict(transitions_of(request))}, {succeeded} tasks succeeded, {logs.count(' raised ')} raised, "
        f"{patches_to(cluster, job_path_of(request))} Job applies, detail {request.status_detail!r}"
    )
    print(f"\n{figure}")
    record_property("figure", figure)
    assert received >= 2 and succeeded == received, f"every delivery succeeds\n{workers.logs()}"
    assert transitions_of(request) == PROVISIONED_ONCE
    assert owned_objects_of(cluster, request) == [("Job", request.team.namespace, f"gpr-{request.pk}")]
    assert request.status == RequestStatus.ACTIVE and "Error" not in request.status_detail, request.status_detail
