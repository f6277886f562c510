"""The Celery worker SIGKILLed while 20 approved requests provision; a new worker finishes them, each exactly once.

The workers, the broker and the emulated API server are ``test_celery_worker``'s (same fixtures). Twenty requests are
approved at once, so twenty provisioning messages wait on Redis for one ``--pool=solo`` worker. The apply of the
eighth request's Job is held in the API server; when it arrives the worker is SIGKILLed, with seven requests active,
one in flight (its message unacknowledged) and twelve still queued. A new worker started after the visibility timeout
takes back the unacknowledged message and the queued ones. Every request must end active, with one event per
transition, one Job in the cluster, and the dead worker's late apply a no-op on the Job the new worker made.
"""

from __future__ import annotations

import signal
import time
from collections import Counter

import pytest

from allocations.models import GpuRequest, RequestStatus
from allocations.services import gpu_request_approve
from tests.factories import DemoOrg
from tests.integration.k8s_emulator import EmulatedCluster
from tests.integration.test_celery_worker import (  # noqa: F401 (fixtures)
    PROVISIONED_ONCE,
    TASK_TIMEOUT_S,
    VISIBILITY_TIMEOUT_S,
    Workers,
    _assert_shared_objects,
    _job_path,
    _owned_objects,
    _patches,
    _submit,
    _transitions,
    _wait_for,
    cluster,
    org,
    workers,
)

pytestmark = [
    pytest.mark.integration,
    pytest.mark.postgres,
    pytest.mark.redis,
    pytest.mark.django_db(transaction=True),
]

REQUESTS = 20
KILLED_DURING = 7  # the index of the request whose apply is in flight when the worker dies


def _statuses(requests: list[GpuRequest]) -> Counter[str]:
    return Counter(GpuRequest.objects.filter(pk__in=[r.pk for r in requests]).values_list("status", flat=True))


def test_a_worker_killed_while_20_requests_provision_is_replaced_and_each_is_provisioned_once(
    workers: Workers,  # noqa: F811 (the fixtures imported above)
    cluster: EmulatedCluster,  # noqa: F811
    org: DemoOrg,  # noqa: F811
    record_property: pytest.RecordProperty,
) -> None:
    started = time.monotonic()
    # Room for twenty one-GPU requests: the team's quota and the pool's GPUs (3 nodes x 8).
    org.team.quotas.update(limit=REQUESTS)
    org.pool.node_count = 3
    org.pool.save(update_fields=["node_count"])
    requests = [_submit(org, cluster) for _ in range(REQUESTS)]
    in_flight = requests[KILLED_DURING]
    held = cluster.delay("PATCH", _job_path(in_flight), seconds=TASK_TIMEOUT_S * 3, outlive_client=True)
    first = workers.start()

    for request in requests:
        gpu_request_approve(request=request, acting_user=org.approver, comment="batch")

    assert held.arrived.wait(TASK_TIMEOUT_S), f"the apply of request #{KILLED_DURING} never came\n{workers.logs()}"
    delivered_by = time.monotonic()
    first.kill()
    assert first.process.returncode == -signal.SIGKILL
    at_kill = _statuses(requests)
    assert at_kill[RequestStatus.ACTIVE] == KILLED_DURING, at_kill
    assert GpuRequest.objects.get(pk=in_flight.pk).status == RequestStatus.PROVISIONING

    # As an orchestrator restarting the crashed pod: the new worker starts once the visibility timeout has passed.
    time.sleep(max(0.0, delivered_by + VISIBILITY_TIMEOUT_S + 0.5 - time.monotonic()))
    workers.start()
    _wait_for(
        lambda: _statuses(requests)[RequestStatus.ACTIVE] == REQUESTS,
        "every request to become active",
        workers,
        timeout=TASK_TIMEOUT_S * 3,
    )
    job_before_late_apply = cluster.get("Job", f"gpr-{in_flight.pk}", in_flight.team.namespace)
    held.release()  # the dead worker's apply lands now, after the new worker's
    assert held.done.wait(TASK_TIMEOUT_S) and held.outcome == 200, "served late, onto the existing Job"

    problems = []
    applies: Counter[int] = Counter()
    for request in requests:
        namespace = request.team.namespace
        objects = _owned_objects(cluster, request)
        if objects != [("Job", namespace, f"gpr-{request.pk}")]:
            problems.append(f"request {request.pk}: objects {objects}")
        transitions = _transitions(request)
        if transitions != PROVISIONED_ONCE:
            problems.append(f"request {request.pk}: events {dict(transitions)}")
        applies[_patches(cluster, _job_path(request))] += 1
    _assert_shared_objects(cluster, org.team.namespace)
    late = cluster.get("Job", f"gpr-{in_flight.pk}", in_flight.team.namespace)
    assert job_before_late_apply is not None and late is not None
    figure = (
        f"{REQUESTS} approved requests, worker SIGKILLed during the apply of #{KILLED_DURING + 1} "
        f"(at the kill: {dict(at_kill)}); after a new worker: {dict(_statuses(requests))}, "
        f"{len(problems)} requests with extra objects or events, Job applies per request {dict(applies)}, "
        f"{time.monotonic() - started:.1f} s"
    )
    print(f"\n{figure}")
    record_property("figure", figure)
    assert not problems, "\n".join(problems) + f"\n{workers.logs()}"
    assert late["metadata"]["uid"] == job_before_late_apply["metadata"]["uid"], "the same Job, not a second one"
    assert late["metadata"]["resourceVersion"] == job_before_late_apply["metadata"]["resourceVersion"], "a no-op"
    # One apply per Job, two for the one in flight: its message was delivered to both workers.
    assert applies == {1: REQUESTS - 1, 2: 1}
    assert _patches(cluster, _job_path(in_flight)) == 2
