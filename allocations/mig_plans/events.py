"""The MIG plan state machine's one write path: a status change or a rollout step, with its event, in order."""

from __future__ import annotations

from django.contrib.auth.models import AbstractBaseUser

from allocations.models import MIG_PLAN_TRANSITIONS, MigPlan, MigPlanEvent

ONLY_PLANNERS = "Only platform approvers and admins can make MIG plans."
ONLY_ADMINS = "Only platform admins can approve or apply a MIG plan."


class InvalidPlanTransition(Exception):
    """The plan's status does not allow the action (the API answers 409)."""


def user_is_platform_admin(user: AbstractBaseUser) -> bool:
    """Platform admins: active staff users (approvers without staff rights review, but do not change nodes)."""
    return bool(user.is_authenticated and user.is_active and user.is_staff)


def _actor(user: AbstractBaseUser | None) -> str:
    return user.get_username() if user is not None else "rollout"


def record_plan_event(
    plan_: MigPlan, *, to: str, actor: AbstractBaseUser | None = None, node: str = "", message: str = ""
) -> None:
    MigPlanEvent.objects.create(
        plan=plan_,
        actor=actor,
        actor_label=_actor(actor),
        from_status=plan_.status if plan_.status != to else "",
        to_status=to,
        node=node,
        message=message,
    )


def move_plan(plan_: MigPlan, to: str, *, actor: AbstractBaseUser | None = None, message: str = "") -> None:
    if to not in MIG_PLAN_TRANSITIONS[plan_.status]:
        raise InvalidPlanTransition(f"A {plan_.get_status_display().lower()} MIG plan cannot become {to}.")
    record_plan_event(plan_, to=to, actor=actor, message=message)
    plan_.status = to
