"""Idle reclaim writes: warn an idle workload's owner, suspend it (scaled to zero), resume it, or keep it running.

The policy (``gpucore.idle_reclaim``) decides; these write what it decided, each under the request's row lock with a
``RequestEvent`` carrying the hourly readings that justified it (``details``). Suspension scales the Deployment to
zero through the cluster's gateway *before* the status changes, so a request is never marked suspended (and unbilled)
while its pods still hold GPUs; a gateway error leaves it active for the next run.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import timedelta
from typing import Any

from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from django.utils import timezone

from allocations.clusters.gateways.base import ClusterGateway
from allocations.clusters.suspension import workload_scale_to_zero
from allocations.clusters.tasks import provision_request as provision_request_task
from allocations.idle_policy import reclaim_thresholds
from allocations.lifecycle import InvalidTransition, gpu_request_transition
from allocations.models import GpuRequest, RequestEvent, RequestStatus
from allocations.requests.refusals import ROLE_NOT_READ, RoleNotRead, owner_or_lead_refusal, require_owner_or_lead
from allocations.requests.services import lock_team, require_pool_capacity, require_quota_fits
from allocations.selectors import User
from gpucore.idle_reclaim import RECLAIMABLE_WORKLOADS, HourVerdict

POLICY = "system:idle-reclaim"
RESUME_REFUSAL = "Only a suspended request can be resumed; #{pk} is {status}."


def _details(action: str, reason: str, readings: Sequence[HourVerdict], **extra: Any) -> dict[str, Any]:
    return {"idle_reclaim": action, "reason": reason, "readings": [r.as_dict() for r in readings], **extra}


def gpu_request_idle_warn(*, request: GpuRequest, reason: str, readings: Sequence[HourVerdict]) -> bool:
    """Record the idle warning of a running development workload (timeline event with the readings); False when it
    is no longer active or was warned since the run began (a concurrent run), so each warning is written once."""
    with transaction.atomic():
        locked = GpuRequest.objects.select_for_update().get(pk=request.pk)
        if locked.status != RequestStatus.ACTIVE or locked.workload_type not in RECLAIMABLE_WORKLOADS:
            return False
        if readings and locked.idle_warned_at is not None and locked.idle_warned_at >= readings[0].hour:
            return False
        now = timezone.now()
        GpuRequest.objects.filter(pk=locked.pk).update(idle_warned_at=now)
        RequestEvent.objects.create(
            request=locked,
            actor_label=POLICY,
            from_status=locked.status,
            to_status=locked.status,
            comment=f"Idle warning: {reason}",
            details=_details("warn", reason, readings),
        )
    request.idle_warned_at = now
    return True


def gpu_request_suspend(
    *, request: GpuRequest, reason: str, readings: Sequence[HourVerdict], gateway: ClusterGateway | None = None
) -> bool:
    """Scale an idle development workload to zero and mark it suspended (billing stops now); False when it is no
    longer active. Gateway errors propagate with the request still active."""
    if request.status != RequestStatus.ACTIVE or request.workload_type not in RECLAIMABLE_WORKLOADS:
        return False
    workload_scale_to_zero(request=request, gateway=gateway)
    now = timezone.now()
    detail = f"Suspended for idling: {reason} Resume it from its page or POST .../resume/."
    try:
        gpu_request_transition(
            request=request,
            to_status=RequestStatus.SUSPENDED,
            acting_user=None,
            actor_label=POLICY,
            comment=f"Suspended: {reason}",
            updates={"suspended_at": now, "status_detail": detail},
            from_statuses=frozenset({RequestStatus.ACTIVE}),
            details=_details("suspend", reason, readings, suspended_at=now.isoformat()),
        )
    except InvalidTransition:
        # Released or re-applied while we scaled: its own path owns the objects now (release deletes them, a re-apply
        # applies them at their replicas again).
        return False
    return True


def resume_refusal(*, user: User, request: GpuRequest, role: str | RoleNotRead | None = ROLE_NOT_READ) -> str | None:
    """Why ``user`` may not resume ``request`` now (who they are, or it is not suspended), or None."""
    if refusal := owner_or_lead_refusal(user=user, request=request, role=role):
        return refusal
    if request.status != RequestStatus.SUSPENDED:
        return RESUME_REFUSAL.format(pk=request.pk, status=request.status)
    return None


def gpu_request_resume(*, request: GpuRequest, acting_user: AbstractBaseUser, comment: str = "") -> GpuRequest:
    """Bring a suspended request back if the team's quota and the pool still have room: to provisioning, which
    applies its objects again at their replicas; idle hours count again from now."""
    require_owner_or_lead(acting_user, request)
    with transaction.atomic():
        team = lock_team(request.team)
        request.refresh_from_db()
        if request.status != RequestStatus.SUSPENDED:
            raise InvalidTransition(
                request, RequestStatus.PROVISIONING, RESUME_REFUSAL.format(pk=request.pk, status=request.status)
            )
        # A suspended request holds no quota: resuming holds it again, so it has to fit what is held now.
        require_quota_fits(request, team=team)
        require_pool_capacity(request)
        gpu_request_transition(
            request=request,
            to_status=RequestStatus.PROVISIONING,
            acting_user=acting_user,
            comment=comment or "Resumed after an idle suspension",
            updates={
                "suspended_at": None,
                "idle_warned_at": None,
                "status_detail": "Resuming: applying the objects again.",
                "borrowed": request.borrowed,
            },
            from_statuses=frozenset({RequestStatus.SUSPENDED}),
            refusal=RESUME_REFUSAL,
        )
        transaction.on_commit(lambda: provision_request_task.delay(request.pk), robust=True)
    return request


def _keep_status_refusal(request: GpuRequest) -> str | None:
    if request.status != RequestStatus.ACTIVE or request.workload_type not in RECLAIMABLE_WORKLOADS:
        return f"Only an active development workload can be kept from idle reclaim; #{request.pk} is {request.status}."
    thresholds = reclaim_thresholds(request.sla_tier.slug if request.sla_tier_id else None)
    window = timedelta(hours=thresholds.window_hours)
    if request.idle_kept_at is not None and timezone.now() < request.idle_kept_at + window:
        return (
            f"Request #{request.pk} was already kept at {request.idle_kept_at:%Y-%m-%d %H:%M} UTC: it can be kept once "
            f"per idle window ({thresholds.window_hours} h)."
        )
    return None


def keep_refusal(*, user: User, request: GpuRequest, role: str | RoleNotRead | None = ROLE_NOT_READ) -> str | None:
    """Why ``user`` may not defer ``request``'s idle reclaim now, or None."""
    if request.status != RequestStatus.ACTIVE or request.workload_type not in RECLAIMABLE_WORKLOADS:
        return _keep_status_refusal(request)  # no role read for the requests this never applies to
    return owner_or_lead_refusal(user=user, request=request, role=role) or _keep_status_refusal(request)


def gpu_request_keep(*, request: GpuRequest, acting_user: AbstractBaseUser, comment: str = "") -> GpuRequest:
    """Defer the idle reclaim of a running development workload: idle hours count again from now (once per window)."""
    require_owner_or_lead(acting_user, request)
    with transaction.atomic():
        # of=("self",): PostgreSQL cannot lock the nullable side of the tier's outer join.
        locked = GpuRequest.objects.select_for_update(of=("self",)).select_related("sla_tier").get(pk=request.pk)
        if refusal := _keep_status_refusal(locked):
            raise InvalidTransition(locked, locked.status, refusal)
        now = timezone.now()
        GpuRequest.objects.filter(pk=locked.pk).update(idle_kept_at=now, idle_warned_at=None)
        RequestEvent.objects.create(
            request=locked,
            actor=acting_user,
            actor_label=acting_user.get_username(),
            from_status=locked.status,
            to_status=locked.status,
            comment=comment or "Kept running: idle reclaim deferred for one window.",
            details={"idle_reclaim": "keep"},
        )
    request.idle_kept_at, request.idle_warned_at = now, None
    return request
