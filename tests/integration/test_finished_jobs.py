"""A Job that completed or failed ends its request, read by reconcile through the gateway (the API-server emulator over
real HTTP): the request is released with the reason, its quota frees at once and billing stops at the Job's end. A pod
that failed while its Job may still retry changes nothing."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest
from django.utils import timezone

from allocations.clusters.provisioning import JOB_FINISHED, RUNNING_PHASES, gpu_request_provision
from allocations.models import ClusterBackend, GpuRequest, Quota, RequestStatus
from allocations.requests.held_intervals import allocation_intervals
from allocations.requests.services import gpu_request_approve, gpu_request_submit
from allocations.teams.quota_usage import with_units_held
from tests.factories import DemoOrg
from tests.integration.k8s_emulator import EmulatedCluster

pytestmark = [pytest.mark.integration, pytest.mark.django_db]

NAMESPACE = "team-vision"
TRAINING = {"workload_type": "training", "gpu_memory_gb": 40, "gpu_count": 8, "sla_tier": "tier2_batch"}


@pytest.fixture
def emulated() -> Iterator[EmulatedCluster]:
    with EmulatedCluster.running() as running:
        yield running


def pod(request_id: int, phase: str, **status: Any) -> dict[str, Any]:
    labels = {"app.kubernetes.io/managed-by": "gpu-portal", "gpu-portal/request": str(request_id)}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": f"gpr-{request_id}-0-abcde", "namespace": NAMESPACE, "labels": labels},
        "spec": {"containers": [{"name": "main", "image": "nvcr.io/nvidia/pytorch:24.05-py3"}]},
        "status": {"phase": phase, **status},
    }


def stamp(moment) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


@pytest.fixture
def running(demo_org: DemoOrg, emulated: EmulatedCluster, django_capture_on_commit_callbacks) -> GpuRequest:
    """A training Job using the team's whole quota (8 GPUs), active on the emulated cluster for two hours."""
    cluster = demo_org.cluster
    cluster.backend, cluster.api_endpoint = ClusterBackend.KUBERNETES, emulated.url
    cluster.save(update_fields=["backend", "api_endpoint"])
    request = gpu_request_submit(
        command=["python", "main.py"],
        acting_user=demo_org.member,
        team=demo_org.team,
        name="train",
        profile_data=TRAINING,
    )
    with django_capture_on_commit_callbacks(execute=True):
        gpu_request_approve(request=request, acting_user=demo_org.approver)
    assert emulated.get("Job", f"gpr-{request.pk}", NAMESPACE) is not None
    emulated.put(pod(request.pk, "Running"))
    assert gpu_request_provision(request_id=request.pk).action == "activated"
    GpuRequest.objects.filter(pk=request.pk).update(activated_at=timezone.now() - timedelta(hours=2))
    request.refresh_from_db()
    assert request.status == RequestStatus.ACTIVE
    return request


def units_held(org: DemoOrg) -> int:
    return with_units_held(Quota.objects.filter(team=org.team)).get().units_held


def test_a_succeeded_phase_is_not_a_running_one() -> None:
    assert "Succeeded" not in RUNNING_PHASES


def test_a_completed_job_releases_its_request_frees_the_quota_and_stops_billing(
    demo_org: DemoOrg, emulated: EmulatedCluster, running: GpuRequest
) -> None:
    assert units_held(demo_org) == 8
    finished = (timezone.now() - timedelta(minutes=30)).replace(microsecond=0)
    emulated.put(pod(running.pk, "Succeeded"))
    condition = {"type": "Complete", "status": "True", "lastTransitionTime": stamp(finished)}
    emulated.edit(
        "Job",
        f"gpr-{running.pk}",
        {"status": {"conditions": [condition], "completionTime": stamp(finished), "succeeded": 1}},
        NAMESPACE,
    )

    outcome = gpu_request_provision(request_id=running.pk)

    running.refresh_from_db()
    assert outcome.action == "completed"
    assert running.status == RequestStatus.RELEASED
    assert running.ended_at == finished
    assert running.status_detail.startswith("The Job completed at ")
    event = running.events.order_by("-at", "-pk").first()
    assert (event.to_status, event.actor_label) == (RequestStatus.RELEASED, JOB_FINISHED)
    assert units_held(demo_org) == 0
    (interval,) = allocation_intervals(start=finished - timedelta(days=1), end=timezone.now() + timedelta(hours=1))
    assert interval.end == finished
    # The team may use its whole quota again at once.
    again = gpu_request_submit(
        command=["python", "main.py"],
        acting_user=demo_org.member,
        team=demo_org.team,
        name="next",
        profile_data=TRAINING,
    )
    assert again.status == RequestStatus.PENDING_APPROVAL


def test_a_failed_job_releases_its_request_with_the_reason(
    demo_org: DemoOrg, emulated: EmulatedCluster, running: GpuRequest
) -> None:
    # A failed pod while the Job may still retry ends nothing.
    emulated.put(pod(running.pk, "Failed", reason="Error", message="exit code 1"))
    gpu_request_provision(request_id=running.pk)
    running.refresh_from_db()
    assert running.status == RequestStatus.ACTIVE
    assert units_held(demo_org) == 8

    failed = (timezone.now() - timedelta(minutes=5)).replace(microsecond=0)
    condition = {
        "type": "Failed",
        "status": "True",
        "reason": "BackoffLimitExceeded",
        "message": "Job has reached the specified backoff limit",
        "lastTransitionTime": stamp(failed),
    }
    emulated.edit("Job", f"gpr-{running.pk}", {"status": {"conditions": [condition], "failed": 4}}, NAMESPACE)

    assert gpu_request_provision(request_id=running.pk).action == "job-failed"

    running.refresh_from_db()
    assert running.status == RequestStatus.RELEASED
    assert running.ended_at == failed
    assert "The Job failed at" in running.status_detail
    assert "backoff limit" in running.status_detail
    assert units_held(demo_org) == 0


def test_a_completed_jobset_releases_its_multi_pod_training_request(
    demo_org: DemoOrg, emulated: EmulatedCluster, django_capture_on_commit_callbacks
) -> None:
    cluster = demo_org.cluster
    cluster.backend, cluster.api_endpoint = ClusterBackend.KUBERNETES, emulated.url
    cluster.save(update_fields=["backend", "api_endpoint"])
    gang = {**TRAINING, "gpu_count": 4, "replicas": 2}
    request = gpu_request_submit(
        command=["python", "main.py"], acting_user=demo_org.member, team=demo_org.team, name="gang", profile_data=gang
    )
    with django_capture_on_commit_callbacks(execute=True):
        gpu_request_approve(request=request, acting_user=demo_org.approver)
    name = f"gpr-{request.pk}"
    # Applied through API discovery of the JobSet CRD, beside the headless Service; no bare Job.
    jobset = emulated.get("JobSet", name, NAMESPACE)
    assert jobset is not None and jobset["spec"]["failurePolicy"]["maxRestarts"] >= 1
    assert emulated.get("Service", name, NAMESPACE) is not None
    assert emulated.get("Job", name, NAMESPACE) is None
    # Before any pod exists the JobSet is what the request page reads.
    outcome = gpu_request_provision(request_id=request.pk)
    request.refresh_from_db()
    assert "JobSet has created no pods yet" in request.status_detail, (outcome, request.status_detail)
    emulated.put(pod(request.pk, "Running"))
    assert gpu_request_provision(request_id=request.pk).action == "activated"
    GpuRequest.objects.filter(pk=request.pk).update(activated_at=timezone.now() - timedelta(hours=2))
    assert units_held(demo_org) == 8

    finished = (timezone.now() - timedelta(minutes=10)).replace(microsecond=0)
    emulated.put(pod(request.pk, "Succeeded"))
    condition = {"type": "Completed", "status": "True", "lastTransitionTime": stamp(finished)}
    emulated.edit("JobSet", name, {"status": {"conditions": [condition]}}, NAMESPACE)

    assert gpu_request_provision(request_id=request.pk).action == "completed"
    request.refresh_from_db()
    assert request.status == RequestStatus.RELEASED
    assert request.ended_at == finished
    assert units_held(demo_org) == 0
