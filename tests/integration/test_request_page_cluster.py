"""An active request's page reads its pods and events from the cluster (the API-server emulator over real HTTP),
says how to reach the workload, and still renders when the cluster cannot be reached."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse

from allocations.clusters.gateways.kubernetes import KubernetesGateway
from allocations.models import ClusterBackend, GpuRequest, RequestStatus
from allocations.requests.services import gpu_request_approve, gpu_request_submit
from tests.factories import DemoOrg
from tests.integration.k8s_emulator import EmulatedCluster

pytestmark = [pytest.mark.integration, pytest.mark.django_db]

NAMESPACE = "team-vision"
DEVELOPMENT = {
    "workload_type": "development",
    "gpu_memory_gb": 20,
    "sla_tier": "tier3_development",
    "duration_hours": 8,
}


@pytest.fixture
def cluster() -> Iterator[EmulatedCluster]:
    with EmulatedCluster.running() as running:
        yield running


@pytest.fixture
def active(demo_org: DemoOrg, settings, tmp_path: Path, django_capture_on_commit_callbacks) -> GpuRequest:
    """A development request provisioned on the demo cluster's GitOps tree, so it is active with its manifests."""
    settings.PORTAL_GITOPS_ROOT = tmp_path
    request = gpu_request_submit(
        command=["python", "main.py"],
        acting_user=demo_org.member,
        team=demo_org.team,
        name="notebook",
        profile_data=DEVELOPMENT,
    )
    with django_capture_on_commit_callbacks(execute=True):
        gpu_request_approve(request=request, acting_user=demo_org.approver)
    request.refresh_from_db()
    assert request.status == RequestStatus.ACTIVE and request.manifests
    return request


def on_kubernetes(request: GpuRequest, endpoint: str) -> None:
    """The request's cluster is now reached through an API server at ``endpoint``."""
    cluster = request.cluster
    cluster.backend, cluster.api_endpoint = ClusterBackend.KUBERNETES, endpoint
    cluster.save(update_fields=["backend", "api_endpoint"])


def pod(name: str, request_id: int, phase: str, **status: Any) -> dict[str, Any]:
    labels = {"app.kubernetes.io/managed-by": "gpu-portal", "gpu-portal/request": str(request_id)}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": NAMESPACE, "labels": labels},
        "spec": {"containers": [{"name": "main", "image": "nvcr.io/nvidia/pytorch:24.05-py3"}]},
        "status": {"phase": phase, **status},
    }


def event(name: str, about: str, reason: str, message: str, when: str, kind: str = "Pod") -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"name": name, "namespace": NAMESPACE},
        "involvedObject": {"kind": kind, "name": about, "namespace": NAMESPACE},
        "reason": reason,
        "message": message,
        "type": "Warning" if reason.startswith("Failed") or reason == "BackOff" else "Normal",
        "lastTimestamp": when,
        "count": 1,
    }


def page(user, request: GpuRequest) -> str:
    client = Client()
    client.force_login(user)
    response = client.get(reverse("allocations:request-detail", args=[request.pk]))
    assert response.status_code == 200
    return response.content.decode()


def test_the_gateway_reads_the_newest_events_of_the_request_only(cluster: EmulatedCluster) -> None:
    cluster.put(event("a", "gpr-7-abc", "Scheduled", "Assigned to node-1", "2026-11-20T10:00:00Z"))
    cluster.put(event("b", "gpr-7-abc", "Pulled", "Image pulled", "2026-11-20T10:02:00Z"))
    cluster.put(event("c", "gpr-7", "ScalingReplicaSet", "Scaled up to 1", "2026-11-20T09:59:00Z", "Deployment"))
    cluster.put(event("d", "gpr-71-xyz", "Pulled", "another request's pod", "2026-11-20T10:05:00Z"))
    gateway = KubernetesGateway.connect(host=cluster.url)

    events = gateway.workload_events(namespace=NAMESPACE, request_id=7)

    assert [item.reason for item in events] == ["Pulled", "Scheduled", "ScalingReplicaSet"]
    assert events[0].object_name == "gpr-7-abc" and events[2].object_kind == "Deployment"
    assert len(gateway.workload_events(namespace=NAMESPACE, request_id=7, limit=2)) == 2


def test_an_active_request_shows_pods_events_address_and_commands(
    demo_org: DemoOrg, active: GpuRequest, cluster: EmulatedCluster
) -> None:
    on_kubernetes(active, cluster.url)
    ready = [{"type": "PodScheduled", "status": "True"}, {"type": "Ready", "status": "True"}]
    cluster.put(pod(f"gpr-{active.pk}-5d9c7-x2kq", active.pk, "Running", conditions=ready))
    cluster.put(pod("gpr-999-other", 999, "Running", conditions=ready))
    cluster.put(
        event("e1", f"gpr-{active.pk}-5d9c7-x2kq", "Pulled", "Successfully pulled image", "2026-11-20T10:00:00Z")
    )

    html = page(demo_org.member, active)

    # The page renders without calling the cluster; its script reads the pods and events from the workload endpoint.
    assert cluster.requests == []
    assert 'id="workload-reading"' in html and 'id="pods"' not in html and 'id="k8s-events"' not in html
    assert f'data-workload-url="/requests/{active.pk}/workload/"' in html
    assert f"kubectl -n {NAMESPACE} exec -it deploy/gpr-{active.pk} -c main -- bash" in html
    assert f"kubectl -n {NAMESPACE} port-forward deploy/gpr-{active.pk} 8888:8888" in html
    assert 'id="quick-extension-form"' in html and 'name="hours" value="24"' in html

    data = workload(demo_org.member, active)
    pods_html, events_html = data["pods_html"], data["events_html"]
    assert 'id="pods"' in pods_html and f"gpr-{active.pk}-5d9c7-x2kq" in pods_html and "gpr-999-other" not in pods_html
    assert "phase-running" in pods_html
    assert 'id="k8s-events"' in events_html and "Successfully pulled image" in events_html


def test_an_unreachable_cluster_still_renders_the_page(demo_org: DemoOrg, active: GpuRequest) -> None:
    with socket.socket() as probe:  # a port nothing listens on: connection refused at once
        probe.bind(("127.0.0.1", 0))
        closed = probe.getsockname()[1]
    on_kubernetes(active, f"http://127.0.0.1:{closed}")

    html = page(demo_org.member, active)

    assert 'id="workload-reading"' in html and "could not be read just now" not in html  # not asked by the page
    assert f"kubectl -n {NAMESPACE} exec -it deploy/gpr-{active.pk}" in html  # the commands still help
    assert 'id="cluster-unreachable"' in workload(demo_org.member, active)["pods_html"]  # the script's reading says so


def test_a_gitops_cluster_says_why_there_are_no_pods(demo_org: DemoOrg, active: GpuRequest) -> None:
    html = page(demo_org.member, active)

    assert "GitOps tree" in html and 'id="pods"' not in html and 'id="k8s-events"' not in html


def test_an_outsider_sees_none_of_it(demo_org: DemoOrg, active: GpuRequest) -> None:
    client = Client()
    client.force_login(demo_org.outsider)

    assert client.get(reverse("allocations:request-detail", args=[active.pk])).status_code == 404


def workload(user, request: GpuRequest) -> dict[str, Any]:
    """What the page's refresh reads: the workload endpoint's JSON."""
    client = Client()
    client.force_login(user)
    response = client.get(reverse("allocations:request-workload", args=[request.pk]))
    assert response.status_code == 200
    return response.json()


def test_the_refresh_reads_pods_and_events_again(
    demo_org: DemoOrg, active: GpuRequest, cluster: EmulatedCluster
) -> None:
    on_kubernetes(active, cluster.url)
    name = f"gpr-{active.pk}-5d9c7-x2kq"
    cluster.put(pod(name, active.pk, "Pending"))
    before = workload(demo_org.member, active)
    assert [(p["name"], p["phase"]) for p in before["pods"]] == [(name, "Pending")] and before["events"] == []
    assert 'id="no-events"' in before["events_html"]

    ready = [{"type": "PodScheduled", "status": "True"}, {"type": "Ready", "status": "True"}]
    cluster.put(pod(name, active.pk, "Running", conditions=ready))
    cluster.put(event("e1", name, "Started", "Started container main", "2026-11-20T10:00:00Z"))
    cluster.put(event("e2", "gpr-999-other", "Started", "another request's pod", "2026-11-20T10:01:00Z"))
    after = workload(demo_org.member, active)

    assert after["pods"] == [{"name": name, "phase": "Running", "ready": True, "reason": "", "message": ""}]
    assert [(e["object"], e["reason"]) for e in after["events"]] == [(f"Pod/{name}", "Started")]
    assert "phase-running" in after["pods_html"] and 'id="k8s-events"' in after["events_html"]
    assert "Started container main" in after["events_html"] and "another request" not in after["events_html"]


def test_the_refresh_of_an_unreachable_cluster_answers_its_message(demo_org: DemoOrg, active: GpuRequest) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        closed = probe.getsockname()[1]
    on_kubernetes(active, f"http://127.0.0.1:{closed}")

    data = workload(demo_org.member, active)

    assert data["observable"] and "could not be read just now" in data["error"] and data["pods"] == []
    assert 'id="cluster-unreachable"' in data["pods_html"] and "k8s-events" not in data["events_html"]


def test_the_refresh_of_a_gitops_request_says_why_there_are_no_pods(demo_org: DemoOrg, active: GpuRequest) -> None:
    data = workload(demo_org.member, active)

    assert not data["observable"] and "GitOps tree" in data["pods_html"] and data["pods"] == []


def test_an_outsider_cannot_read_the_workload(demo_org: DemoOrg, active: GpuRequest, cluster: EmulatedCluster) -> None:
    on_kubernetes(active, cluster.url)
    client = Client()
    client.force_login(demo_org.outsider)

    assert client.get(reverse("allocations:request-workload", args=[active.pk])).status_code == 404
    assert cluster.requests == []  # the cluster was not even asked
