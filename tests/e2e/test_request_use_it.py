"""An active request says how to use it, in Chromium: its pods and events read from the cluster (the API-server
emulator over real HTTP), the kubectl commands with copy buttons, and the one-click extension. Screenshots at 1440 and
390 px under /tmp; at 390 px nothing scrolls sideways."""

from __future__ import annotations

import pytest

from allocations.models import Cluster, ClusterBackend, ExtensionStatus, GpuRequest
from tests.integration.k8s_emulator import EmulatedCluster

pytestmark = [
    pytest.mark.integration,
    pytest.mark.e2e,
    pytest.mark.django_db(transaction=True),
]
NAMESPACE = "team-vision"


def _pod(name: str, request_id: int) -> dict:
    labels = {"app.kubernetes.io/managed-by": "gpu-portal", "gpu-portal/request": str(request_id)}
    conditions = [{"type": "PodScheduled", "status": "True"}, {"type": "Ready", "status": "True"}]
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": NAMESPACE, "labels": labels},
        "spec": {"containers": [{"name": "main", "image": "nvcr.io/nvidia/pytorch:24.05-py3"}]},
        "status": {"phase": "Running", "conditions": conditions},
    }


def _event(name: str, about: str, reason: str, message: str, kind: str = "Pod", type_: str = "Normal") -> dict:
    return {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"name": name, "namespace": NAMESPACE},
        "involvedObject": {"kind": kind, "name": about, "namespace": NAMESPACE},
        "reason": reason,
        "message": message,
        "type": type_,
        "lastTimestamp": "2026-11-24T00:40:00Z",
        "count": 1,
    }


def test_an_active_request_shows_its_pods_events_and_commands(new_page) -> None:
    training = GpuRequest.objects.get(name="resnet50-training")
    with EmulatedCluster.running() as cluster:
        Cluster.objects.filter(name="demo").update(backend=ClusterBackend.KUBERNETES, api_endpoint=cluster.url)
        for index in (0, 1):
            cluster.put(_pod(f"gpr-{training.pk}-{index}-x7k2p", training.pk))
        cluster.put(_event("e1", f"gpr-{training.pk}", "SuccessfulCreate", "Created pod: gpr-1-0-x7k2p", "Job"))
        cluster.put(_event("e2", f"gpr-{training.pk}-0-x7k2p", "Pulled", "Container image pulled in 41.2s"))
        cluster.put(_event("e3", f"gpr-{training.pk}-1-x7k2p", "BackOff", "Back-off pulling image", type_="Warning"))

        page = new_page("alice")
        page.set_viewport_size({"width": 1440, "height": 1000})
        page.goto(f"/requests/{training.pk}/")
        page.locator("#pods").wait_for()  # read by the page's script once shown, from the workload endpoint
        pods = page.locator("#pods tbody tr")
        assert pods.count() == 2 and "Running" in pods.first.inner_text()
        assert page.locator("#k8s-events tbody tr").count() == 3
        assert "Back-off pulling image" in page.locator("#k8s-events").inner_text()
        page.locator("#access").screenshot(path="/tmp/h13b-use-it-1440.png")

        page.set_viewport_size({"width": 390, "height": 844})
        page.goto(f"/requests/{training.pk}/")
        page.locator("#pods").wait_for()
        assert page.evaluate("document.documentElement.scrollWidth - window.innerWidth") <= 0
        page.locator("#access").screenshot(path="/tmp/h13b-use-it-390.png")

    page.set_viewport_size({"width": 1440, "height": 1000})
    page.click("#quick-extension-form button[type=submit]")
    page.locator(".messages").wait_for()
    assert "Extension of 24 h asked" in page.locator(".messages").inner_text()
    assert training.extensions.get().status == ExtensionStatus.PENDING


def test_refreshing_the_status_reads_the_pods_and_events_again(new_page) -> None:
    training = GpuRequest.objects.get(name="resnet50-training")
    pending = _pod(f"gpr-{training.pk}-0-x7k2p", training.pk)
    pending["status"] = {"phase": "Pending", "conditions": [{"type": "PodScheduled", "status": "False"}]}
    with EmulatedCluster.running() as cluster:
        Cluster.objects.filter(name="demo").update(backend=ClusterBackend.KUBERNETES, api_endpoint=cluster.url)
        cluster.put(pending)
        page = new_page("alice")
        page.goto(f"/requests/{training.pk}/")
        assert "Pending" in page.locator("#pods").inner_text() and page.locator("#no-events").count() == 1
        assert page.locator("#workload-reading").count() == 0

        cluster.put(_pod(f"gpr-{training.pk}-0-x7k2p", training.pk))
        cluster.put(_event("e1", f"gpr-{training.pk}-0-x7k2p", "Started", "Started container main"))
        page.click("#refresh-status")
        page.locator("#k8s-events").wait_for()
        assert "Running" in page.locator("#pods").inner_text() and "Pending" not in page.locator("#pods").inner_text()
        assert "Started container main" in page.locator("#k8s-events").inner_text()
        assert "pods and events read" in page.locator("#workload-state").inner_text()

    # The emulator is gone: reading again says so in the card, and the page around it stays.
    page.click("#read-cluster")
    page.locator("#cluster-unreachable").wait_for()
    assert page.locator("#pods").count() == 0 and page.locator("#k8s-events").count() == 0
    assert page.url.endswith(f"/requests/{training.pk}/")
    for width, height in ((1440, 1000), (390, 844)):
        page.set_viewport_size({"width": width, "height": height})
        page.locator("#access").screenshot(path=f"/tmp/hux-use-it-unreachable-{width}.png")
