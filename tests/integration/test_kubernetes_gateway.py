"""KubernetesGateway against the API server emulator over real HTTP, with the official client.

The emulator proves the HTTP conversation (paths, verbs, content types, query parameters, status mapping, typed
deserialization); it does not prove field ownership, conflicts or admission (see ``tests/integration/k8s_emulator``).
"""

from __future__ import annotations

import socket
from collections.abc import Iterator
from typing import Any

import pytest
import yaml

from allocations.clusters.gateways import gateway_for
from allocations.clusters.gateways.base import (
    FIELD_MANAGER,
    ObjectRef,
    PermanentGatewayError,
    TransientGatewayError,
)
from allocations.clusters.gateways.kubernetes import KubernetesGateway
from allocations.clusters.gateways.kubernetes_readings import covers
from gpucore.manifests import is_request_owned, render_request_objects
from tests.gpucore.manifests.cases import context
from tests.integration.k8s_emulator import APPLY_PATCH, EmulatedCluster

pytestmark = pytest.mark.integration

NAMESPACE = "team-vision"
REQUEST_ID = 42
INSUFFICIENT = "0/3 nodes are available: 3 Insufficient nvidia.com/gpu. preemption: 0/3 nodes are available."
TAINTED = (
    "0/2 nodes are available: 2 node(s) had untolerated taint {nvidia.com/gpu: present}. preemption: 0/2 nodes "
    "are available: 2 Preemption is not helpful for scheduling."
)


@pytest.fixture
def cluster() -> Iterator[EmulatedCluster]:
    with EmulatedCluster.running() as running:
        yield running


@pytest.fixture
def gateway(cluster: EmulatedCluster) -> KubernetesGateway:
    return KubernetesGateway.connect(host=cluster.url, token="test-token")


def serving_objects() -> list[dict[str, Any]]:
    """A tier-1 real-time inference request: PriorityClass, namespace objects, PDB, Service and Deployment."""
    return render_request_objects(context("A100-40GB", "dedicated", "realtime_inference"))


def training_objects() -> list[dict[str, Any]]:
    """A two-pod training request: PriorityClass, namespace objects, PDB, headless Service and a JobSet."""
    return render_request_objects(context("A100-40GB", "dedicated", "training"))


def pod(
    name: str,
    phase: str,
    *,
    request_id: int = REQUEST_ID,
    conditions: list[dict[str, Any]] | None = None,
    **status: Any,
) -> dict[str, Any]:
    """A pod as the kubelet or the scheduler reports it."""
    labels = {"app.kubernetes.io/managed-by": "gpu-portal", "gpu-portal/request": str(request_id)}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": NAMESPACE, "labels": labels},
        "spec": {"containers": [{"name": "main", "image": "registry.example.com/ml/pytorch:2.4-cuda12"}]},
        "status": {"phase": phase, "conditions": conditions or [], **status},
    }


def running_pod(name: str, **kwargs: Any) -> dict[str, Any]:
    """A scheduled, running, ready pod."""
    conditions = [{"type": "PodScheduled", "status": "True"}, {"type": "Ready", "status": "True"}]
    return pod(name, "Running", conditions=conditions, **kwargs)


def event(name: str, pod_name: str, message: str, when: str, reason: str = "FailedScheduling") -> dict[str, Any]:
    """A core/v1 Event about a pod, as the scheduler records it."""
    return {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"name": name, "namespace": NAMESPACE},
        "involvedObject": {"kind": "Pod", "name": pod_name, "namespace": NAMESPACE},
        "reason": reason,
        "message": message,
        "type": "Warning",
        "lastTimestamp": when,
    }


def node(
    name: str,
    allocatable: dict[str, str],
    *,
    labels: dict[str, str] | None = None,
    ready: bool = True,
    taints: list[dict[str, str]] | None = None,
) -> dict[str, Any]:
    """A node as the kubelet, the device plugin and GPU Feature Discovery report it."""
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": labels or {}},
        "spec": {"taints": taints} if taints else {},
        "status": {
            "allocatable": {"cpu": "63500m", "memory": "503Gi", **allocatable},
            "conditions": [{"type": "Ready", "status": "True" if ready else "False"}],
        },
    }


def live(cluster: EmulatedCluster, obj: dict[str, Any]) -> dict[str, Any] | None:
    """The emulator's copy of a rendered object."""
    ref = ObjectRef.of(obj)
    return cluster.get(ref.kind, ref.name, ref.namespace)


# --- apply -----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("render", [serving_objects, training_objects], ids=["deployment", "job"])
def test_apply_creates_every_object_in_order_with_server_side_apply(
    cluster: EmulatedCluster, gateway: KubernetesGateway, render: Any
) -> None:
    objects = render()

    result = gateway.apply(objects)

    assert result.applied == tuple(ObjectRef.of(obj) for obj in objects)
    assert result.drifted == ()
    assert result.location == cluster.url
    for obj in objects:
        stored = live(cluster, obj)
        assert stored is not None and covers(stored, obj), ObjectRef.of(obj)
    patches = [request for request in cluster.requests if request.method.value == "PATCH"]
    assert [request.name for request in patches] == [obj["metadata"]["name"] for obj in objects]
    for request in patches:
        assert request.headers["Content-Type"] == APPLY_PATCH
        assert request.params == {"fieldManager": FIELD_MANAGER, "force": "true"}
        assert request.headers["Authorization"] == "Bearer test-token"


def test_apply_sends_namespace_and_cluster_scoped_objects_to_their_urls(
    cluster: EmulatedCluster, gateway: KubernetesGateway
) -> None:
    gateway.apply(serving_objects())

    paths = {request.url.path for request in cluster.requests if request.method.value == "PATCH"}
    assert "/api/v1/namespaces/team-vision" in paths
    assert "/apis/scheduling.k8s.io/v1/priorityclasses/gpu-portal-tier1-realtime" in paths
    assert f"/api/v1/namespaces/{NAMESPACE}/resourcequotas/gpu-portal-quota" in paths
    assert f"/apis/apps/v1/namespaces/{NAMESPACE}/deployments/gpr-{REQUEST_ID}" in paths


def test_applying_twice_is_a_no_op(cluster: EmulatedCluster, gateway: KubernetesGateway) -> None:
    objects = serving_objects()
    gateway.apply(objects)
    versions = {ObjectRef.of(obj): live(cluster, obj)["metadata"]["resourceVersion"] for obj in objects}

    again = gateway.apply(objects)

    assert again.drifted == ()
    assert again.applied == tuple(ObjectRef.of(obj) for obj in objects)
    assert {ObjectRef.of(obj): live(cluster, obj)["metadata"]["resourceVersion"] for obj in objects} == versions


def test_a_hand_edit_is_reported_as_drift_and_taken_back(cluster: EmulatedCluster, gateway: KubernetesGateway) -> None:
    objects = serving_objects()
    gateway.apply(objects)
    name = f"gpr-{REQUEST_ID}"
    # Someone scales the Deployment by hand and relabels it; a field the portal does not render is not drift.
    cluster.edit(
        "Deployment", name, {"spec": {"replicas": 5}, "metadata": {"labels": {"gpu-portal/team": "nlp"}}}, NAMESPACE
    )
    cluster.edit("Service", name, {"metadata": {"annotations": {"owner": "someone"}}}, NAMESPACE)

    result = gateway.apply(objects)

    assert result.drifted == (ObjectRef("apps/v1", "Deployment", name, NAMESPACE),)
    deployment = cluster.get("Deployment", name, NAMESPACE)
    assert deployment["spec"]["replicas"] == 2
    assert deployment["metadata"]["labels"]["gpu-portal/team"] == "vision"
    assert gateway.apply(objects).drifted == ()


def test_a_deleted_object_is_created_again_without_drift(cluster: EmulatedCluster, gateway: KubernetesGateway) -> None:
    objects = training_objects()
    gateway.apply(objects)
    job = objects[-1]
    gateway.delete([job])
    assert live(cluster, job) is None

    result = gateway.apply(objects)

    assert result.drifted == ()
    assert live(cluster, job) is not None


def test_covers_ignores_server_defaults_and_canonical_quantities() -> None:
    wanted = {"spec": {"containers": [{"name": "main", "resources": {"limits": {"memory": "1024Mi", "cpu": "1"}}}]}}
    defaulted = {
        "spec": {
            "containers": [
                {
                    "name": "main",
                    "terminationMessagePath": "/dev/termination-log",
                    "resources": {"limits": {"memory": "1Gi", "cpu": "1000m"}},
                }
            ],
            "dnsPolicy": "ClusterFirst",
        }
    }
    assert covers(defaulted, wanted)
    assert not covers(defaulted, {"spec": {"containers": [{"name": "other"}]}})
    assert not covers(defaulted, {"spec": {"containers": [{"name": "main"}, {"name": "sidecar"}]}})
    assert covers({"metadata": {}}, {"metadata": {"annotations": {}}})


# --- delete ----------------------------------------------------------------------------------------------------


def test_delete_removes_only_what_it_is_given_in_reverse_order(
    cluster: EmulatedCluster, gateway: KubernetesGateway
) -> None:
    objects = serving_objects()
    gateway.apply(objects)
    owned = [obj for obj in objects if is_request_owned(obj)]

    deleted = gateway.delete(owned)

    assert deleted == tuple(ObjectRef.of(obj) for obj in reversed(owned))
    assert all(live(cluster, obj) is None for obj in owned)
    assert all(live(cluster, obj) is not None for obj in objects if not is_request_owned(obj))
    deletes = [request for request in cluster.requests if request.method.value == "DELETE"]
    assert all(request.params.get("propagationPolicy") == "Background" for request in deletes)


def test_deleting_what_is_already_gone_is_not_an_error(cluster: EmulatedCluster, gateway: KubernetesGateway) -> None:
    owned = [obj for obj in training_objects() if is_request_owned(obj)]

    assert gateway.delete(owned) == ()


# --- workload status -------------------------------------------------------------------------------------------


def test_running_pods_of_the_request_only(cluster: EmulatedCluster, gateway: KubernetesGateway) -> None:
    cluster.put(running_pod("gpr-42-7d9f-abcde"))
    cluster.put(running_pod("gpr-42-7d9f-fghij"))
    cluster.put(pod("gpr-43-0-xyz", "Pending", request_id=43))  # another request's pod: not ours

    status = gateway.workload_status(namespace=NAMESPACE, request_id=REQUEST_ID)

    assert status.phase == "Running"
    assert [p.name for p in status.pods] == ["gpr-42-7d9f-abcde", "gpr-42-7d9f-fghij"]
    assert all(p.ready for p in status.pods)
    list_requests = [r for r in cluster.requests if r.url.path == f"/api/v1/namespaces/{NAMESPACE}/pods"]
    assert list_requests[-1].params["labelSelector"] == f"gpu-portal/request={REQUEST_ID}"


def test_pending_reason_from_the_pod_scheduled_condition(cluster: EmulatedCluster, gateway: KubernetesGateway) -> None:
    condition = {"type": "PodScheduled", "status": "False", "reason": "Unschedulable", "message": INSUFFICIENT}
    cluster.put(running_pod("gpr-42-0-aaaaa"))
    cluster.put(pod("gpr-42-1-bbbbb", "Pending", conditions=[condition]))

    status = gateway.workload_status(namespace=NAMESPACE, request_id=REQUEST_ID)

    assert status.phase == "Pending"
    assert status.pending_reason == INSUFFICIENT
    assert "Insufficient nvidia.com/gpu" in status.pending_reason
    (waiting,) = [p for p in status.pods if p.phase == "Pending"]
    assert (waiting.reason, waiting.message) == ("Unschedulable", INSUFFICIENT)


def test_pending_reason_from_the_newest_failed_scheduling_event(
    cluster: EmulatedCluster, gateway: KubernetesGateway
) -> None:
    cluster.put(pod("gpr-42-0-ccccc", "Pending"))
    cluster.put(event("gpr-42-0-ccccc.1", "gpr-42-0-ccccc", INSUFFICIENT, "2026-11-20T10:00:00Z"))
    cluster.put(event("gpr-42-0-ccccc.2", "gpr-42-0-ccccc", TAINTED, "2026-11-20T10:05:00Z"))
    cluster.put(event("gpr-42-0-ccccc.3", "gpr-42-0-ccccc", "Successfully pulled", "2026-11-20T10:09:00Z", "Pulled"))
    cluster.put(event("other.1", "gpr-7-0-zzzzz", "0/3 nodes are available: unrelated.", "2026-11-20T10:10:00Z"))

    status = gateway.workload_status(namespace=NAMESPACE, request_id=REQUEST_ID)

    assert status.phase == "Pending"
    assert status.pending_reason == TAINTED
    assert "untolerated taint {nvidia.com/gpu: present}" in status.pending_reason
    event_lists = [r for r in cluster.requests if r.url.path == f"/api/v1/namespaces/{NAMESPACE}/events"]
    assert event_lists[-1].params["fieldSelector"] == "reason=FailedScheduling"


def test_a_scheduled_pending_pod_reports_its_waiting_container(
    cluster: EmulatedCluster, gateway: KubernetesGateway
) -> None:
    waiting = {"waiting": {"reason": "ImagePullBackOff", "message": 'Back-off pulling image "registry/x"'}}
    statuses = [{"name": "main", "image": "x", "imageID": "", "ready": False, "restartCount": 0, "state": waiting}]
    cluster.put(
        pod(
            "gpr-42-0-ddddd",
            "Pending",
            conditions=[{"type": "PodScheduled", "status": "True"}],
            containerStatuses=statuses,
        )
    )

    status = gateway.workload_status(namespace=NAMESPACE, request_id=REQUEST_ID)

    assert status.phase == "Pending"
    assert status.pending_reason == 'Back-off pulling image "registry/x"'
    assert status.pods[0].reason == "ImagePullBackOff"


def test_finished_pods(cluster: EmulatedCluster, gateway: KubernetesGateway) -> None:
    cluster.put(pod("gpr-42-0-eeeee", "Succeeded"))
    assert gateway.workload_status(namespace=NAMESPACE, request_id=REQUEST_ID).phase == "Succeeded"

    cluster.put(pod("gpr-42-1-fffff", "Failed", reason="Evicted", message="The node was low on resource: memory."))
    status = gateway.workload_status(namespace=NAMESPACE, request_id=REQUEST_ID)
    assert status.phase == "Failed"
    assert "The node was low on resource: memory." in status.message


def test_no_pods(cluster: EmulatedCluster, gateway: KubernetesGateway) -> None:
    assert gateway.workload_status(namespace=NAMESPACE, request_id=REQUEST_ID).phase == "NotFound"

    # Two training pods: a JobSet, read when there is no Job of that name.
    gateway.apply(training_objects())
    status = gateway.workload_status(namespace=NAMESPACE, request_id=REQUEST_ID)
    assert (status.phase, status.pending_reason) == ("Pending", "The JobSet has created no pods yet.")

    cluster.edit(
        "JobSet", f"gpr-{REQUEST_ID}", {"status": {"conditions": [{"type": "Completed", "status": "True"}]}}, NAMESPACE
    )
    assert gateway.workload_status(namespace=NAMESPACE, request_id=REQUEST_ID).phase == "Succeeded"


# --- nodes -----------------------------------------------------------------------------------------------------


def test_list_gpu_nodes(cluster: EmulatedCluster, gateway: KubernetesGateway) -> None:
    gfd = {"nvidia.com/gpu.product": "NVIDIA-A100-SXM4-40GB", "nvidia.com/gpu.count": "8"}
    taint = {"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}
    cluster.put(node("gpu-a", {"nvidia.com/gpu": "8"}, labels=gfd, taints=[taint]))
    cluster.put(
        node(
            "gpu-mig",
            {"nvidia.com/mig-1g.5gb": "14", "nvidia.com/mig-3g.20gb": "4"},
            labels={**gfd, "nvidia.com/mig.config": "all-balanced"},
            ready=False,
        )
    )
    cluster.put(node("cpu-only", {}))

    nodes = gateway.list_gpu_nodes()

    assert [n.name for n in nodes] == ["gpu-a", "gpu-mig"]
    whole, mig = nodes
    assert whole.allocatable == {"nvidia.com/gpu": 8}
    assert whole.labels["nvidia.com/gpu.product"] == "NVIDIA-A100-SXM4-40GB"
    assert whole.taints == (taint,)
    assert whole.ready
    assert mig.allocatable == {"nvidia.com/mig-1g.5gb": 14, "nvidia.com/mig-3g.20gb": 4}
    assert mig.labels["nvidia.com/mig.config"] == "all-balanced"
    assert not mig.ready


# --- errors ----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("code", "error"),
    [
        (409, PermanentGatewayError),
        (422, PermanentGatewayError),
        (403, PermanentGatewayError),
        (429, TransientGatewayError),
        (500, TransientGatewayError),
        (503, TransientGatewayError),
    ],
)
def test_api_errors_are_mapped_with_the_status_message(
    cluster: EmulatedCluster, gateway: KubernetesGateway, code: int, error: type[Exception]
) -> None:
    path = f"/apis/apps/v1/namespaces/{NAMESPACE}/deployments/gpr-{REQUEST_ID}"
    message = f'deployments.apps "gpr-{REQUEST_ID}" answered {code}'
    cluster.fail("PATCH", path, code, message)

    with pytest.raises(error) as raised:
        gateway.apply(serving_objects())

    assert raised.value.status == code
    assert message in str(raised.value)
    assert f"Deployment {NAMESPACE}/gpr-{REQUEST_ID}" in str(raised.value)
    assert live(cluster, serving_objects()[-1]) is None  # refused before anything was stored


def test_an_unreachable_api_server_is_transient() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    gateway = KubernetesGateway.connect(host=f"http://127.0.0.1:{port}")

    with pytest.raises(TransientGatewayError, match="unreachable"):
        gateway.list_gpu_nodes()


def test_read_errors_are_mapped_too(cluster: EmulatedCluster, gateway: KubernetesGateway) -> None:
    cluster.fail("GET", "/api/v1/nodes", 403, 'nodes is forbidden: User "gpu-portal" cannot list resource "nodes"')

    with pytest.raises(PermanentGatewayError, match="cannot list resource") as raised:
        gateway.list_gpu_nodes()
    assert raised.value.status == 403


# --- configuration ---------------------------------------------------------------------------------------------


def kubeconfig(server: str, token: str) -> str:
    """A minimal kubeconfig with a bearer token."""
    return yaml.safe_dump(
        {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [{"name": "lab", "cluster": {"server": server}}],
            "users": [{"name": "portal", "user": {"token": token}}],
            "contexts": [{"name": "lab", "context": {"cluster": "lab", "user": "portal"}}],
            "current-context": "lab",
        }
    )


def test_gateway_for_reads_a_kubeconfig_from_the_environment(
    cluster: EmulatedCluster, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LAB_KUBECONFIG", kubeconfig(cluster.url, "env-token"))

    gateway = gateway_for(backend="kubernetes", kubeconfig_ref="env:LAB_KUBECONFIG")
    gateway.list_gpu_nodes()

    assert cluster.requests[-1].headers["Authorization"] == "Bearer env-token"


def test_gateway_for_reads_a_kubeconfig_file(cluster: EmulatedCluster, tmp_path: Any) -> None:
    path = tmp_path / "kubeconfig"
    path.write_text(kubeconfig("https://unused.invalid:6443", "file-token"))

    gateway = gateway_for(backend="kubernetes", kubeconfig_ref=f"file:{path}", api_endpoint=cluster.url)
    gateway.list_gpu_nodes()

    assert cluster.requests[-1].headers["Authorization"] == "Bearer file-token"


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"backend": "kubernetes", "kubeconfig_ref": "env:GPU_PORTAL_NO_SUCH_VARIABLE"}, "is not set"),
        ({"backend": "kubernetes", "kubeconfig_ref": "file:/nonexistent/kubeconfig"}, "does not exist"),
        ({"backend": "kubernetes", "kubeconfig_ref": "vault:secret/x"}, "Unknown kubeconfig reference"),
        ({"backend": "kubernetes"}, "neither a kubeconfig reference nor an API endpoint"),
        ({"backend": "slurm"}, "Unknown cluster backend"),
    ],
)
def test_gateway_for_refuses_unusable_settings(kwargs: dict[str, Any], match: str) -> None:
    with pytest.raises(PermanentGatewayError, match=match):
        gateway_for(**kwargs)


def test_gateway_for_refuses_a_kubeconfig_without_a_context(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LAB_KUBECONFIG", yaml.safe_dump({"apiVersion": "v1", "kind": "Config", "clusters": []}))

    with pytest.raises(PermanentGatewayError, match="is unusable"):
        gateway_for(backend="kubernetes", kubeconfig_ref="env:LAB_KUBECONFIG")
