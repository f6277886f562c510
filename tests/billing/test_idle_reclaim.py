"""Idle reclaim end to end: the hourly pass over rollups warns, then suspends an idle notebook by scaling its
Deployment to zero on the Kubernetes API emulator (official client, real HTTP), keeps its other objects, stops its
billing at the suspension, tells the owner by email and the team's chat; resume and keep through the API."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import pytest
import time_machine
from django.core import mail

from allocations.clusters.rendering import gpu_request_render
from allocations.clusters.workloads import cluster_gateway
from allocations.models import ClusterBackend, GpuRequest, RequestEvent, RequestStatus, SlaTier
from allocations.requests.held_intervals import allocation_intervals
from billing.models import UtilizationRollup
from billing.reclaim.services import ReclaimRunResult, idle_reclaim_run
from tests.billing.chat_webhook import ChatWebhookServer, start_chat_webhook_server
from tests.factories import GpuRequestFactory, TeamBudgetFactory
from tests.integration.k8s_emulator import EmulatedCluster

pytestmark = pytest.mark.django_db

ACTIVATED = datetime(2026, 11, 10, 0, 0, tzinfo=UTC)
# Tier 3: an 8 h window, warned 2 h before.
WARN_AT = datetime(2026, 11, 10, 6, 10, tzinfo=UTC)
SUSPEND_AT = datetime(2026, 11, 10, 8, 10, tzinfo=UTC)


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


def running_request(org, k8s: EmulatedCluster, workload_type: str = "development") -> GpuRequest:
    """A running request whose objects are applied to the emulated cluster, as provisioning leaves them."""
    org.cluster.backend = ClusterBackend.KUBERNETES
    org.cluster.api_endpoint = k8s.url
    org.cluster.gitops_path = ""
    org.cluster.save()
    request = GpuRequestFactory(
        team=org.team,
        requester=org.member,
        workload_type=workload_type,
        sla_tier=SlaTier.objects.get(slug="tier3_development"),
        status=RequestStatus.ACTIVE,
        cluster=org.cluster,
        node_pool=org.pool,
    )
    GpuRequest.objects.filter(pk=request.pk).update(activated_at=ACTIVATED)
    request.refresh_from_db()
    objects = gpu_request_render(request=request)
    cluster_gateway(org.cluster).apply(objects)
    return request


def hours_of(request: GpuRequest, first: datetime, count: int, **overrides: object) -> None:
    for n in range(count):
        values = {
            "sample_count": 60,
            "avg_utilization_pct": 0.5,
            "peak_memory_used_mib": 300.0,
            "is_complete": True,
        }
        values.update(overrides)
        UtilizationRollup.objects.create(
            cluster=request.cluster,
            hour=first + timedelta(hours=n),
            gpu_uuid="GPU-1",
            namespace=request.team.namespace,
            pod=f"gpr-{request.pk}-abc",
            team=request.team,
            request=request,
            pulled_at=first + timedelta(hours=n + 1),
            **values,
        )


def run_at(moment: datetime) -> ReclaimRunResult:
    with time_machine.travel(moment, tick=False):
        return idle_reclaim_run()


def owned_objects(k8s: EmulatedCluster, request: GpuRequest) -> list[tuple[str, str]]:
    return sorted((o["kind"], o["metadata"]["name"]) for o in k8s.labelled("gpu-portal/request", str(request.pk)))


def deployment_of(k8s: EmulatedCluster, request: GpuRequest) -> dict:
    found = k8s.get("Deployment", f"gpr-{request.pk}", request.team.namespace)
    assert found is not None
    return found


def test_an_idle_notebook_is_warned_then_suspended_with_its_readings(demo_org, k8s, chat) -> None:
    request = running_request(demo_org, k8s)
    TeamBudgetFactory(team=demo_org.team, chat_webhook_url=chat.workflows_url())
    hours_of(request, ACTIVATED, 8)  # 00:00-07:00 idle (the 08:00 hour has not ended at 08:10)
    assert deployment_of(k8s, request)["spec"]["replicas"] == 1
    objects_before = owned_objects(k8s, request)

    warned = run_at(WARN_AT)  # 6 idle hours: warned, nothing scaled
    assert (warned.warned, warned.suspended) == ([request.pk], [])
    request.refresh_from_db()
    assert request.status == RequestStatus.ACTIVE and request.idle_warned_at is not None
    warning = RequestEvent.objects.get(request=request, details__idle_reclaim="warn")
    assert len(warning.details["readings"]) == 6
    assert deployment_of(k8s, request)["spec"]["replicas"] == 1
    assert len(mail.outbox) == 1 and "will be suspended" in mail.outbox[0].subject
    assert set(mail.outbox[0].to) == {demo_org.member.email, demo_org.team_lead.email}
    assert len(chat.posts) == 1

    assert run_at(WARN_AT + timedelta(minutes=30)).warned == []  # idempotent: no second warning
    assert len(mail.outbox) == 1

    done = run_at(SUSPEND_AT)
    assert done.suspended == [request.pk]
    request.refresh_from_db()
    assert request.status == RequestStatus.SUSPENDED and request.suspended_at == SUSPEND_AT
    deployment = deployment_of(k8s, request)
    assert deployment["spec"]["replicas"] == 0
    assert deployment["spec"]["template"]["spec"]["containers"]  # the pod template (and its volumes) kept
    assert owned_objects(k8s, request) == objects_before  # nothing deleted
    event = RequestEvent.objects.get(request=request, to_status=RequestStatus.SUSPENDED)
    assert event.actor_label == "system:idle-reclaim"
    assert [r["hour"] for r in event.details["readings"]] == [
        (ACTIVATED + timedelta(hours=n)).isoformat() for n in range(8)
    ]
    assert all(r["idle"] and r["max_utilization_pct"] == 0.5 for r in event.details["readings"])
    assert "suspended" in mail.outbox[-1].subject and len(chat.posts) == 2
    # Billing holds it up to the suspension, not after.
    [held] = allocation_intervals(start=ACTIVATED, end=SUSPEND_AT + timedelta(days=1))
    assert (held.start, held.end) == (ACTIVATED, SUSPEND_AT)

    assert run_at(SUSPEND_AT + timedelta(hours=1)).suspended == []  # a re-run changes nothing


def test_an_incomplete_hour_is_not_idle(demo_org, k8s) -> None:
    request = running_request(demo_org, k8s)
    hours_of(request, ACTIVATED, 3)
    hours_of(request, ACTIVATED + timedelta(hours=3), 1, is_complete=False, sample_count=41)
    hours_of(request, ACTIVATED + timedelta(hours=4), 4)
    GpuRequest.objects.filter(pk=request.pk).update(idle_warned_at=WARN_AT)

    result = run_at(SUSPEND_AT)

    assert (result.warned, result.suspended) == ([], [])
    request.refresh_from_db()
    assert request.status == RequestStatus.ACTIVE
    assert deployment_of(k8s, request)["spec"]["replicas"] == 1


def test_a_missing_hour_is_not_idle(demo_org, k8s) -> None:
    request = running_request(demo_org, k8s)
    hours_of(request, ACTIVATED, 3)
    hours_of(request, ACTIVATED + timedelta(hours=4), 4)  # 03:00 never pulled (Prometheus down)
    GpuRequest.objects.filter(pk=request.pk).update(idle_warned_at=WARN_AT)
    assert run_at(SUSPEND_AT).suspended == []


@pytest.mark.parametrize("workload_type", ["training", "batch_inference", "realtime_inference"])
def test_training_batch_and_inference_are_never_suspended(demo_org, k8s, workload_type) -> None:
    request = running_request(demo_org, k8s, workload_type=workload_type)
    hours_of(request, ACTIVATED, 8)
    GpuRequest.objects.filter(pk=request.pk).update(idle_warned_at=WARN_AT)

    result = run_at(SUSPEND_AT)

    assert (result.warned, result.suspended) == ([], [])
    request.refresh_from_db()
    assert request.status == RequestStatus.ACTIVE
    assert not RequestEvent.objects.filter(request=request, details__has_key="idle_reclaim").exists()


def test_the_off_switch(demo_org, k8s, settings) -> None:
    settings.IDLE_RECLAIM_ENABLED = False
    request = running_request(demo_org, k8s)
    hours_of(request, ACTIVATED, 8)
    GpuRequest.objects.filter(pk=request.pk).update(idle_warned_at=WARN_AT)
    result = run_at(SUSPEND_AT)
    assert not result.enabled and result.suspended == []


def test_a_tier_override_in_settings_applies(demo_org, k8s, settings) -> None:
    settings.IDLE_RECLAIM_THRESHOLDS = {"tier3_development": {"window_hours": 12, "warn_hours": 2}}
    request = running_request(demo_org, k8s)
    hours_of(request, ACTIVATED, 8)
    GpuRequest.objects.filter(pk=request.pk).update(idle_warned_at=WARN_AT)
    assert run_at(SUSPEND_AT).suspended == []  # 8 idle hours are under a 12 h window


def test_a_cluster_error_leaves_it_active_for_the_next_run(demo_org, k8s) -> None:
    request = running_request(demo_org, k8s)
    hours_of(request, ACTIVATED, 8)
    GpuRequest.objects.filter(pk=request.pk).update(idle_warned_at=WARN_AT)
    k8s.fail("PATCH", f"/apis/apps/v1/namespaces/{request.team.namespace}/deployments/gpr-{request.pk}", 403, "no")

    result = run_at(SUSPEND_AT)

    assert result.failed == [request.pk]
    request.refresh_from_db()
    assert request.status == RequestStatus.ACTIVE  # never unbilled while its pods may still run
