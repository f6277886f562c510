"""Celery tasks that roll MIG plans out: thin loops over ``mig_plan_rollout_step``, which holds the state."""

from __future__ import annotations

import time
from typing import Any

from celery import Task, shared_task
from django.conf import settings

from allocations.clusters.gateways.base import TransientGatewayError


class MigPlanTask(Task):
    """A task about one plan: acked late and re-delivered if its worker dies; a final error is kept on the plan."""

    acks_late = True
    reject_on_worker_lost = True

    def on_failure(self, exc: BaseException, task_id: str, args: tuple, kwargs: dict, einfo: Any) -> None:
        from allocations.models import MigPlan

        plan_id = args[0] if args else kwargs.get("plan_id")
        if plan_id is not None:
            MigPlan.objects.filter(pk=plan_id).update(error=f"{type(exc).__name__}: {exc}", task_id=task_id)


@shared_task(
    name="allocations.apply_mig_plan",
    base=MigPlanTask,
    bind=True,
    autoretry_for=(TransientGatewayError,),
    retry_backoff=5,
    retry_backoff_max=300,
    max_retries=12,
)
def apply_mig_plan(self: Task, plan_id: int) -> str:
    """Drive a plan's rollout pass after pass until it is applied or stops; re-queue itself after a while."""
    from allocations.mig_plans.rollout import mig_plan_rollout_step
    from allocations.models import MigPlan, MigPlanStatus

    MigPlan.objects.filter(pk=plan_id).update(task_id=self.request.id or "")
    poll = float(settings.MIG_PLAN_POLL_SECONDS)
    deadline = time.monotonic() + float(settings.MIG_PLAN_TASK_SECONDS)
    status = mig_plan_rollout_step(plan_id=plan_id)
    while status == MigPlanStatus.APPLYING and time.monotonic() < deadline:
        time.sleep(poll)
        status = mig_plan_rollout_step(plan_id=plan_id)
    if status == MigPlanStatus.APPLYING:
        # Nodes reboot for minutes: give the worker back and continue in a fresh task.
        apply_mig_plan.apply_async((plan_id,), countdown=poll)
    return str(status)


@shared_task(name="allocations.resume_mig_plans", acks_late=True)
def resume_mig_plans() -> int:
    """Beat: re-queue plans being applied whose rollout has not moved for two minutes (their worker was lost)."""
    from allocations.mig_plans.rollout import stalled_mig_plan_ids

    stalled = stalled_mig_plan_ids()
    for plan_id in stalled:
        apply_mig_plan.delay(plan_id)
    return len(stalled)
