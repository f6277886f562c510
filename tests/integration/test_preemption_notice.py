"""Preemption notice: on a Kueue cluster (the API-server emulator, official client over real HTTP), the reconcile
reads a request's Workload; a tier-3 workload that Kueue preempts is written as an event with Kueue's reason, its
owner and team leads get an email and the team's chat a post, once; the request page and ``waiting`` show it."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from django.core import mail
from django.test import Client

from allocations.clusters.provisioning import gpu_request_provision
from allocations.clusters.rendering import gpu_request_render
from allocations.clusters.workloads import cluster_gateway
from allocations.models import ClusterBackend, ClusterScheduler, GpuRequest, RequestEvent, RequestStatus, SlaTier
from allocations.requests.waiting import request_waiting
from tests.billing.chat_webhook import ChatWebhookServer, start_chat_webhook_server
from tests.factories import GpuRequestFactory, TeamBudgetFactory
from tests.integration.k8s_emulator import EmulatedCluster

pytestmark = [pytest.mark.django_db, pytest.mark.integration]

ADMITTED = [
    {"type": kind, "status": "True", "reason": kind, "lastTransitionTime": "2026-11-10T08:00:00Z"}
    for kind in ("QuotaReserved", "Admitted")
]
PREEMPTED = [
    {"type": "QuotaReserved", "status": "False", "reason": "Pending", "lastTransitionTime": "2026-11-10T09:30:00Z"},
    {"type": "Admitted", "status": "False", "reason": "NoReservation", "lastTransitionTime": "2026-11-10T09:30:00Z"},
    {
        "type": "Evicted",
        "status": "True",
        "reason": "Preempted",
        "message": "Preempted to accommodate a workload (UID: 5c1b) due to reclamation within the cohort",
        "lastTransitionTime": "2026-11-10T09:30:00Z",
    },
    {
        "type": "Preempted",
        "status": "True",
        "reason": "InCohortReclamation",
        "message": "Preempted to accommodate a workload (UID: 5c1b) due to reclamation within the cohort",
        "lastTransitionTime": "2026-11-10T09:30:00Z",
    },
]


@pytest.fixture
def k8s() -> Iterator[EmulatedCluster]:
    with EmulatedCluster.running() as running:
        yield running


@pytest.fixture
def chat(settings) -> Iterator[ChatWebhookServer]:
    settings.CHAT_WEBHOOK_ALLOWED_HOSTS = ["127.0.0.1"]  # the webhook is on loopback, which the portal refuses
    state, server = start_chat_webhook_server()
    yield state
    server.shutdown()
    server.server_close()


def workload(request: GpuRequest, conditions: list[dict[str, str]]) -> dict[str, Any]:
    """Kueue's Workload for the request's Job, as Kueue names and owns it."""
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "Workload",
        "metadata": {
            "name": f"job-gpr-{request.pk}-3f1a2",
            "namespace": request.team.namespace,
            "ownerReferences": [{"apiVersion": "batch/v1", "kind": "Job", "name": f"gpr-{request.pk}", "uid": "0d1e"}],
        },
        "spec": {"queueName": "default", "podSets": []},
        "status": {"conditions": conditions},
    }


def running_on_kueue(org, k8s: EmulatedCluster, tier: str) -> GpuRequest:
    org.cluster.backend, org.cluster.api_endpoint, org.cluster.gitops_path = ClusterBackend.KUBERNETES, k8s.url, ""
    org.cluster.scheduler = ClusterScheduler.KUEUE
    org.cluster.save()
    request = GpuRequestFactory(
        team=org.team,
        requester=org.member,
        workload_type="training",
        sla_tier=SlaTier.objects.get(slug=tier),
        status=RequestStatus.ACTIVE,
        cluster=org.cluster,
        node_pool=org.pool,
    )
    cluster_gateway(org.cluster).apply(gpu_request_render(request=request))
    return request


def test_a_preempted_tier_3_job_tells_its_owner_once_and_its_page_shows_it(
    demo_org, k8s, chat, django_capture_on_commit_callbacks
) -> None:
    request = running_on_kueue(demo_org, k8s, "tier3_development")
    TeamBudgetFactory(team=demo_org.team, chat_webhook_url=chat.workflows_url())
    k8s.put(workload(request, ADMITTED))

    with django_capture_on_commit_callbacks(execute=True):
        gpu_request_provision(request_id=request.pk)
    request.refresh_from_db()
    assert [c["type"] for c in request.queue_conditions] == ["QuotaReserved", "Admitted"]
    assert not RequestEvent.objects.filter(request=request, details__notice="preempted").exists()
    assert mail.outbox == []

    k8s.edit("Workload", f"job-gpr-{request.pk}-3f1a2", {"status": {"conditions": PREEMPTED}}, request.team.namespace)
    with django_capture_on_commit_callbacks(execute=True):
        gpu_request_provision(request_id=request.pk)
        gpu_request_provision(request_id=request.pk)  # the next reconcile: the same preemption, no second notice

    (event,) = RequestEvent.objects.filter(request=request, details__notice="preempted")
    assert event.actor_label == "system:kueue"
    assert event.details["reason"] == "InCohortReclamation"
    assert "reclaimed by the team that lent the quota" in event.comment
    assert len(mail.outbox) == 1 and "was preempted" in mail.outbox[0].subject
    assert set(mail.outbox[0].to) == {demo_org.member.email, demo_org.team_lead.email}
    assert "reclaimed by the team that lent the quota" in mail.outbox[0].body
    assert len(chat.posts) == 1
    request.refresh_from_db()
    waiting = request_waiting(request)
    assert waiting is None or waiting.stage == "kueue"  # active: not waiting; its conditions are kept

    client = Client()
    client.force_login(demo_org.member)
    page = client.get(f"/requests/{request.pk}/").content.decode()
    assert 'id="preemption-notice"' in page and "reclaimed by the team that lent the quota" in page


def test_a_workload_that_is_not_tier_3_gets_no_preemption_notice(demo_org, k8s) -> None:
    request = running_on_kueue(demo_org, k8s, "tier2_batch")
    k8s.put(workload(request, PREEMPTED))

    gpu_request_provision(request_id=request.pk)

    request.refresh_from_db()
    assert [c["type"] for c in request.queue_conditions][-1] == "Preempted"  # read and kept all the same
    assert not RequestEvent.objects.filter(request=request, details__notice="preempted").exists()
    assert mail.outbox == []


def test_a_provisioning_request_kueue_holds_back_waits_in_kueue(demo_org, k8s) -> None:
    request = running_on_kueue(demo_org, k8s, "tier2_batch")
    GpuRequest.objects.filter(pk=request.pk).update(status=RequestStatus.PROVISIONING)
    message = "couldn't assign flavors to pod set main: insufficient unused quota for nvidia.com/gpu in flavor h100"
    k8s.put(workload(request, [{"type": "QuotaReserved", "status": "False", "reason": "Pending", "message": message}]))

    gpu_request_provision(request_id=request.pk)

    request = GpuRequest.objects.select_related("node_pool__cluster").get(pk=request.pk)
    waiting = request_waiting(request)
    assert waiting is not None and waiting.stage == "kueue" and message in waiting.reasons[0]
