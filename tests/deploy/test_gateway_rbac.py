"""The gateway's ClusterRole grants exactly what the Kubernetes gateway calls: derived from its real HTTP requests.

The gateway (allocations/clusters/gateways/kubernetes.py) runs every method of the ``ClusterGateway`` interface against
the API-server emulator over real HTTP: it applies (twice: create, then update) every kind of object the renderer emits
for the whole workload matrix, observes a workload without pods (the Job or Deployment is read) and with a Pending
pod (its pods and scheduling events are listed), deletes the request's own objects, and lists the GPU nodes. Each
request the emulator served becomes an RBAC triple (API group, resource, verb) the way the API server authorizes it;
a server-side apply that finds no object creates it, which the API server authorizes as ``create`` as well as
``patch``. The union must equal the rendered ClusterRole of both overlays, rule for rule: a grant the gateway does
not use fails, and so does a call the role does not allow.
"""

from __future__ import annotations

import inspect
from typing import Any

import pytest

from allocations.clusters.gateways.base import ClusterGateway, NodeMaintenanceGateway
from allocations.clusters.gateways.kubernetes import KubernetesGateway
from gpucore.manifests import is_request_owned, render_cluster_objects, render_request_objects, workload_name
from tests.deploy.kustomize import OVERLAYS, by_kind, render
from tests.gpucore.manifests.cases import context, matrix
from tests.gpucore.manifests.test_kueue import cluster as kueue_cluster
from tests.integration.k8s_emulator import APPLY_PATCH, EmulatedCluster

pytestmark = pytest.mark.integration
Triple = tuple[str, str, str]


def covering_contexts() -> list[Any]:
    """The fewest matrix cases (greedy) whose renderings include every object kind the renderer emits."""
    kinds_of = {}
    for case in matrix():
        ctx = context(case.model, case.strategy, case.workload_type)
        kinds_of[case.id] = (ctx, {(o["apiVersion"], o["kind"]) for o in render_request_objects(ctx)})
    every_kind = set().union(*(kinds for _, kinds in kinds_of.values()))
    chosen, covered = [], set()
    while covered != every_kind:
        case_id = max(kinds_of, key=lambda key: len(kinds_of[key][1] - covered))
        ctx, kinds = kinds_of.pop(case_id)
        chosen.append(ctx)
        covered |= kinds
    return chosen


def pending_pod(namespace: str, request_id: int) -> dict[str, Any]:
    """A pod the scheduler has not placed and whose condition carries no message: the gateway reads the events."""
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": f"{workload_name(request_id)}-0",
            "namespace": namespace,
            "labels": {"gpu-portal/request": str(request_id)},
        },
        "spec": {"containers": [{"name": "main", "image": "registry.example.com/ml/pytorch:2.4"}]},
        "status": {"phase": "Pending", "conditions": [{"type": "PodScheduled", "status": "False"}]},
    }


def _triples(request: Any) -> set[Triple]:
    """The RBAC (group, resource, verb) triples the API server would authorize for one request."""
    if request.method.value == "POST" and request.url.path.endswith("/eviction"):
        return {("", "pods/eviction", "create")}  # the Eviction subresource is authorized on its own
    assert request.resource is not None, f"a non-resource request: {request.method} {request.url.path}"
    group, resource = request.resource.group, request.resource.plural
    if resource is None:
        return set()  # API discovery (/apis/<group>/<version>): every authenticated user may (system:discovery)
    method = request.method.value
    if method == "GET":
        verb = "watch" if request.params.get("watch") in ("true", "1") else ("get" if request.name else "list")
        return {(group, resource, verb)}
    if method == "PATCH":
        apply = request.headers.get("Content-Type", "").split(";")[0] == APPLY_PATCH
        # An apply that finds no object creates it: the API server checks "create" too.
        return {(group, resource, "patch"), (group, resource, "create")} if apply else {(group, resource, "patch")}
    if method == "DELETE":
        return {(group, resource, "delete" if request.name else "deletecollection")}
    return {(group, resource, {"POST": "create", "PUT": "update"}[method])}


@pytest.fixture(scope="module")
def gateway_calls() -> tuple[set[Triple], set[str]]:
    """The triples of every request the gateway made, and the interface methods exercised."""
    exercised: set[str] = set()
    with EmulatedCluster.running() as cluster:
        gateway = KubernetesGateway.connect(host=cluster.url, token="test-token")
        for ctx in covering_contexts():
            objects = render_request_objects(ctx)
            namespace, request_id = ctx.team.namespace, ctx.request_id
            gateway.apply(objects)
            gateway.apply(objects)
            exercised.add("apply")
            gateway.workload_status(namespace=namespace, request_id=request_id)
            cluster.put(pending_pod(namespace, request_id))
            status = gateway.workload_status(namespace=namespace, request_id=request_id)
            assert status.phase == "Pending"
            exercised.add("workload_status")
            gateway.workload_events(namespace=namespace, request_id=request_id)  # the request page's "Use it" card
            exercised.add("workload_events")
            gateway.queued_workload(namespace=namespace, request_id=request_id)  # waiting in Kueue, preemption
            exercised.add("queued_workload")
            gateway.delete([obj for obj in objects if is_request_owned(obj)])
            exercised.add("delete")
        gateway.list_gpu_nodes()
        exercised.add("list_gpu_nodes")
        # The cluster's own objects (the apply_cluster_objects task and a MIG rollout's mig-parted ConfigMap): every
        # kind a cluster renders, on a Kueue cluster with MIG and time-sliced pools and the Prometheus Operator.
        for ctx in (kueue_cluster(monitoring_namespace="monitoring"), kueue_cluster(scheduler="default")):
            cluster_objects = render_cluster_objects(ctx)
            # A PriorityClass an earlier release rendered with another value: replaced, as its value is immutable.
            (priority_class, *_) = [o for o in cluster_objects if o["kind"] == "PriorityClass"]
            cluster.put({**priority_class, "value": priority_class["value"] - 1})
            gateway.apply(cluster_objects)
            gateway.apply(cluster_objects)
        # A MIG plan's rollout (NodeMaintenanceGateway): read, cordon and label a node, list and evict its GPU pods.
        cluster.put({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "gpu-node"}, "spec": {}})
        gpu_pod = pending_pod("team-vision", 7)
        gpu_pod["spec"]["nodeName"] = "gpu-node"
        gpu_pod["spec"]["containers"][0]["resources"] = {"limits": {"nvidia.com/mig-1g.5gb": "1"}}
        cluster.put(gpu_pod)
        gateway.read_node("gpu-node")
        gateway.patch_node("gpu-node", unschedulable=True, labels={"nvidia.com/mig.config": "all-disabled"})
        (found,) = gateway.gpu_pods_on_node("gpu-node")
        gateway.evict_pod(namespace=found.namespace, name=found.name)
        exercised.update({"read_node", "patch_node", "gpu_pods_on_node", "evict_pod"})
        triples = set().union(*(_triples(request) for request in cluster.requests))
    return triples, exercised


def test_every_gateway_method_is_exercised(gateway_calls) -> None:
    _, exercised = gateway_calls
    interface = {
        name
        for protocol in (ClusterGateway, NodeMaintenanceGateway)
        for name, _ in inspect.getmembers(protocol, inspect.isfunction)
        if not name.startswith("_")
    }
    assert exercised == interface


def test_the_calls_include_the_reads_that_only_some_paths_make(gateway_calls) -> None:
    triples, _ = gateway_calls
    assert {("", "pods", "list"), ("", "events", "list"), ("", "nodes", "list")} <= triples
    assert {("", "nodes", "get"), ("", "nodes", "patch"), ("", "pods/eviction", "create")} <= triples
    assert {("batch", "jobs", "get"), ("apps", "deployments", "get")} <= triples
    assert ("kueue.x-k8s.io", "workloads", "list") in triples
    assert ("", "namespaces", "create") in triples


def test_the_calls_include_the_cluster_objects(gateway_calls) -> None:
    triples, _ = gateway_calls
    kinds = {
        ("", "configmaps"),
        ("scheduling.k8s.io", "priorityclasses"),
        ("kueue.x-k8s.io", "clusterqueues"),
        ("kueue.x-k8s.io", "localqueues"),
        ("kueue.x-k8s.io", "resourceflavors"),
        ("monitoring.coreos.com", "prometheusrules"),
        ("monitoring.coreos.com", "servicemonitors"),
    }
    for group, resource in kinds:
        assert {(group, resource, "get"), (group, resource, "create"), (group, resource, "patch")} <= triples, resource


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_the_cluster_role_grants_exactly_what_the_gateway_calls(gateway_calls, overlay: str) -> None:
    triples, _ = gateway_calls
    (role,) = [r for r in by_kind(render(overlay), "ClusterRole") if r["metadata"]["name"] == "gpu-portal-gateway"]
    granted: set[Triple] = set()
    for rule in role["rules"]:
        assert "*" not in rule["verbs"] and "*" not in rule["resources"] and "*" not in rule["apiGroups"], rule
        assert "resourceNames" not in rule and "nonResourceURLs" not in rule, rule
        for group in rule["apiGroups"]:
            for resource in rule["resources"]:
                granted |= {(group, resource, verb) for verb in rule["verbs"]}
    assert granted - triples == set(), "granted but never called"
    assert triples - granted == set(), "called but not granted"
