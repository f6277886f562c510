"""The Celery worker SIGKILLed while 20 approved requests provision; a new worker finishes them, each exactly once.

The workers, the broker and the emulated API server come from ``celery_workers`` (same fixtures), run as deployed
(``deploy/kubernetes/base/worker.yaml``: the prefork pool, ``--concurrency=2``). Twenty requests are approved at
once, so twenty provisioning messages wait on Redis. The applies of the eighth and ninth requests' Jobs are held in
the API server, one in each pool process; when both have arrived the worker (its whole process group) is SIGKILLed,
with seven requests active, two in flight (their messages unacknowledged) and eleven still queued. A new worker
started after the visibility timeout takes back the unacknowledged messages and the queued ones. Every request must
end active, with one event per transition (in its events and in the audit trail), one Job in the cluster, and the
dead worker's late applies no-ops on the Jobs the new worker made.
"""

from __future__ import annotations

import signal
import time
from collections import Counter

import pytest

from allocations.models import GpuRequest, RequestStatus
from allocations.requests.services import gpu_request_approve
from audit.models import AuditEvent
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

REQUESTS = 20
KILLED_DURING = (7, 8)  # the indexes of the requests whose applies are in flight when the worker dies
AS_DEPLOYED = ("--concurrency=2",)  # the prefork pool, as deploy/kubernetes/base/worker.yaml runs it
# The audit trail also has the request's creation (as a draft, submitted in the same call).
AUDITED_ONCE = PROVISIONED_ONCE + Counter({RequestStatus.DRAFT: 1})


def _statuses(requests: list[GpuRequest]) -> Counter[str]:
    return Counter(GpuRequest.objects.filter(pk__in=[r.pk for r in requests]).values_list("status", flat=True))


def _audited_statuses(request: GpuRequest) -> Counter[str]:
    """The statuses the audit trail records the request moving to (each audited write keeps its changed fields)."""
    events = AuditEvent.objects.filter(object_type="allocations.gpurequest", object_id=str(request.pk))
    return Counter(event.after["status"] for event in events if event.after and "status" in event.after)


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
    requests = [submit_training_request(org, cluster) for _ in range(REQUESTS)]
    in_flight = [requests[index] for index in KILLED_DURING]
    held = [
        cluster.delay("PATCH", job_path_of(request), seconds=TASK_TIMEOUT_S * 4, outlive_client=True)
        for request in in_flight
    ]
    first = workers.start(AS_DEPLOYED)

    for request in requests:
        gpu_request_approve(request=request, acting_user=org.approver, comment="batch")

    for delay, index in zip(held, KILLED_DURING, strict=True):
        assert delay.arrived.wait(TASK_TIMEOUT_S), f"the apply of request {index + 1} never came\n{workers.logs()}"
    delivered_by = time.monotonic()
    first.kill()
    assert first.process.returncode == -signal.SIGKILL
    at_kill = _statuses(requests)
    assert at_kill == {
        RequestStatus.ACTIVE: KILLED_DURING[0],
        RequestStatus.PROVISIONING: len(KILLED_DURING),
        RequestStatus.APPROVED: REQUESTS - KILLED_DURING[0] - len(KILLED_DURING),
    }, at_kill

    # As an orchestrator restarting the crashed pod: the new worker starts once the visibility timeout has passed.
    time.sleep(max(0.0, delivered_by + VISIBILITY_TIMEOUT_S + 0.5 - time.monotonic()))
    workers.start(AS_DEPLOYED)
    wait_for(
        lambda: _statuses(requests)[RequestStatus.ACTIVE] == REQUESTS,
        "every request to become active",
        workers,
        timeout=TASK_TIMEOUT_S * 3,
    )
    jobs_before_late_applies = [cluster.get("Job", f"gpr-{r.pk}", r.team.namespace) for r in in_flight]
    for delay in held:
        delay.release()  # the dead worker's applies land now, after the new worker's
        assert delay.done.wait(TASK_TIMEOUT_S) and delay.outcome == 200, "served late, onto the existing Job"

    problems = []
    applies: Counter[int] = Counter()
    for request in requests:
        namespace = request.team.namespace
        objects = owned_objects_of(cluster, request)
        if objects != [("Job", namespace, f"gpr-{request.pk}")]:
            problems.append(f"request {request.pk}: objects {objects}")
        transitions = transitions_of(request)
        if transitions != PROVISIONED_ONCE:
            problems.append(f"request {request.pk}: events {dict(transitions)}")
        if _audited_statuses(request) != AUDITED_ONCE:
            problems.append(f"request {request.pk}: audited status changes {dict(_audited_statuses(request))}")
        applies[patches_to(cluster, job_path_of(request))] += 1
    assert_team_objects(cluster, org.team.namespace)
    late_jobs = [cluster.get("Job", f"gpr-{r.pk}", r.team.namespace) for r in in_flight]
    figure = (
        f"{REQUESTS} approved requests, worker (prefork, 2 processes) SIGKILLed during the applies of requests "
        f"{' and '.join(str(index + 1) for index in KILLED_DURING)} "
        f"(at the kill: {dict(at_kill)}); after a new worker: {dict(_statuses(requests))}, "
        f"{len(problems)} requests with extra objects or events, Job applies per request {dict(applies)}, "
        f"{time.monotonic() - started:.1f} s"
    )
    print(f"\n{figure}")
    record_property("figure", figure)
    assert not problems, "\n".join(problems) + f"\n{workers.logs()}"
    for before, late in zip(jobs_before_late_applies, late_jobs, strict=True):
        assert before is not None and late is not None
        assert late["metadata"]["uid"] == before["metadata"]["uid"], "the same Job, not a second one"
        assert late["metadata"]["resourceVersion"] == before["metadata"]["resourceVersion"], "the late apply: a no-op"
    # One apply per Job, two for those in flight: their messages were delivered to both workers.
    assert applies == {1: REQUESTS - len(KILLED_DURING), 2: len(KILLED_DURING)}
