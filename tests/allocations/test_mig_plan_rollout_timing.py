"""A MIG rollout against the Kubernetes emulator, where timing matters: the kubelet's ConfigMap refresh before a node is
labelled, a MIG manager that never finishes, a resumed node the manager must see as new, and what the pool offers
once its nodes run the plan's layouts (read back from the nodes' GFD and MIG manager labels by inventory sync).

The fixtures and the fake MIG manager are those of ``test_mig_plan_rollout``.
"""

# ruff: noqa: F811 (the fixtures imported from test_mig_plan_rollout are parameters here)
from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
import yaml
from django.urls import reverse
from django.utils import timezone

from allocations.clusters.inventory import cluster_sync_inventory
from allocations.clusters.kai_queues import resource_gpu_shares
from allocations.clusters.placement import pool_for, pool_offers
from allocations.clusters.rendering import pool_context
from allocations.mig_plans.rollout import mig_plan_rollout_step
from allocations.mig_plans.services import mig_plan_apply
from allocations.models import GpuRequest, MigNodeLayout, MigPlan, MigPlanStatus, NodePool, RequestStatus
from allocations.requests.services import require_pool_capacity
from tests.allocations.test_mig_plan_rollout import (  # noqa: F401 (fixtures)
    CONFIG,
    STATE,
    FakeMigManager,
    _approved_plan,
    _finish_pods,
    _run_until,
    cluster,
    gateway,
    pool,
)

pytestmark = [pytest.mark.integration, pytest.mark.django_db]

CONFIGMAP = ("ConfigMap", "gpu-portal-mig-parted-config", "gpu-operator")


def _configs(cluster) -> dict[str, Any]:
    return yaml.safe_load(cluster.get(*CONFIGMAP)["data"]["config.yaml"])["mig-configs"]


def _step(plan: MigPlan, node: str) -> dict[str, Any]:
    plan.refresh_from_db()
    return plan.progress["nodes"][node]


def test_a_node_is_labelled_only_once_the_kubelets_have_refreshed_the_configmap(
    demo_org, pool, gateway, cluster, settings
):
    settings.MIG_CONFIGMAP_PROPAGATION_SECONDS = 90
    plan = _approved_plan(demo_org, pool, gateway)
    (node,) = plan.nodes_to_drain
    _finish_pods(cluster, pool, node, gateway)
    start = timezone.now()
    mig_plan_rollout_step(plan_id=plan.pk, gateway=gateway, now=start)
    planned = [name for name in _configs(cluster) if name.startswith("gpu-portal-a100-40gb-")]
    assert len(planned) == 1  # the ConfigMap holds the config from the first pass ...
    live = cluster.get("Node", node)
    assert live["spec"]["unschedulable"] is True
    assert live["metadata"]["labels"][CONFIG] == "gpu-portal-a100"  # ... but the node is not pointed at it yet
    mig_plan_rollout_step(plan_id=plan.pk, gateway=gateway, now=start + timedelta(seconds=60))
    assert cluster.get("Node", node)["metadata"]["labels"][CONFIG] == "gpu-portal-a100"
    assert _step(plan, node)["step"] == "draining"
    mig_plan_rollout_step(plan_id=plan.pk, gateway=gateway, now=start + timedelta(seconds=91))
    assert cluster.get("Node", node)["metadata"]["labels"][CONFIG] == planned[0]
    assert _step(plan, node)["step"] == "configuring"
    assert any("refreshed it (90 s)" in event.message for event in plan.events.all())


def test_a_node_the_mig_manager_never_finishes_fails_the_rollout_uncordoned_and_the_page_says_why(
    demo_org, pool, gateway, cluster, settings, client
):
    settings.MIG_CONFIGMAP_PROPAGATION_SECONDS = 0
    settings.MIG_CONFIGURE_TIMEOUT_SECONDS = 1800
    plan = _approved_plan(demo_org, pool, gateway)
    (node,) = plan.nodes_to_drain
    _finish_pods(cluster, pool, node, gateway)
    start = timezone.now()
    # No MIG manager acts on the label: the state stays "pending".
    assert mig_plan_rollout_step(plan_id=plan.pk, gateway=gateway, now=start) == MigPlanStatus.APPLYING
    assert _step(plan, node)["step"] == "configuring"
    later = start + timedelta(seconds=1799)
    assert mig_plan_rollout_step(plan_id=plan.pk, gateway=gateway, now=later) == MigPlanStatus.APPLYING
    assert cluster.get("Node", node)["spec"]["unschedulable"] is True
    ended = start + timedelta(seconds=1801)
    assert mig_plan_rollout_step(plan_id=plan.pk, gateway=gateway, now=ended) == MigPlanStatus.FAILED
    plan.refresh_from_db()
    assert f"Node {node}: the MIG manager did not finish" in plan.error
    assert "within 1800 s (nvidia.com/mig.config.state=pending)" in plan.error
    assert cluster.get("Node", node)["spec"]["unschedulable"] is False
    assert plan.progress["nodes"][node]["step"] == "failed"
    client.force_login(demo_org.platform_admin)
    page = client.get(reverse("allocations:mig-pool", args=[pool.cluster.name, pool.name]))
    assert page.status_code == 200
    assert "did not finish" in page.content.decode() and "uncordoned" in page.content.decode()


def test_a_resumed_node_gets_a_config_revision_the_mig_manager_acts_on(demo_org, pool, gateway, cluster, settings):
    settings.MIG_CONFIGMAP_PROPAGATION_SECONDS = 0
    plan = _approved_plan(demo_org, pool, gateway)
    (node,) = plan.nodes_to_drain
    _finish_pods(cluster, pool, node, gateway)
    with FakeMigManager(cluster, fail={node}) as manager:
        assert _run_until(plan, gateway, {MigPlanStatus.FAILED, MigPlanStatus.APPLIED}) == MigPlanStatus.FAILED
        first = cluster.get("Node", node)["metadata"]["labels"][CONFIG]
        manager.fail.clear()  # someone fixed the node; the manager acts only when the label changes
        plan = mig_plan_apply(plan_=plan, acting_user=demo_org.platform_admin)
        assert _run_until(plan, gateway, {MigPlanStatus.FAILED, MigPlanStatus.APPLIED}) == MigPlanStatus.APPLIED
    second = cluster.get("Node", node)["metadata"]["labels"][CONFIG]
    assert second == f"{first}-r2"
    configs = _configs(cluster)
    assert configs[second] == [{"devices": "all", "mig-enabled": True, "mig-devices": {"7g.40gb": 1}}]
    assert MigNodeLayout.objects.get(pool=pool, node=node).config_name == second
    assert cluster.get("Node", node)["spec"]["unschedulable"] is False


def test_after_a_rollout_capacity_placement_and_share_read_what_the_nodes_run(
    demo_org, pool, gateway, cluster, settings
):
    settings.MIG_CONFIGMAP_PROPAGATION_SECONDS = 0
    # Before: the configured layout (7 x 1g.5gb on each of 4 GPUs); no 7g.40gb anywhere.
    assert pool.capacity() == {"nvidia.com/mig-1g.5gb": 28}
    plan = _approved_plan(demo_org, pool, gateway)
    (node,) = plan.nodes_to_drain
    _finish_pods(cluster, pool, node, gateway)
    with FakeMigManager(cluster):
        assert _run_until(plan, gateway, {MigPlanStatus.FAILED, MigPlanStatus.APPLIED}) == MigPlanStatus.APPLIED
    fresh = NodePool.objects.select_related("gpu_model", "cluster").get(pk=pool.pk)
    assert fresh.capacity() == {"nvidia.com/mig-1g.5gb": 14, "nvidia.com/mig-7g.40gb": 2}
    # The approval's capacity check: the waiting 7g.40gb request fits now.
    waiting = GpuRequest.objects.get(node_pool=pool, status=RequestStatus.PENDING_APPROVAL)
    require_pool_capacity(waiting)
    # Placement offers the profile and places it on the pool; the renderer and KAI shares use the node layout.
    assert ("A100-40GB", "mig", "7g.40gb") in pool_offers([fresh]).offers
    assert pool_offers([fresh]).mig_layouts[("A100-40GB", "7g.40gb")] == {"7g.40gb": 1}
    assert pool_for([fresh], gpu_model="A100-40GB", strategy="mig", mig_profile="7g.40gb") == fresh
    assert pool_context(fresh).mig_layout_holding("7g.40gb") == {"7g.40gb": 1}
    assert resource_gpu_shares([fresh])["nvidia.com/mig-7g.40gb"] == 1


def test_inventory_sync_reads_the_layout_each_node_now_runs_from_its_labels(demo_org, pool, gateway, cluster, settings):
    settings.MIG_CONFIGMAP_PROPAGATION_SECONDS = 0
    plan = _approved_plan(demo_org, pool, gateway)
    (node,) = plan.nodes_to_drain
    other = ({"gpu-a", "gpu-b"} - {node}).pop()
    _finish_pods(cluster, pool, node, gateway)
    with FakeMigManager(cluster):
        assert _run_until(plan, gateway, {MigPlanStatus.FAILED, MigPlanStatus.APPLIED}) == MigPlanStatus.APPLIED
    planned = cluster.get("Node", node)["metadata"]["labels"][CONFIG]
    # Someone points the other node at the plan's config too, and the MIG manager reports success there.
    cluster.edit("Node", other, {"metadata": {"labels": {CONFIG: planned, STATE: "success"}}})
    cluster_sync_inventory(cluster=pool.cluster, nodes=gateway.list_gpu_nodes())
    fresh = NodePool.objects.get(pk=pool.pk)
    assert fresh.capacity() == {"nvidia.com/mig-1g.5gb": 0, "nvidia.com/mig-7g.40gb": 4}
    # A node being reconfigured counts as what it was; back on the pool's own config it runs the configured layout.
    cluster.edit("Node", node, {"metadata": {"labels": {CONFIG: "gpu-portal-a100", STATE: "pending"}}})
    cluster_sync_inventory(cluster=pool.cluster, nodes=gateway.list_gpu_nodes())
    assert NodePool.objects.get(pk=pool.pk).capacity()["nvidia.com/mig-7g.40gb"] == 4
    cluster.edit("Node", node, {"metadata": {"labels": {STATE: "success"}}})
    cluster_sync_inventory(cluster=pool.cluster, nodes=gateway.list_gpu_nodes())
    assert NodePool.objects.get(pk=pool.pk).capacity() == {"nvidia.com/mig-1g.5gb": 14, "nvidia.com/mig-7g.40gb": 2}
    assert set(MigNodeLayout.objects.filter(pool=pool).values_list("node", flat=True)) == {other}
