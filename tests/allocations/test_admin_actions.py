"""Admin actions for platform admins: re-apply and release requests, sync inventory; all through the services."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.core.exceptions import PermissionDenied, ValidationError
from django.test import Client
from django.urls import reverse

from allocations.clusters.services import cluster_inventory_sync_queue
from allocations.lifecycle import InvalidTransition, gpu_request_transition
from allocations.models import ClusterBackend, GpuRequest, NodePool, Quota, RequestEvent, RequestStatus
from allocations.requests.services import gpu_request_approve, gpu_request_reapply, gpu_request_submit
from tests.factories import ClusterFactory, DemoOrg

pytestmark = pytest.mark.django_db

TRAINING = {"workload_type": "training", "gpu_memory_gb": 40}
REQUESTS_CHANGELIST = "admin:allocations_gpurequest_changelist"


@pytest.fixture(autouse=True)
def gitops_root(settings, tmp_path: Path) -> Path:
    settings.PORTAL_GITOPS_ROOT = tmp_path
    return tmp_path


@pytest.fixture
def admin_client_(demo_org: DemoOrg) -> Client:
    client = Client()
    client.force_login(demo_org.platform_admin)
    return client


def submit(org: DemoOrg, name: str = "train") -> GpuRequest:
    return gpu_request_submit(
        command=["python", "main.py"], acting_user=org.member, team=org.team, name=name, profile_data=TRAINING
    )


def provisioned(org: DemoOrg, capture, name: str = "train") -> GpuRequest:
    request = submit(org, name)
    with capture(execute=True):
        gpu_request_approve(request=request, acting_user=org.approver)
    request.refresh_from_db()
    assert request.status == RequestStatus.ACTIVE
    return request


def failed(org: DemoOrg, capture, name: str = "train") -> GpuRequest:
    request = provisioned(org, capture, name)
    gpu_request_transition(
        request=request, to_status=RequestStatus.FAILED, acting_user=None, updates={"status_detail": "node lost"}
    )
    return request


def run_action(client: Client, changelist: str, action: str, ids: list[int], capture) -> list[tuple[str, str]]:
    """POST an admin action, let its on-commit work run, and return the messages as (level tag, text)."""
    with capture(execute=True):
        response = client.post(reverse(changelist), {"action": action, "_selected_action": ids}, follow=True)
    assert response.status_code == 200
    return [(message.level_tag, str(message)) for message in response.context["messages"]]


# --- Re-apply -----------------------------------------------------------------------------------------------------


def test_reapply_hands_a_failed_request_back_to_provisioning(
    demo_org, admin_client_, django_capture_on_commit_callbacks
) -> None:
    request = failed(demo_org, django_capture_on_commit_callbacks)

    messages = run_action(
        admin_client_, REQUESTS_CHANGELIST, "reapply_to_cluster", [request.pk], django_capture_on_commit_callbacks
    )

    # The message is written before the queued provisioning runs (on commit); then the tree is written again.
    assert messages == [("success", f"#{request.pk} train: re-applied; now provisioning.")]
    request.refresh_from_db()
    assert request.status == RequestStatus.ACTIVE
    event = RequestEvent.objects.get(request=request, from_status="failed", to_status="provisioning")
    assert event.actor == demo_org.platform_admin and event.comment == "Re-applied from the admin"


def test_reapply_reports_each_request_on_its_own(demo_org, admin_client_, django_capture_on_commit_callbacks) -> None:
    active = provisioned(demo_org, django_capture_on_commit_callbacks, "running")
    pending = submit(demo_org, "waiting")

    messages = run_action(
        admin_client_,
        REQUESTS_CHANGELIST,
        "reapply_to_cluster",
        [active.pk, pending.pk],
        django_capture_on_commit_callbacks,
    )

    assert messages[0] == ("success", f"#{active.pk} running: re-applied; now provisioning.")
    assert GpuRequest.objects.get(pk=active.pk).status == RequestStatus.ACTIVE
    level, text = messages[1]
    assert level == "error" and text.startswith(f"#{pending.pk} waiting: not re-applied: Only a failed or active")
    assert GpuRequest.objects.get(pk=pending.pk).status == RequestStatus.PENDING_APPROVAL
    assert RequestEvent.objects.filter(request=active, from_status="active", to_status="provisioning").count() == 1


def test_reapply_rechecks_the_quota_of_a_failed_request(
    demo_org, admin_client_, django_capture_on_commit_callbacks
) -> None:
    request = failed(demo_org, django_capture_on_commit_callbacks)
    Quota.objects.filter(team=demo_org.team).update(limit=0)

    messages = run_action(
        admin_client_, REQUESTS_CHANGELIST, "reapply_to_cluster", [request.pk], django_capture_on_commit_callbacks
    )

    ((level, text),) = messages
    assert level == "error" and "Quota exceeded" in text
    assert GpuRequest.objects.get(pk=request.pk).status == RequestStatus.FAILED


def test_reapply_service_is_for_platform_approvers(demo_org, django_capture_on_commit_callbacks) -> None:
    request = failed(demo_org, django_capture_on_commit_callbacks)

    with pytest.raises(PermissionDenied):
        gpu_request_reapply(request=request, acting_user=demo_org.team_lead)
    with pytest.raises(InvalidTransition):
        gpu_request_reapply(request=submit(demo_org, "other"), acting_user=demo_org.approver)


def test_reapply_of_a_failed_request_over_quota_raises_a_field_error(
    demo_org, django_capture_on_commit_callbacks
) -> None:
    request = failed(demo_org, django_capture_on_commit_callbacks)
    Quota.objects.filter(team=demo_org.team).update(limit=0)

    with pytest.raises(ValidationError) as error:
        gpu_request_reapply(request=request, acting_user=demo_org.approver)

    assert "quota" in error.value.message_dict


def test_reapply_of_a_failed_request_rechecks_the_pools_capacity(demo_org, django_capture_on_commit_callbacks) -> None:
    request = failed(demo_org, django_capture_on_commit_callbacks)
    NodePool.objects.filter(pk=request.node_pool_id).update(node_count=0)  # the pool lost its nodes meanwhile

    with pytest.raises(ValidationError) as error:
        gpu_request_reapply(request=request, acting_user=demo_org.approver)

    assert "capacity" in error.value.message_dict
    assert GpuRequest.objects.get(pk=request.pk).status == RequestStatus.FAILED


# --- Release ------------------------------------------------------------------------------------------------------


def test_release_action_releases_through_the_service(
    demo_org, admin_client_, django_capture_on_commit_callbacks
) -> None:
    active = provisioned(demo_org, django_capture_on_commit_callbacks)
    rejected = submit(demo_org, "nope")
    gpu_request_transition(request=rejected, to_status=RequestStatus.REJECTED, acting_user=demo_org.approver)

    messages = run_action(
        admin_client_,
        REQUESTS_CHANGELIST,
        "release_requests",
        [active.pk, rejected.pk],
        django_capture_on_commit_callbacks,
    )

    active.refresh_from_db()
    assert active.status == RequestStatus.RELEASED
    assert active.observed_phase == "NotFound"  # the workload was deleted from the tree
    assert messages[0] == ("success", f"#{active.pk} train: released; now released.")
    assert messages[1][0] == "error" and "not released" in messages[1][1]
    assert RequestEvent.objects.get(request=active, to_status="released").comment == "Released from the admin"


def test_actions_are_listed_for_platform_admins(demo_org, admin_client_) -> None:
    submit(demo_org)

    html = admin_client_.get(reverse(REQUESTS_CHANGELIST)).content.decode()

    assert 'value="reapply_to_cluster"' in html and 'value="release_requests"' in html


# --- Sync inventory -----------------------------------------------------------------------------------------------


def test_sync_inventory_action_queues_once_and_names_what_it_skips(
    demo_org, admin_client_, django_capture_on_commit_callbacks
) -> None:
    prod = ClusterFactory(name="prod", backend=ClusterBackend.KUBERNETES, api_endpoint="https://k8s.example:6443")

    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        response = admin_client_.post(
            reverse("admin:allocations_cluster_changelist"),
            {"action": "sync_inventory", "_selected_action": [prod.pk, demo_org.cluster.pk]},
            follow=True,
        )

    assert len(callbacks) == 1
    messages = [(m.level_tag, str(m)) for m in response.context["messages"]]
    assert messages == [
        ("success", "Inventory sync queued for prod."),
        ("warning", "Not synced (GitOps tree or inactive: the portal cannot read their nodes): demo."),
    ]


def test_sync_inventory_service_is_for_platform_approvers(demo_org, django_capture_on_commit_callbacks) -> None:
    with pytest.raises(PermissionDenied):
        cluster_inventory_sync_queue(acting_user=demo_org.member)
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        cluster_inventory_sync_queue(acting_user=demo_org.approver)
    assert len(callbacks) == 1
