"""The pool's MIG page: who sees it, who gets the buttons, and a plan made from the browser form."""

from __future__ import annotations

from decimal import Decimal

import pytest
from django.test import Client

from allocations.models import GpuModel, MigPlan, SharingMode
from tests.factories import ROLES, NodePoolFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def pool(demo_org):
    return NodePoolFactory(
        cluster=demo_org.cluster,
        name="a30",
        gpu_model=GpuModel.objects.get(name="A30"),
        node_count=1,
        gpus_per_node=2,
        sharing_mode=SharingMode.MIG,
        mig_devices={"4g.24gb": 1},
    )


def _client(demo_org, role: str) -> Client:
    client = Client()
    client.force_login(demo_org.user(role))
    return client


@pytest.mark.parametrize(("role", "status"), [(r, 200 if r in ("platform_admin", "approver") else 403) for r in ROLES])
def test_only_approvers_and_admins_see_the_page(demo_org, pool, role, status):
    assert _client(demo_org, role).get(f"/clusters/demo/pools/{pool.name}/mig/").status_code == status


def test_a_plan_from_the_form_and_buttons_only_for_admins(demo_org, pool):
    approver = _client(demo_org, "approver")
    response = approver.post(
        f"/clusters/demo/pools/{pool.name}/mig/",
        {"headroom_pct": 0, "max_unavailable": 1, "drain_timeout_seconds": 60, "drain_policy": "stop", "nodes": "n1"},
    )
    assert response.status_code == 302
    plan = MigPlan.objects.get()
    assert plan.created_by == demo_org.approver and plan.pool_gpus == 2
    page = approver.get(f"/clusters/demo/pools/{pool.name}/mig/").content.decode()
    assert 'id="plan-status"' in page and 'id="approve-plan"' not in page
    admin_page = _client(demo_org, "platform_admin").get(f"/clusters/demo/pools/{pool.name}/mig/").content.decode()
    assert 'id="approve-plan"' in admin_page
    # The approver cannot approve by posting either.
    refused = approver.post(f"/clusters/demo/pools/{pool.name}/mig/{plan.pk}/approve/")
    assert refused.status_code == 403
    plan.refresh_from_db()
    assert plan.status == "proposed"


def test_a_form_without_nodes_on_a_gitops_cluster_says_which_field(demo_org, pool):
    response = _client(demo_org, "approver").post(
        f"/clusters/demo/pools/{pool.name}/mig/",
        {"headroom_pct": 0, "max_unavailable": 1, "drain_timeout_seconds": 60, "drain_policy": "stop"},
    )
    assert response.status_code == 400
    assert "Name the pool" in response.content.decode() and not MigPlan.objects.exists()


def _plan(demo_org, pool) -> MigPlan:
    _client(demo_org, "approver").post(
        f"/clusters/demo/pools/{pool.name}/mig/",
        {"headroom_pct": 0, "max_unavailable": 1, "drain_timeout_seconds": 60, "drain_policy": "stop", "nodes": "n1"},
    )
    plan = MigPlan.objects.get()
    # Two unused A30s at 1.00 an hour (this organisation's catalog has no A30 price).
    plan.monthly_cost_delta, plan.price_basis = Decimal("-1460.0000"), "test price"
    plan.save()
    return plan


def test_gpus_a_plan_leaves_unused_are_no_saving_until_released(demo_org, pool):
    plan = _plan(demo_org, pool)
    assert plan.gpus_freed == 2 and plan.monthly_cost_delta < 0
    assert plan.unused_monthly_value == -plan.monthly_cost_delta and plan.added_monthly_cost is None
    page = _client(demo_org, "approver").get(f"/clusters/demo/pools/{pool.name}/mig/").content.decode()
    assert '<dd id="gpus-unused">2 GPUs</dd>' in page
    effect = page.partition('id="cost-effect">')[2].partition("</dd>")[0]
    assert effect.startswith("None: the plan releases no GPU.")
    assert "keep their layout and stay in the pool" in effect and "a saving only once the pool is scaled down" in effect
    assert "worth 1,460.00 USD a month" in effect and "GPUs freed" not in page


def test_gpus_a_plan_needs_are_a_cost_and_the_diff_lists_only_changed_gpus(demo_org, pool):
    plan = _plan(demo_org, pool)
    plan.gpu_count, plan.monthly_cost_delta = 3, abs(plan.monthly_cost_delta) / 2
    plan.gpus = [
        {**plan.gpus[0], "changed": True, "index": 0, "proposed": {"1g.6gb": 4}},
        {**plan.gpus[1], "changed": False, "index": 1},
    ]
    plan.gpus_changed = 1
    plan.save()
    page = _client(demo_org, "approver").get(f"/clusters/demo/pools/{pool.name}/mig/").content.decode()
    assert '<dd id="gpus-to-add" class="no">+1</dd>' in page
    assert page.partition('id="cost-effect">')[2].startswith("+")
    diff = page.partition('id="plan-diff"')[2].partition("</table>")[0]
    assert diff.count('<tr class="changed"') == 1 and "<ins>4× 1g.6gb</ins>" in diff  # noqa: RUF001
