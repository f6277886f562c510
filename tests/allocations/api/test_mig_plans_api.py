"""/api/v1/clusters/{name}/node-pools/{pool}/mig-plans/: the role matrix, the plan's fields, its state machine, and
the GitOps rollout (the same ConfigMap and node labels written to the tree)."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest
import yaml

from allocations.mig_plans.rollout import mig_plan_rollout_step
from allocations.models import GpuModel, MigNodeLayout, MigPlan, RequestStatus, SharingMode
from tests.factories import ROLES, GpuRequestFactory, NodePoolFactory

pytestmark = pytest.mark.django_db

NODES = ["a30-node-1", "a30-node-2"]


@pytest.fixture
def pool(demo_org):
    """A GitOps cluster's A30 pool: two nodes of one GPU at 4 x 1g.6gb, and demand for 2g.12gb and 4g.24gb."""
    node_pool = NodePoolFactory(
        cluster=demo_org.cluster,
        name="a30",
        gpu_model=GpuModel.objects.get(name="A30"),
        node_count=2,
        gpus_per_node=1,
        sharing_mode=SharingMode.MIG,
        mig_devices={"1g.6gb": 4},
    )
    for resource, units, status in [
        ("nvidia.com/mig-2g.12gb", 2, RequestStatus.APPROVED),
        ("nvidia.com/mig-4g.24gb", 1, RequestStatus.PENDING_APPROVAL),
        ("nvidia.com/mig-1g.6gb", 1, RequestStatus.REJECTED),  # not demand
    ]:
        GpuRequestFactory(
            team=demo_org.team,
            cluster=demo_org.cluster,
            node_pool=node_pool,
            status=status,
            resource_name=resource,
            resource_units=units,
        )
    return node_pool


def url(pool, suffix: str = "") -> str:
    return f"/api/v1/clusters/{pool.cluster.name}/node-pools/{pool.name}/mig-plans/{suffix}"


@pytest.mark.parametrize(("role", "status"), [(r, 201 if r in ("platform_admin", "approver") else 403) for r in ROLES])
def test_approvers_and_admins_make_plans(client_as, pool, role, status):
    response = client_as(role).post(url(pool), {"nodes": NODES}, format="json")
    assert response.status_code == status, response.content
    listing = client_as(role).get(url(pool))
    assert listing.status_code == (200 if status == 201 else 403)


def test_a_plan_shows_current_and_proposed_layouts_and_what_it_costs(client_as, pool):
    body = client_as("approver").post(url(pool), {"nodes": NODES, "headroom_pct": 0}, format="json").json()
    assert body["status"] == "proposed" and body["demand"] == {"2g.12gb": 2, "4g.24gb": 1}
    # 2 x 2g.12gb fill one A30 and 4g.24gb the other: both GPUs change from 4 x 1g.6gb.
    assert (body["gpu_count"], body["pool_gpus"], body["gpus_changed"], body["gpus_needed"]) == (2, 2, 2, 0)
    assert body["nodes_to_drain"] == NODES
    proposed = sorted(tuple(sorted(g["proposed"].items())) for g in body["gpus"])
    assert proposed == [(("2g.12gb", 2),), (("4g.24gb", 1),)]
    assert all(g["current"] == {"1g.6gb": 4} for g in body["gpus"])
    # A30 has no catalog list price: no cost effect rather than a guessed one.
    assert body["monthly_cost_delta"] is None and body["price_basis"] == ""
    assert [e["to_status"] for e in body["events"]] == ["proposed"]


def test_headroom_raises_the_demand(client_as, pool):
    body = client_as("approver").post(url(pool), {"nodes": NODES, "headroom_pct": 50}, format="json").json()
    assert body["demand"] == {"2g.12gb": 3, "4g.24gb": 2}
    assert body["gpus_needed"] == 2 and body["gpu_count"] == 4


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"nodes": NODES, "headroom_pct": -1}, "headroom_pct"),
        ({"nodes": NODES, "max_unavailable": 0}, "max_unavailable"),
        ({"nodes": NODES, "drain_policy": "shrug"}, "drain_policy"),
        ({}, "nodes"),
    ],
)
def test_bad_settings_name_the_field(client_as, pool, body, field):
    response = client_as("approver").post(url(pool), body, format="json")
    assert response.status_code == 400 and field in response.json(), response.content


def test_a_pool_that_is_not_mig_is_refused(client_as, demo_org):
    response = client_as("approver").post(url(demo_org.pool), {"nodes": NODES}, format="json")
    assert response.status_code == 400 and "pool" in response.json()


def test_unknown_pool_is_404(client_as, pool):
    assert (
        client_as("approver").get(f"/api/v1/clusters/{pool.cluster.name}/node-pools/nope/mig-plans/").status_code == 404
    )


@pytest.mark.parametrize(("role", "status"), [(r, 200 if r == "platform_admin" else 403) for r in ROLES])
def test_only_platform_admins_approve(client_as, pool, role, status):
    plan_id = client_as("approver").post(url(pool), {"nodes": NODES}, format="json").json()["id"]
    response = client_as(role).post(url(pool, f"{plan_id}/approve/"), {"comment": "ok"}, format="json")
    assert response.status_code == status, response.content


def test_the_state_machine_answers_409_out_of_order(client_as, pool):
    admin = client_as("platform_admin")
    plan_id = admin.post(url(pool), {"nodes": NODES}, format="json").json()["id"]
    assert admin.post(url(pool, f"{plan_id}/apply/"), {}, format="json").status_code == 409
    assert admin.post(url(pool, f"{plan_id}/approve/"), {}, format="json").status_code == 200
    assert admin.post(url(pool, f"{plan_id}/approve/"), {}, format="json").status_code == 409
    assert admin.post(url(pool, f"{plan_id}/cancel/"), {}, format="json").status_code == 200
    assert admin.post(url(pool, f"{plan_id}/apply/"), {}, format="json").status_code == 409
    events = admin.get(url(pool, f"{plan_id}/")).json()["events"]
    assert [(e["from_status"], e["to_status"]) for e in events] == [
        ("", "proposed"),
        ("proposed", "approved"),
        ("approved", "cancelled"),
    ]


def test_a_gitops_rollout_writes_the_configmap_and_node_labels_to_the_tree(
    client_as, pool, settings, tmp_path: Path, django_capture_on_commit_callbacks
):
    settings.PORTAL_GITOPS_ROOT = tmp_path
    admin = client_as("platform_admin")
    plan_id = admin.post(url(pool), {"nodes": NODES}, format="json").json()["id"]
    admin.post(url(pool, f"{plan_id}/approve/"), {}, format="json")
    # The apply queues the task on commit; here the pass is run directly (unit test of the task's body).
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        assert admin.post(url(pool, f"{plan_id}/apply/"), {}, format="json").status_code == 202
    assert len(callbacks) == 1
    assert mig_plan_rollout_step(plan_id=plan_id) == "applied"
    tree = tmp_path / pool.cluster.gitops_path
    configs = yaml.safe_load(
        yaml.safe_load((tree / "namespaces/gpu-operator/configmap-gpu-portal-mig-parted-config.yaml").read_text())[
            "data"
        ]["config.yaml"]
    )["mig-configs"]
    plan = MigPlan.objects.get(pk=plan_id)
    for node in NODES:
        written = yaml.safe_load((tree / f"cluster/nodes/{node}.yaml").read_text())
        name = written["metadata"]["labels"]["nvidia.com/mig.config"]
        layout = MigNodeLayout.objects.get(pool=pool, node=node)
        assert layout.config_name == name and configs[name][0]["mig-devices"] == layout.gpus[0]
    assert plan.events.last().to_status == "applied"
    # The next beat of the cluster's own objects keeps the plan's configs in the ConfigMap.
    from allocations.clusters.rendering import cluster_objects

    (configmap,) = [o for o in cluster_objects(pool.cluster) if o["metadata"]["name"] == "gpu-portal-mig-parted-config"]
    assert set(yaml.safe_load(configmap["data"]["config.yaml"])["mig-configs"]) >= {
        MigNodeLayout.objects.get(pool=pool, node=n).config_name for n in NODES
    }


def test_every_plan_decision_and_the_rollout_outcome_are_in_the_audit_trail(
    client_as, pool, settings, tmp_path: Path, django_capture_on_commit_callbacks
):
    from audit.models import AuditEvent

    settings.PORTAL_GITOPS_ROOT = tmp_path
    admin = client_as("platform_admin")
    plan_id = admin.post(url(pool), {"nodes": NODES}, format="json").json()["id"]
    admin.post(url(pool, f"{plan_id}/approve/"), {"comment": "fits the demand"}, format="json")
    with django_capture_on_commit_callbacks(execute=False):
        admin.post(url(pool, f"{plan_id}/apply/"), {}, format="json")
    mig_plan_rollout_step(plan_id=plan_id)
    trail = AuditEvent.objects.filter(object_type="allocations.migplan", object_id=str(plan_id)).order_by("at", "pk")
    statuses = [(e.action, (e.before or {}).get("status"), (e.after or {}).get("status")) for e in trail]
    assert [s[1:] for s in statuses] == [
        (None, "proposed"),
        ("proposed", "approved"),
        ("approved", "applying"),
        ("applying", "applied"),
    ], statuses
    assert [e.actor_label for e in trail][-1] == "rollout"
    assert trail[1].comment == "fits the demand"


def test_an_unreachable_cluster_answers_502_with_the_reason(client_as, pool):
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    pool.cluster.backend = "kubernetes"
    pool.cluster.api_endpoint = f"http://127.0.0.1:{port}"
    pool.cluster.save()

    response = client_as("platform_admin").post(url(pool), {}, format="json")

    assert response.status_code == 502, response.content
    assert response.json()["detail"].startswith("The cluster could not be read:")
    assert not MigPlan.objects.exists()
