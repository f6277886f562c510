"""A MIG plan's rollout through real Celery workers: the worker is SIGKILLed while the MIG manager reboots the node,
and the replacement worker (the unacknowledged message redelivered) finishes the rollout from the stored step.

The workers, the broker and the emulator are those of ``celery_workers`` (same fixtures); the fake MIG manager is
``test_mig_plan_rollout``'s, held in ``rebooting`` until the first worker is dead.
"""

from __future__ import annotations

import signal
import threading
import time

import pytest

from allocations.mig_plans.services import mig_plan_apply, mig_plan_approve, mig_plan_create
from allocations.models import GpuModel, MigNodeLayout, MigPlan, MigPlanStatus, RequestStatus, SharingMode
from tests.allocations.test_mig_plan_rollout import FakeMigManager, _gpu_pod, _node
from tests.factories import DemoOrg, GpuRequestFactory, NodePoolFactory
from tests.integration.celery_workers import (  # noqa: F401 (fixtures)
    TASK_TIMEOUT_S,
    VISIBILITY_TIMEOUT_S,
    Workers,
    cluster,
    org,
    workers,
)
from tests.integration.k8s_emulator import EmulatedCluster

pytestmark = [
    pytest.mark.integration,
    pytest.mark.postgres,
    pytest.mark.redis,
    pytest.mark.django_db(transaction=True),
]


def _step(plan: MigPlan, node: str) -> str:
    plan.refresh_from_db()
    return ((plan.progress or {}).get("nodes", {}).get(node) or {}).get("step", "")


def _wait(condition, what: str, started: Workers, timeout: float = TASK_TIMEOUT_S) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(0.1)
    pytest.fail(f"timed out waiting for {what}\n{started.logs()}")


def test_a_worker_killed_mid_rollout_is_replaced_and_the_rollout_finishes_once(
    workers: Workers,  # noqa: F811 (the fixtures imported above)
    cluster: EmulatedCluster,  # noqa: F811
    org: DemoOrg,  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("MIG_PLAN_POLL_SECONDS", "0.1")
    monkeypatch.setenv("MIG_PLAN_TASK_SECONDS", "120")
    monkeypatch.setenv("MIG_CONFIGMAP_PROPAGATION_SECONDS", "0")
    cluster.put(_node("gpu-a"))
    cluster.put(_node("gpu-b"))
    pool = NodePoolFactory(
        cluster=org.cluster,
        name="a100",
        gpu_model=GpuModel.objects.get(name="A100-40GB"),
        node_count=2,
        gpus_per_node=2,
        sharing_mode=SharingMode.MIG,
        mig_devices={"1g.5gb": 7},
        node_labels={"pool": "a100"},
    )
    running = GpuRequestFactory(
        team=org.team,
        cluster=org.cluster,
        node_pool=pool,
        status=RequestStatus.ACTIVE,
        resource_name="nvidia.com/mig-1g.5gb",
        resource_units=1,
    )
    cluster.put(_gpu_pod(f"gpr-{running.pk}-0", "gpu-a", running.pk))
    GpuRequestFactory(
        team=org.team,
        cluster=org.cluster,
        node_pool=pool,
        status=RequestStatus.APPROVED,
        resource_name="nvidia.com/mig-7g.40gb",
        resource_units=2,
    )
    plan = mig_plan_create(acting_user=org.approver, pool=pool)
    # The running 1g.5gb stays on gpu-a; gpu-b's two idle GPUs become 7g.40gb.
    assert plan.nodes_to_drain == ["gpu-b"] and plan.requests_to_move == []
    plan = mig_plan_approve(plan_=plan, acting_user=org.platform_admin)

    hold = threading.Event()
    with FakeMigManager(cluster, hold=hold):
        first = workers.start()
        mig_plan_apply(plan_=plan, acting_user=org.platform_admin)  # publishes on commit
        _wait(lambda: _step(plan, "gpu-b") == "configuring", "the first worker to label gpu-b", workers)
        delivered_by = time.monotonic()
        first.kill()
        assert first.process.returncode == -signal.SIGKILL
        assert cluster.get("Node", "gpu-b")["spec"]["unschedulable"] is True
        hold.set()  # the MIG manager finishes while no worker runs
        _wait(
            lambda: cluster.get("Node", "gpu-b")["metadata"]["labels"].get("nvidia.com/mig.config.state") == "success",
            "the MIG manager's success",
            workers,
        )
        plan.refresh_from_db()
        assert plan.status == MigPlanStatus.APPLYING

        time.sleep(max(0.0, delivered_by + VISIBILITY_TIMEOUT_S + 0.5 - time.monotonic()))
        workers.start()
        _wait(lambda: MigPlan.objects.get(pk=plan.pk).status == MigPlanStatus.APPLIED, "the rollout to finish", workers)

    node = cluster.get("Node", "gpu-b")
    assert node["spec"]["unschedulable"] is False
    assert MigNodeLayout.objects.get(pool=pool, node="gpu-b").gpus == [{"7g.40gb": 1}, {"7g.40gb": 1}]
    plan.refresh_from_db()
    messages = [e.message for e in plan.events.all()]
    # Each step once, although two workers ran the task: gpu-b was cordoned and labelled once, uncordoned once.
    assert sum("cordoned;" in m for m in messages) == 1, messages
    assert sum("no GPU pods left" in m for m in messages) == 1, messages
    assert sum("uncordoned" in m for m in messages) == 1, messages
    cordons = [r for r in cluster.requests if r.method.value == "PATCH" and '"unschedulable": true' in r.text]
    assert len(cordons) == 1
    assert cluster.get("Node", "gpu-a")["metadata"]["labels"]["nvidia.com/mig.config"] == "gpu-portal-a100"
