"""A pool's MIG plan made from its demand, approved and rolled out against the Kubernetes emulator.

A small fake MIG manager plays the GPU Operator's part: when a node's ``nvidia.com/mig.config`` label names a new
config it flips ``nvidia.com/mig.config.state`` to ``rebooting`` and then to ``success`` (or ``failed``), as
nvidia-mig-manager does. Passes are driven by calling ``mig_plan_rollout_step`` (the task's loop body) directly.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest
import yaml
from django.core.exceptions import PermissionDenied
from django.utils import timezone

from allocations.clusters.gateways.kubernetes import KubernetesGateway
from allocations.mig_plans.rollout import mig_plan_rollout_step
from allocations.mig_plans.services import (
    InvalidPlanTransition,
    mig_plan_apply,
    mig_plan_approve,
    mig_plan_create,
)
from allocations.models import (
    ClusterBackend,
    GpuModel,
    MigNodeLayout,
    MigPlan,
    MigPlanStatus,
    RequestStatus,
    SharingMode,
)
from tests.factories import ClusterFactory, GpuRequestFactory, NodePoolFactory
from tests.integration.k8s_emulator import EmulatedCluster

pytestmark = [pytest.mark.integration, pytest.mark.django_db]

PRODUCT = "NVIDIA-A100-SXM4-40GB"
STATE = "nvidia.com/mig.config.state"
CONFIG = "nvidia.com/mig.config"


class FakeMigManager:
    """Flips a node's state label after its config label changes: rebooting, then the outcome for that node."""

    def __init__(self, cluster: EmulatedCluster, *, fail: set[str] = frozenset(), hold: threading.Event | None = None):
        self.cluster, self.fail, self.hold = cluster, set(fail), hold
        self.seen: dict[str, str] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> FakeMigManager:
        for node in ("gpu-a", "gpu-b"):
            labels = (self.cluster.get("Node", node) or {}).get("metadata", {}).get("labels", {})
            self.seen[node] = labels.get(CONFIG, "")
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=5)

    def _run(self) -> None:
        while not self._stop.is_set():
            for node in ("gpu-a", "gpu-b"):
                labels = (self.cluster.get("Node", node) or {}).get("metadata", {}).get("labels", {})
                config = labels.get(CONFIG, "")
                if config and config != self.seen[node]:
                    self.cluster.edit("Node", node, {"metadata": {"labels": {STATE: "rebooting"}}})
                    if self.hold is not None:
                        self.hold.wait(timeout=10)
                    time.sleep(0.05)
                    outcome = "failed" if node in self.fail else "success"
                    self.cluster.edit("Node", node, {"metadata": {"labels": {STATE: outcome}}})
                    self.seen[node] = config
            time.sleep(0.02)


def _node(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "labels": {"nvidia.com/gpu.product": PRODUCT, "pool": "a100", CONFIG: "gpu-portal-a100", STATE: "success"},
        },
        "spec": {},
        "status": {"allocatable": {"nvidia.com/mig-1g.5gb": "14"}, "conditions": [{"type": "Ready", "status": "True"}]},
    }


def _gpu_pod(name: str, node: str, request_id: int) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "team-vision", "labels": {"gpu-portal/request": str(request_id)}},
        "spec": {
            "nodeName": node,
            "containers": [{"name": "main", "resources": {"limits": {"nvidia.com/mig-1g.5gb": "1"}}}],
        },
        "status": {"phase": "Running"},
    }


@pytest.fixture(autouse=True)
def configmap_seen_at_once(settings) -> None:
    """These tests are about the steps, not the kubelet's ConfigMap refresh (test_mig_plan_rollout_timing is)."""
    settings.MIG_CONFIGMAP_PROPAGATION_SECONDS = 0


@pytest.fixture
def cluster() -> Iterator[EmulatedCluster]:
    with EmulatedCluster.running(serve_kueue=False) as running:
        running.put(_node("gpu-a"))
        running.put(_node("gpu-b"))
        yield running


@pytest.fixture
def gateway(cluster: EmulatedCluster) -> KubernetesGateway:
    return KubernetesGateway.connect(host=cluster.url)


@pytest.fixture
def pool(demo_org, cluster: EmulatedCluster):
    """Two nodes of two A100-40GB GPUs at 7 x 1g.5gb; a 1g.5gb request runs on each node; two 7g.40gb are wanted."""
    kube = ClusterFactory(name="mig", backend=ClusterBackend.KUBERNETES, api_endpoint=cluster.url)
    node_pool = NodePoolFactory(
        cluster=kube,
        name="a100",
        gpu_model=GpuModel.objects.get(name="A100-40GB"),
        node_count=2,
        gpus_per_node=2,
        sharing_mode=SharingMode.MIG,
        mig_devices={"1g.5gb": 7},
        node_labels={"pool": "a100"},
    )
    running = []
    for node in ("gpu-a", "gpu-b"):
        request = GpuRequestFactory(
            team=demo_org.team,
            cluster=kube,
            node_pool=node_pool,
            status=RequestStatus.ACTIVE,
            resource_name="nvidia.com/mig-1g.5gb",
            resource_units=1,
        )
        cluster.put(_gpu_pod(f"gpr-{request.pk}-0", node, request.pk))
        running.append(request)
    GpuRequestFactory(
        team=demo_org.team,
        cluster=kube,
        node_pool=node_pool,
        status=RequestStatus.APPROVED,
        resource_name="nvidia.com/mig-7g.40gb",
        resource_units=1,
    )
    GpuRequestFactory(
        team=demo_org.team,
        cluster=kube,
        node_pool=node_pool,
        status=RequestStatus.PENDING_APPROVAL,
        resource_name="nvidia.com/mig-7g.40gb",
        resource_units=1,
    )
    node_pool.running = running
    return node_pool


def _approved_plan(demo_org, pool, gateway, **settings: Any) -> MigPlan:
    plan = mig_plan_create(acting_user=demo_org.approver, pool=pool, gateway=gateway, **settings)
    plan = mig_plan_approve(plan_=plan, acting_user=demo_org.platform_admin)
    return mig_plan_apply(plan_=plan, acting_user=demo_org.platform_admin)


def _pods_on(cluster: EmulatedCluster, pool, node: str) -> list[dict[str, Any]]:
    """The running requests' pods on a node, as the emulator stores them."""
    pods = [pod for request in pool.running for pod in cluster.labelled("gpu-portal/request", str(request.pk))]
    return [pod for pod in pods if pod["kind"] == "Pod" and pod["spec"]["nodeName"] == node]


def _finish_pods(cluster: EmulatedCluster, pool, node: str, gateway: KubernetesGateway) -> None:
    """The workloads on the node end (their pods go away)."""
    for pod in _pods_on(cluster, pool, node):
        gateway.evict_pod(namespace=pod["metadata"]["namespace"], name=pod["metadata"]["name"])


def _run_until(plan: MigPlan, gateway: KubernetesGateway, statuses: set[str], *, seconds: float = 10) -> str:
    deadline = time.monotonic() + seconds
    status = mig_plan_rollout_step(plan_id=plan.pk, gateway=gateway)
    while status not in statuses and time.monotonic() < deadline:
        time.sleep(0.05)
        status = mig_plan_rollout_step(plan_id=plan.pk, gateway=gateway)
    return status


def test_the_plan_holds_the_demand_on_three_gpus_and_drains_one_node(demo_org, pool, gateway, cluster):
    plan = mig_plan_create(acting_user=demo_org.approver, pool=pool, gateway=gateway, headroom_pct=0)
    assert plan.status == MigPlanStatus.PROPOSED
    assert plan.demand == {"1g.5gb": 2, "7g.40gb": 2}
    assert (plan.gpu_count, plan.pool_gpus, plan.gpus_freed, plan.gpus_changed) == (3, 4, 1, 2)
    # Both 7g.40gb go on one node's two GPUs; that node's running 1g.5gb request has to move.
    assert len(plan.nodes_to_drain) == 1
    (node,) = plan.nodes_to_drain
    assert [g["proposed"] for g in plan.gpus if g["node"] == node] == [{"7g.40gb": 1}, {"7g.40gb": 1}]
    (moving,) = plan.requests_to_move
    (pod,) = _pods_on(cluster, pool, node)
    assert (
        moving == f"team-vision/{pod['metadata']['name']} (request {pod['metadata']['labels']['gpu-portal/request']})"
    )
    # One freed A100 at the catalog's list price, per month (negative: the pool could give it back).
    assert plan.monthly_cost_delta is not None and plan.monthly_cost_delta < 0
    # No price book here: the catalog's list price, and the plan says so.
    model = GpuModel.objects.get(name="A100-40GB")
    assert plan.monthly_cost_delta == -1 * model.list_hourly_price * 730 and "list price" in plan.price_basis
    assert [e.to_status for e in plan.events.all()] == [MigPlanStatus.PROPOSED]


def test_only_admins_approve_and_only_approved_plans_apply(demo_org, pool, gateway):
    plan = mig_plan_create(acting_user=demo_org.approver, pool=pool, gateway=gateway)
    with pytest.raises(PermissionDenied):
        mig_plan_approve(plan_=plan, acting_user=demo_org.approver)
    with pytest.raises(InvalidPlanTransition):
        mig_plan_apply(plan_=plan, acting_user=demo_org.platform_admin)
    with pytest.raises(PermissionDenied):
        mig_plan_create(acting_user=demo_org.member, pool=pool, gateway=gateway)


def test_a_rollout_cordons_waits_for_pods_sets_the_label_and_uncordons_on_success(demo_org, pool, gateway, cluster):
    plan = _approved_plan(demo_org, pool, gateway, drain_timeout_seconds=600)
    (node,) = plan.nodes_to_drain
    other = ({"gpu-a", "gpu-b"} - {node}).pop()
    with FakeMigManager(cluster):
        assert mig_plan_rollout_step(plan_id=plan.pk, gateway=gateway) == MigPlanStatus.APPLYING
        live = cluster.get("Node", node)
        assert live["spec"]["unschedulable"] is True
        # The GPU pod still runs: no label yet; the other node is untouched.
        assert live["metadata"]["labels"][CONFIG] == "gpu-portal-a100"
        assert not (cluster.get("Node", other)["spec"] or {}).get("unschedulable")
        configmap = cluster.get("ConfigMap", "gpu-portal-mig-parted-config", "gpu-operator")
        configs = yaml.safe_load(configmap["data"]["config.yaml"])["mig-configs"]
        planned = [name for name in configs if name.startswith("gpu-portal-a100-40gb-")]
        assert len(planned) == 1
        assert configs[planned[0]] == [{"devices": "all", "mig-enabled": True, "mig-devices": {"7g.40gb": 1}}]
        # The workload finishes; the next passes label the node and wait for the MIG manager.
        _finish_pods(cluster, pool, node, gateway)
        assert _run_until(plan, gateway, {MigPlanStatus.APPLIED, MigPlanStatus.FAILED}) == MigPlanStatus.APPLIED
    live = cluster.get("Node", node)
    assert live["metadata"]["labels"][CONFIG] == planned[0]
    assert live["metadata"]["labels"][STATE] == "success"
    assert live["spec"]["unschedulable"] is False
    layout = MigNodeLayout.objects.get(pool=pool, node=node)
    assert layout.gpus == [{"7g.40gb": 1}, {"7g.40gb": 1}] and layout.config_name == planned[0]
    plan.refresh_from_db()
    assert plan.progress["nodes"][node]["step"] == "done" and plan.finished_at is not None
    messages = [e.message for e in plan.events.all()]
    assert any("cordoned" in m for m in messages) and any("success" in m for m in messages)
    # Run again (a redelivered task): nothing moves, nothing is re-cordoned.
    before = len(cluster.requests)
    assert mig_plan_rollout_step(plan_id=plan.pk, gateway=gateway) == MigPlanStatus.APPLIED
    assert len(cluster.requests) == before


def test_a_failed_node_stops_the_rollout_and_says_why(demo_org, pool, gateway, cluster):
    plan = _approved_plan(demo_org, pool, gateway, drain_policy="evict", drain_timeout_seconds=1)
    (node,) = plan.nodes_to_drain
    with FakeMigManager(cluster, fail={node}):
        mig_plan_rollout_step(plan_id=plan.pk, gateway=gateway)
        # The drain timeout passes with the pod still there: the evict policy evicts it.
        later = timezone.now() + timedelta(seconds=5)
        mig_plan_rollout_step(plan_id=plan.pk, gateway=gateway, now=later)
        assert _pods_on(cluster, pool, node) == []
        assert _run_until(plan, gateway, {MigPlanStatus.FAILED, MigPlanStatus.APPLIED}) == MigPlanStatus.FAILED
    plan.refresh_from_db()
    assert node in plan.error and "mig.config.state=failed" in plan.error
    assert plan.progress["nodes"][node]["step"] == "failed"
    assert cluster.get("Node", node)["spec"]["unschedulable"] is True  # left cordoned for someone to look
    assert not MigNodeLayout.objects.filter(pool=pool, node=node).exists()
    assert any("evicted" in e.message for e in plan.events.all())
    assert plan.events.last().to_status == MigPlanStatus.FAILED


def test_the_stop_policy_stops_at_the_drain_timeout_naming_the_pods(demo_org, pool, gateway, cluster):
    plan = _approved_plan(demo_org, pool, gateway, drain_timeout_seconds=30)
    (node,) = plan.nodes_to_drain
    mig_plan_rollout_step(plan_id=plan.pk, gateway=gateway)
    status = mig_plan_rollout_step(plan_id=plan.pk, gateway=gateway, now=timezone.now() + timedelta(seconds=31))
    assert status == MigPlanStatus.FAILED
    plan.refresh_from_db()
    assert f"Node {node}: GPU pods still running after 30 s: team-vision/gpr-" in plan.error
    assert cluster.get("Node", node)["metadata"]["labels"][CONFIG] == "gpu-portal-a100"


def test_a_rollout_resumes_from_its_stored_step(demo_org, pool, gateway, cluster):
    """Passes by a fresh gateway (a new worker after a kill) continue from the node's stored step."""
    plan = _approved_plan(demo_org, pool, gateway)
    (node,) = plan.nodes_to_drain
    _finish_pods(cluster, pool, node, gateway)
    with FakeMigManager(cluster):
        mig_plan_rollout_step(plan_id=plan.pk, gateway=gateway)
        plan.refresh_from_db()
        assert plan.progress["nodes"][node]["step"] == "configuring"
        cordons = sum(1 for r in cluster.requests if r.method.value == "PATCH" and '"unschedulable": true' in r.text)
        fresh = KubernetesGateway.connect(host=cluster.url)
        assert _run_until(plan, fresh, {MigPlanStatus.APPLIED, MigPlanStatus.FAILED}) == MigPlanStatus.APPLIED
    assert cordons == 1
    assert sum(1 for r in cluster.requests if r.method.value == "PATCH" and '"unschedulable": true' in r.text) == 1


def test_the_sweeper_finds_rollouts_whose_worker_stopped_beating(demo_org, pool, gateway):
    from allocations.mig_plans.rollout import stalled_mig_plan_ids

    plan = _approved_plan(demo_org, pool, gateway)
    assert stalled_mig_plan_ids() == [plan.pk]  # applying, and no pass has run yet
    mig_plan_rollout_step(plan_id=plan.pk, gateway=gateway)
    assert stalled_mig_plan_ids() == []
    assert stalled_mig_plan_ids(now=timezone.now() + timedelta(minutes=3)) == [plan.pk]
    MigPlan.objects.filter(pk=plan.pk).update(status=MigPlanStatus.FAILED)
    assert stalled_mig_plan_ids(now=timezone.now() + timedelta(minutes=3)) == []
