"""Provisioning in the browser: a request's manifests, live status and fixes, re-apply, and the clusters pages."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from allocations.lifecycle import gpu_request_transition
from allocations.models import ClusterBackend, GpuRequest, RequestEvent, RequestStatus, SharingMode
from allocations.requests.services import gpu_request_approve, gpu_request_submit
from gpucore.manifests import to_yaml
from tests.factories import ROLES, ClusterFactory, DemoOrg, GpuModel, NodePoolFactory, UserFactory

pytestmark = pytest.mark.django_db

TRAINING = {"workload_type": "training", "gpu_memory_gb": 40, "sla_tier": "tier2_batch"}
SEES_REQUEST = {"platform_admin": 200, "approver": 200, "team_lead": 200, "member": 200, "outsider": 404}
PLATFORM = {"platform_admin": 200, "approver": 200, "team_lead": 403, "member": 403, "outsider": 403}
PENDING = "Pending: 0/2 nodes are available: 2 Insufficient nvidia.com/gpu. preemption: not eligible."


@pytest.fixture(autouse=True)
def gitops_root(settings, tmp_path: Path) -> Path:
    settings.PORTAL_GITOPS_ROOT = tmp_path
    return tmp_path


def client_for(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def submit(org: DemoOrg) -> GpuRequest:
    return gpu_request_submit(
        command=["python", "main.py"], acting_user=org.member, team=org.team, name="train", profile_data=TRAINING
    )


@pytest.fixture
def active(demo_org: DemoOrg, django_capture_on_commit_callbacks) -> GpuRequest:
    """A request approved and provisioned on the demo cluster (a GitOps tree): active, with its manifests."""
    request = submit(demo_org)
    with django_capture_on_commit_callbacks(execute=True):
        gpu_request_approve(request=request, acting_user=demo_org.approver)
    request.refresh_from_db()
    assert request.status == RequestStatus.ACTIVE and request.manifests
    return request


# --- The detail page: manifests, live status, fixes ---------------------------------------------------------------


def test_a_pending_request_says_when_its_manifests_come(demo_org: DemoOrg) -> None:
    request = submit(demo_org)

    html = client_for(demo_org.member).get(reverse("allocations:request-detail", args=[request.pk])).content.decode()

    assert 'id="live-status"' not in html  # nothing on a cluster yet
    assert "rendered once the request is approved" in html
    assert 'id="manifest-tools" hidden' in html


def test_an_active_request_shows_its_yaml_with_copy_and_download(demo_org: DemoOrg, active: GpuRequest) -> None:
    response = client_for(demo_org.member).get(reverse("allocations:request-detail", args=[active.pk]))
    html = response.content.decode()

    assert response.context["manifests_yaml"].startswith("---\n")
    assert "kind: Job" in html and f"name: gpr-{active.pk}" in html
    assert 'id="copy-manifests" data-copy-target="manifests-yaml"' in html
    assert f'href="/requests/{active.pk}/manifests.yaml" download="gpr-{active.pk}.yaml"' in html
    assert "js/copy.js" in html and "js/request_detail.js" in html
    assert f'data-status-url="/requests/{active.pk}/status/"' in html
    assert 'data-polling="false"' in html  # active and observed: nothing to wait for
    assert "Unobservable" in html and "GitOps tree" in html


def test_the_page_shows_the_yaml_of_the_objects_rendered_last(demo_org: DemoOrg, active: GpuRequest) -> None:
    """The page keeps the YAML of objects it has dumped before: each re-render shows the new text, never the old."""
    client = client_for(demo_org.member)
    url = reverse("allocations:request-detail", args=[active.pk])
    first = client.get(url).context["manifests_yaml"]
    assert first == to_yaml(active.manifests)

    for data in ({"a": "1"}, {"a": "2\n3\n"}):
        extra = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": f"gpr-{active.pk}-x"}, "data": data}
        GpuRequest.objects.filter(pk=active.pk).update(
            manifests=[*active.manifests, extra], manifests_rendered_at=timezone.now()
        )
        shown = client.get(url).context["manifests_yaml"]
        assert shown == to_yaml(GpuRequest.objects.get(pk=active.pk).manifests) and shown != first
        assert ("data:\n  a: '1'\n" if data["a"] == "1" else "data:\n  a: |\n    2\n    3\n") in shown
        first = shown
    status = client.get(reverse("allocations:request-status", args=[active.pk])).json()
    assert status["manifests_yaml"] == shown


def test_a_pending_pod_shows_the_reason_and_the_fixes(demo_org: DemoOrg, active: GpuRequest) -> None:
    GpuRequest.objects.filter(pk=active.pk).update(
        observed_phase="Pending", observed_at=timezone.now(), status_detail=PENDING
    )

    html = client_for(demo_org.member).get(reverse("allocations:request-detail", args=[active.pk])).content.decode()

    assert PENDING in html
    assert 'data-hint="pool-full"' in html and "The pool is full: no node has free nvidia.com/gpu" in html
    assert "Release one of your team" in html
    assert 'data-polling="true"' in html  # the pod waits: the page keeps asking


@pytest.mark.parametrize(("role", "expected"), SEES_REQUEST.items())
def test_manifests_download_per_role(demo_org: DemoOrg, active: GpuRequest, role: str, expected: int) -> None:
    response = client_for(demo_org.user(role)).get(reverse("allocations:request-manifests", args=[active.pk]))

    assert response.status_code == expected
    if expected == 200:
        assert response["Content-Type"].startswith("application/yaml")
        assert response["Content-Disposition"] == f'attachment; filename="gpr-{active.pk}.yaml"'
        assert list(yaml.safe_load_all(response.content)) == active.manifests


def test_manifests_download_before_rendering_is_404(demo_org: DemoOrg) -> None:
    request = submit(demo_org)

    response = client_for(demo_org.member).get(reverse("allocations:request-manifests", args=[request.pk]))

    assert response.status_code == 404


@pytest.mark.parametrize(("role", "expected"), SEES_REQUEST.items())
def test_status_json_per_role(demo_org: DemoOrg, active: GpuRequest, role: str, expected: int) -> None:
    response = client_for(demo_org.user(role)).get(reverse("allocations:request-status", args=[active.pk]))

    assert response.status_code == expected
    if expected == 200:
        data = response.json()
        assert data["status"] == "active" and data["observed_phase"] == "Unobservable"
        assert data["polling"] is False and data["hints"] == []
        assert data["manifest_count"] == len(active.manifests) and "kind: Job" in data["manifests_yaml"]
        assert 'class="phase phase-unobservable"' in data["html"]


def test_status_json_of_a_waiting_pod_carries_the_hints(demo_org: DemoOrg, active: GpuRequest) -> None:
    message = "0/3 nodes are available: 3 node(s) had untolerated taint {nvidia.com/gpu: present}."
    GpuRequest.objects.filter(pk=active.pk).update(observed_phase="Pending", status_detail=message)

    data = client_for(demo_org.member).get(reverse("allocations:request-status", args=[active.pk])).json()

    assert data["polling"] is True
    assert [hint["code"] for hint in data["hints"]] == ["untolerated-taint"]
    assert 'data-hint="untolerated-taint"' in data["html"]


def test_status_json_polls_while_provisioning(demo_org: DemoOrg) -> None:
    request = submit(demo_org)
    gpu_request_approve(request=request, acting_user=demo_org.approver)  # provisioning queued on commit, never run

    data = client_for(demo_org.member).get(reverse("allocations:request-status", args=[request.pk])).json()

    assert data["status"] == "approved" and data["polling"] is True
    assert data["manifests_yaml"] == "" and data["observed_at"] is None


@pytest.mark.parametrize("name", ["allocations:request-status", "allocations:request-manifests"])
def test_request_endpoints_need_sign_in(client: Client, active: GpuRequest, name: str) -> None:
    response = client.get(reverse(name, args=[active.pk]))

    assert response.status_code == 302 and response["Location"].startswith(reverse("login"))


# --- Re-apply from the detail page -------------------------------------------------------------------------------


def test_an_approver_re_applies_a_failed_request(
    demo_org: DemoOrg, active: GpuRequest, django_capture_on_commit_callbacks
) -> None:
    gpu_request_transition(request=active, to_status=RequestStatus.FAILED, acting_user=None, comment="boom")
    client = client_for(demo_org.approver)
    assert (
        "Re-apply to the cluster"
        in client.get(reverse("allocations:request-detail", args=[active.pk])).content.decode()
    )

    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(reverse("allocations:request-reapply", args=[active.pk]), {"comment": "pool fixed"})

    assert response.status_code == 302
    active.refresh_from_db()
    assert active.status == RequestStatus.ACTIVE  # provisioning ran again and the tree was written
    assert RequestEvent.objects.filter(
        request=active, from_status="failed", to_status="provisioning"
    ).get().comment == ("pool fixed")


@pytest.mark.parametrize("role", ["team_lead", "member", "outsider"])
def test_only_platform_admins_re_apply(demo_org: DemoOrg, active: GpuRequest, role: str) -> None:
    client = client_for(demo_org.user(role))
    if role != "outsider":
        page = client.get(reverse("allocations:request-detail", args=[active.pk])).content.decode()
        assert "Re-apply to the cluster" not in page

    response = client.post(reverse("allocations:request-reapply", args=[active.pk]))

    assert response.status_code == 403
    assert GpuRequest.objects.get(pk=active.pk).status == RequestStatus.ACTIVE


def test_re_applying_a_pending_request_says_why_not(demo_org: DemoOrg) -> None:
    request = submit(demo_org)

    response = client_for(demo_org.approver).post(
        reverse("allocations:request-reapply", args=[request.pk]), follow=True
    )

    assert "Only a failed or active request can be re-applied" in response.content.decode()
    assert GpuRequest.objects.get(pk=request.pk).status == RequestStatus.PENDING_APPROVAL


# --- Clusters pages ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("role", ROLES)
def test_cluster_pages_per_role(demo_org: DemoOrg, role: str) -> None:
    client = client_for(demo_org.user(role))

    assert client.get(reverse("allocations:cluster-list")).status_code == PLATFORM[role]
    assert client.get(reverse("allocations:cluster-detail", args=["demo"])).status_code == PLATFORM[role]
    home = client.get(reverse("home")).content.decode()
    assert ('href="/clusters/"' in home) is (PLATFORM[role] == 200)


def test_cluster_pages_need_sign_in(client: Client, demo_org: DemoOrg) -> None:
    response = client.get(reverse("allocations:cluster-list"))

    assert response.status_code == 302 and response["Location"].startswith(reverse("login"))


def test_an_unknown_cluster_is_404(demo_org: DemoOrg) -> None:
    assert client_for(demo_org.approver).get(reverse("allocations:cluster-detail", args=["nope"])).status_code == 404


def test_no_clusters_is_an_empty_state(db) -> None:
    admin = UserFactory(username="root", is_staff=True, is_superuser=True)

    html = client_for(admin).get(reverse("allocations:cluster-list")).content.decode()

    assert "No clusters yet" in html and "/admin/allocations/cluster/add/" in html


def test_a_cluster_without_pools_is_an_empty_state(demo_org: DemoOrg) -> None:
    ClusterFactory(name="empty")

    response = client_for(demo_org.approver).get(reverse("allocations:cluster-detail", args=["empty"]))

    assert "No node pools" in response.content.decode()
    assert response.context["configs"] == []


def test_cluster_list_sums_pools_and_allocations(demo_org: DemoOrg, active: GpuRequest) -> None:
    (row,) = client_for(demo_org.approver).get(reverse("allocations:cluster-list")).context["rows"]

    assert row["cluster"] == demo_org.cluster
    assert (row["pool_count"], row["gpu_total"], row["allocated"]) == (1, 16, 1)
    assert row["last_synced"] is None and row["never_synced"] == 1 and row["drifted_pools"] == 0


def test_cluster_detail_shows_capacity_allocated_and_free(demo_org: DemoOrg, active: GpuRequest) -> None:
    response = client_for(demo_org.approver).get(reverse("allocations:cluster-detail", args=["demo"]))

    (pool,) = response.context["pool_rows"]
    assert pool["synced"] is False and pool["drift"] is False
    assert pool["rows"] == [
        {
            "resource": "nvidia.com/gpu",
            "configured": 16,
            "observed": None,
            "allocated": 1,
            "reserved": 0,
            "free": 15,
            "over": False,
            "drift": False,
        }
    ]
    html = response.content.decode()
    assert "not observable" in html  # the demo cluster is a GitOps tree
    assert 'id="sync-inventory"' not in html


def test_cluster_detail_shows_drift_from_inventory_and_from_requests(demo_org: DemoOrg, active: GpuRequest) -> None:
    cluster = demo_org.cluster
    cluster.backend, cluster.api_endpoint = ClusterBackend.KUBERNETES, "https://k8s.example.com:6443"
    cluster.save()
    demo_org.pool.observed_allocatable = {"nvidia.com/gpu": 8, "nodes": 1}
    demo_org.pool.observed_at = timezone.now()
    demo_org.pool.save()
    GpuRequest.objects.filter(pk=active.pk).update(observed_phase="NotFound", status_detail="No workload gpr-x.")

    response = client_for(demo_org.approver).get(reverse("allocations:cluster-detail", args=["demo"]))

    (pool,) = response.context["pool_rows"]
    assert pool["drift"] and pool["node_drift"] and pool["observed_nodes"] == 1
    assert pool["rows"][0]["observed"] == 8 and pool["rows"][0]["drift"]
    assert response.context["drifted_requests"] == [active]
    html = response.content.decode()
    assert "configured 16, cluster advertises 8" in html
    assert f"#{active.pk} {active.name}" in html
    assert 'id="sync-inventory"' in html


def test_cluster_detail_renders_the_gpu_operator_configs(demo_org: DemoOrg) -> None:
    NodePoolFactory(
        cluster=demo_org.cluster,
        name="t4-shared",
        gpu_model=GpuModel.objects.get(name="T4"),
        sharing_mode=SharingMode.TIME_SLICING,
        time_slice_replicas=4,
    )
    NodePoolFactory(
        cluster=demo_org.cluster,
        name="a100-mig",
        gpu_model=GpuModel.objects.get(name="A100-40GB"),
        sharing_mode=SharingMode.MIG,
        mig_devices={"3g.20gb": 2},
    )

    response = client_for(demo_org.approver).get(reverse("allocations:cluster-detail", args=["demo"]))

    time_slicing, mig = response.context["configs"]
    assert not time_slicing["error"] and not mig["error"]
    device_plugin = yaml.safe_load(time_slicing["yaml"])
    assert device_plugin["kind"] == "ConfigMap" and device_plugin["metadata"]["namespace"] == "gpu-operator"
    assert yaml.safe_load(device_plugin["data"]["t4-shared"])["sharing"]["timeSlicing"]["resources"][0]["replicas"] == 4
    parted = yaml.safe_load(yaml.safe_load(mig["yaml"])["data"]["config.yaml"])
    assert parted["mig-configs"]["gpu-portal-a100-mig"][0]["mig-devices"] == {"3g.20gb": 2}
    capacity = {item["pool"].name: item["rows"] for item in response.context["pool_rows"]}
    assert capacity["a100-mig"][0]["resource"] == "nvidia.com/mig-3g.20gb"
    assert capacity["a100-mig"][0]["configured"] == 2 * 16
    assert capacity["t4-shared"][0]["configured"] == 4 * 16
    html = response.content.decode()
    assert 'data-copy-target="config-yaml-1"' in html and "gpu-portal-device-plugin-config" in html


# --- Sync inventory now -------------------------------------------------------------------------------------------


def test_sync_now_queues_the_inventory_task(demo_org: DemoOrg, django_capture_on_commit_callbacks) -> None:
    ClusterFactory(name="prod", backend=ClusterBackend.KUBERNETES, api_endpoint="https://k8s.example.com:6443")

    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        response = client_for(demo_org.approver).post(
            reverse("allocations:cluster-sync", args=["prod"]), {"next": "/clusters/"}, follow=True
        )

    assert len(callbacks) == 1  # sync_inventory.delay, once the transaction commits
    assert response.redirect_chain[-1][0] == "/clusters/"
    assert "Inventory sync queued" in response.content.decode()


def test_sync_now_explains_a_gitops_cluster(demo_org: DemoOrg, django_capture_on_commit_callbacks) -> None:
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        response = client_for(demo_org.approver).post(reverse("allocations:cluster-sync", args=["demo"]), follow=True)

    assert callbacks == []
    assert "is a GitOps tree" in response.content.decode()


@pytest.mark.parametrize("role", ["team_lead", "member", "outsider"])
def test_sync_now_is_for_platform_admins(demo_org: DemoOrg, role: str) -> None:
    response = client_for(demo_org.user(role)).post(reverse("allocations:cluster-sync", args=["demo"]))

    assert response.status_code == 403


def test_sync_now_is_a_post(demo_org: DemoOrg) -> None:
    assert client_for(demo_org.approver).get(reverse("allocations:cluster-sync", args=["demo"])).status_code == 405
