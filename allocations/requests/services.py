"""Writes: every change to teams' requests goes through here, in a transaction, with its audit event."""

from __future__ import annotations

import logging
import unicodedata
from collections.abc import Mapping
from dataclasses import replace
from datetime import datetime, timedelta
from decimal import ROUND_HALF_UP, Decimal
from typing import Any

from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser
from django.core.exceptions import PermissionDenied, ValidationError
from django.db import transaction
from django.db.models import Sum
from django.utils import timezone

from allocations.clusters.dynamic_mig import admit_dynamic_mig, runs_dynamic_mig
from allocations.clusters.placement import place

# Services queue tasks; tasks import services only inside their bodies (HackSoft's Django styleguide, "Celery").
from allocations.clusters.tasks import provision_request as provision_request_task
from allocations.clusters.tasks import release_request as release_request_task
from allocations.lifecycle import InvalidTransition, gpu_request_transition
from allocations.models import (
    CANCELLABLE_STATUSES,
    QUOTA_HOLDING_STATUSES,
    RELEASABLE_STATUSES,
    TERMINAL_STATUSES,
    Cluster,
    GpuRequest,
    NodePool,
    RequestStatus,
    SlaTier,
    Team,
)
from allocations.notifications import notify_on_commit
from allocations.reference_data import with_default_replicas
from allocations.requests.refusals import (
    CANCEL_REFUSAL,
    RELEASE_REFUSAL,
    pending_refusal,
    reapplier_refusal,
    reapply_status_refusal,
    require_owner_or_lead,
    require_reviewer,
)
from allocations.requests.runnable import command_problem
from allocations.selectors import membership_role
from allocations.teams.quotas import QuotaExceeded, may_borrow, quota_check
from allocations.teams.reservation_holds import reserved_for_other_teams
from audit.services import audit_record
from gpucore.decision import ProfileError, WorkloadProfile
from gpucore.image_refs import image_reference_problem

# --- Submission, approval and the user's own actions -------------------------------------------------------------


def lock_team(team: Team) -> Team:
    """Serialize every quota-affecting write of one team (a row lock on PostgreSQL)."""
    return Team.objects.select_for_update().get(pk=team.pk)


logger = logging.getLogger(__name__)


def _longest_message(longest: timedelta, start: str) -> str:
    hours = int(longest.total_seconds() // 3600)
    return f"{start} {hours:,} hours ({hours // 24} days) from now; ask again or extend it later."


def gpu_request_submit(
    *,
    acting_user: AbstractBaseUser,
    team: Team,
    name: str,
    profile_data: Mapping[str, Any],
    purpose: str = "",
    cluster: Cluster | None = None,
    expires_at: datetime | None = None,
    image: str = "",
    command: list[str] | None = None,
    refuse_open_duplicate: bool = False,
) -> GpuRequest:
    """Recommend, place and freeze the spec on a new request, check quota under a team lock, and queue it.

    Raises ValidationError naming the field (bad profile, no pool, quota exceeded) and writes nothing then. Teams that
    opted in to auto-approval for the request's tier get it approved by policy in the same call.
    ``refuse_open_duplicate``: refuse (on ``name``) when the team has an open request of that name: the browser's form
    asks it unless the user confirmed, so Back then Submit does not make the same request twice.
    """
    if membership_role(user=acting_user, team=team) is None:
        raise PermissionDenied(f"You are not a member of team {team.slug}.")
    errors: dict[str, list[str]] = {}
    if not name or not name.strip():
        errors["name"] = ["Give the request a name."]
    elif any(unicodedata.category(char) in ("Cc", "Zl", "Zp") for char in name):
        errors["name"] = ["The name must be one line: no newlines, tabs or other control characters."]
    longest = timedelta(hours=settings.MAX_REQUEST_HOURS)
    if expires_at is not None and expires_at <= timezone.now():
        errors["expires_at"] = ["The expiry must be in the future."]
    elif expires_at is not None and expires_at > timezone.now() + longest:
        errors["expires_at"] = [_longest_message(longest, "The expiry may be at most")]
    image_problem = image_reference_problem(image) if image else None
    if image_problem:
        errors["image"] = [image_problem]
    command_missing = command_problem(
        workload_type=str(profile_data.get("workload_type", "")), image=image, command=command or []
    )
    if command_missing:
        errors["command"] = [command_missing]
    try:
        profile = WorkloadProfile.from_mapping(with_default_replicas(profile_data))
    except ProfileError as exc:
        errors.update(exc.errors)
        profile = None
    if (
        profile is not None
        and profile.duration_hours is not None
        and profile.duration_hours > settings.MAX_REQUEST_HOURS
    ):
        errors["duration_hours"] = [_longest_message(longest, "A request may last at most")]
    if errors:
        raise ValidationError(errors)
    try:
        placement = place(_priced_until(profile, expires_at), cluster=cluster)
    except ProfileError as exc:
        # A well-formed profile no pool can serve keeps its code: the API answers it 422 (portal.api_errors).
        errors = {
            field: [ValidationError(text, code="unservable") for text in texts] for field, texts in exc.errors.items()
        }
        raise ValidationError(errors) from exc
    spec = placement.spec
    units = int(spec["quantity"]) * int(spec["replicas"])
    tier = SlaTier.objects.filter(slug=profile.sla_tier).first() if profile.sla_tier else None

    with transaction.atomic():
        locked_team = lock_team(team)
        if refuse_open_duplicate:
            _require_name_not_open(team=locked_team, name=name.strip())
        request = GpuRequest(
            team=locked_team,
            requester=acting_user,
            name=name.strip(),
            purpose=purpose,
            workload_type=profile.workload_type.value,
            gpu_memory_gb=profile.gpu_memory_gb,
            gpu_count=profile.gpu_count,
            replicas=profile.replicas,
            latency_sensitive=profile.latency_sensitive,
            latency_p99_ms=profile.latency_p99_ms,
            isolation_required=profile.isolation_required,
            expected_utilization_pct=profile.expected_utilization_pct,
            sla_tier=tier,
            gpu_model_requested=profile.gpu_model or "",
            duration_hours=profile.duration_hours,
            expires_at=expires_at,
            image=image,
            command=list(command or []),
            cluster=placement.node_pool.cluster,
            node_pool=placement.node_pool,
            spec=spec,
            resource_name=spec["resource_name"],
            resource_units=units,
            status=RequestStatus.DRAFT,
        )
        require_quota_fits(request, team=locked_team)
        request.full_clean()
        request.save()
        audit_record(actor=acting_user, obj=request, before=None)
        gpu_request_transition(
            request=request, to_status=RequestStatus.PENDING_APPROVAL, acting_user=acting_user, comment="Submitted"
        )
        if tier is not None and locked_team.auto_approve_tiers.filter(pk=tier.pk).exists():
            _approve_locked(
                request=request,
                acting_user=None,
                actor_label=f"policy:auto-approve ({tier.slug})",
                comment=f"Auto-approved: team {locked_team.slug} opted in for {tier.name}.",
            )
        else:
            notify_on_commit("submitted", request)
    return request


# The code of that refusal: the form then offers to submit anyway.
OPEN_DUPLICATE = "open_duplicate"


def open_request_named(*, team: Team, name: str) -> GpuRequest | None:
    """The team's newest request named ``name`` (case-insensitive) that has not ended, or None."""
    return (
        GpuRequest.objects.filter(team=team, name__iexact=name)
        .exclude(status__in=TERMINAL_STATUSES)
        .order_by("-id")
        .only("id", "name", "status")
        .first()
    )


def duplicate_name_message(request: GpuRequest) -> str:
    """The refusal of a second open request of the same name (a form sent twice, Back then Submit)."""
    return (
        f"Your team already has an open request named \u201c{request.name}\u201d (#{request.pk}, "
        f"{request.get_status_display().lower()}): open it, or give this one another name."
    )


def _require_name_not_open(*, team: Team, name: str) -> None:
    """Raise a ValidationError on ``name`` when the team has an open request of that name (team lock held, so two
    submissions at once cannot both pass)."""
    if (existing := open_request_named(team=team, name=name)) is not None:
        raise ValidationError({"name": [ValidationError(duplicate_name_message(existing), code=OPEN_DUPLICATE)]})


def _priced_until(profile: WorkloadProfile, expires_at: datetime | None) -> WorkloadProfile:
    """The profile to price: with no duration but an expiry, the hours until it, so the spec costs that duration."""
    if profile.duration_hours is not None or expires_at is None:
        return profile
    seconds = Decimal(str((expires_at - timezone.now()).total_seconds()))
    hours = max(Decimal("0.01"), (seconds / 3600).quantize(Decimal("0.01"), ROUND_HALF_UP))
    return replace(profile, duration_hours=hours)


def require_quota_fits(request: GpuRequest, *, team: Team) -> bool:
    """Raise a ValidationError on ``quota`` unless the request's units fit the team's quotas now (team lock held).

    A preemptible tier may borrow beyond the nominal quota; sets and returns ``request.borrowed``.
    """
    borrow = may_borrow(request)
    if borrow and request.cluster_id:
        # Borrowing reads other teams' use: serialize borrowers of one cluster so two never take the same lent unit.
        Cluster.objects.select_for_update().filter(pk=request.cluster_id).exists()
    try:
        headroom = quota_check(
            team=team,
            resource_name=request.resource_name,
            units=request.resource_units,
            node_pool=request.node_pool,
            may_borrow=borrow,
        )
    except QuotaExceeded as exc:
        # The error itself, not its text: it names the quota that refused (the form offers the next steps).
        raise ValidationError({"quota": [exc]}) from exc
    request.borrowed = any(item.borrowed for item in headroom)
    return request.borrowed


def require_pool_capacity(request: GpuRequest) -> None:
    """Raise a ValidationError on ``capacity`` unless the request's units fit what its node pool physically has.

    Quotas are allowances and may add up to more than the hardware; the pool's units (whole GPUs, MIG slices per
    profile or time-sliced shares, ``NodePool.capacity``) are what can exist. The pool's row lock serializes approvals
    of every team on one pool (taken after the team lock, in that order everywhere).
    """
    if request.node_pool_id is None:
        return
    pool = NodePool.objects.select_for_update().select_related("cluster", "gpu_model").get(pk=request.node_pool_id)
    if pool.node_problems:
        first = pool.node_problems[0]
        raise ValidationError(
            {
                "node_pool": [
                    f"Node pool {pool} cannot run it: {first['problem']} (nodes {', '.join(first['nodes'])}). "
                    f"Fix: {first['fix']} The next inventory sync clears this once the nodes agree."
                ]
            }
        )
    if runs_dynamic_mig(pool):
        # No layout to count against: the policy places each instance on a GPU, or refuses naming why.
        admit_dynamic_mig(request, pool)
        return
    capacity = pool.capacity().get(request.resource_name, 0)
    held = (
        GpuRequest.objects.filter(
            node_pool=pool, resource_name=request.resource_name, status__in=QUOTA_HOLDING_STATUSES
        )
        .exclude(pk=request.pk)
        .aggregate(total=Sum("resource_units"))["total"]
        or 0
    )
    holds = reserved_for_other_teams(
        node_pool_id=pool.pk,
        resource_name=request.resource_name,
        team_id=request.team_id,
        start=timezone.now(),
        end=_held_until(request),
    )
    reserved = sum(hold.unclaimed for hold in holds)
    if held + reserved + request.resource_units > capacity:
        why = (
            f"{reserved} reserved for other teams over its run ({'; '.join(h.text for h in holds)}), " if holds else ""
        )
        after = "others are released or the reservation is over" if holds else "others are released"
        raise ValidationError(
            {
                "capacity": [
                    f"Node pool {pool} has {capacity} {request.resource_name} in all: {held} held, {why}"
                    f"{request.resource_units} asked. Approve it when {after}, or add nodes to the pool."
                ]
            }
        )


def _held_until(request: GpuRequest) -> datetime | None:
    """When the request would give its units back if approved now: its expiry, else its duration (None: open)."""
    if request.expires_at is not None:
        return request.expires_at
    if request.duration_hours is not None:
        return timezone.now() + timedelta(hours=float(request.duration_hours))
    return None


def _approve_locked(
    *, request: GpuRequest, acting_user: AbstractBaseUser | None, actor_label: str | None, comment: str
) -> GpuRequest:
    # The caller holds the team lock: re-check the quota and the pool's capacity against what is held now, then approve.
    borrowed = require_quota_fits(request, team=request.team)
    require_pool_capacity(request)
    gpu_request_transition(
        request=request,
        to_status=RequestStatus.APPROVED,
        acting_user=acting_user,
        actor_label=actor_label,
        comment=comment,
        updates={"borrowed": borrowed},
    )
    notify_on_commit("approved", request, comment)
    transaction.on_commit(lambda: provision_request_task.delay(request.pk), robust=True)
    return request


def gpu_request_approve(*, request: GpuRequest, acting_user: AbstractBaseUser, comment: str = "") -> GpuRequest:
    """Approve a pending request if it still fits the team's quota, then hand it to provisioning."""
    require_reviewer(acting_user, request)
    with transaction.atomic():
        lock_team(request.team)
        request.refresh_from_db()
        if pending_refusal(request, RequestStatus.APPROVED):
            raise InvalidTransition(request, RequestStatus.APPROVED)
        return _approve_locked(request=request, acting_user=acting_user, actor_label=None, comment=comment)


def gpu_request_reject(*, request: GpuRequest, acting_user: AbstractBaseUser, comment: str) -> GpuRequest:
    """Reject a pending request; the requester is told why."""
    require_reviewer(acting_user, request)
    if not comment or not comment.strip():
        raise ValidationError({"comment": ["Say why the request is rejected: the requester sees it."]})
    with transaction.atomic():
        gpu_request_transition(
            request=request, to_status=RequestStatus.REJECTED, acting_user=acting_user, comment=comment.strip()
        )
        notify_on_commit("rejected", request, comment.strip())
    return request


def gpu_request_cancel(*, request: GpuRequest, acting_user: AbstractBaseUser, comment: str = "") -> GpuRequest:
    """Withdraw a request that is not yet approved (it ends as released).

    The status is checked under the request's row lock: a cancel racing an approval either lands first (the approval
    then gets 409) or is refused with 409 (the approved request must be released, which tears its workload down).
    """
    require_owner_or_lead(acting_user, request)
    return gpu_request_transition(
        request=request,
        to_status=RequestStatus.RELEASED,
        acting_user=acting_user,
        comment=comment or "Cancelled before approval",
        from_statuses=CANCELLABLE_STATUSES,
        refusal=CANCEL_REFUSAL,
    )


def gpu_request_release(*, request: GpuRequest, acting_user: AbstractBaseUser, comment: str = "") -> GpuRequest:
    """Give an approved or running allocation back: it stops counting against the quota at once."""
    require_owner_or_lead(acting_user, request)
    with transaction.atomic():
        gpu_request_transition(
            request=request,
            to_status=RequestStatus.RELEASED,
            acting_user=acting_user,
            comment=comment or "Released",
            from_statuses=RELEASABLE_STATUSES,
            refusal=RELEASE_REFUSAL,
        )
        transaction.on_commit(lambda: release_request_task.delay(request.pk), robust=True)
    return request


# --- Platform admin operations: re-apply a request, queue an inventory sync ---------------------------------------


def gpu_request_reapply(*, request: GpuRequest, acting_user: AbstractBaseUser, comment: str = "") -> GpuRequest:
    """Hand a failed or active request back to provisioning (platform approvers), re-checking quota and the pool's
    capacity for a failed one."""
    if refusal := reapplier_refusal(acting_user):
        raise PermissionDenied(refusal)
    if refusal := reapply_status_refusal(request):
        raise InvalidTransition(request, RequestStatus.PROVISIONING, refusal)
    with transaction.atomic():
        team = lock_team(request.team)
        request.refresh_from_db()
        if request.status == RequestStatus.FAILED:
            # A failed request holds no quota or pool units; provisioning holds them again, so it has to fit what is
            # held now.
            require_quota_fits(request, team=team)
            require_pool_capacity(request)
        gpu_request_transition(
            request=request,
            to_status=RequestStatus.PROVISIONING,
            acting_user=acting_user,
            comment=comment or "Re-applied to the cluster",
            updates={"status_detail": "Re-applying the objects to the cluster.", "borrowed": request.borrowed},
        )
        transaction.on_commit(lambda: provision_request_task.delay(request.pk), robust=True)
    return request
