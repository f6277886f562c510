"""Writes of reservations: a team lead asks for units of a pool for a window, a platform approver approves or
declines, the asker or a lead cancels. Each write is audited in its transaction; a decision that changes what a Kueue
cluster's queues should carry queues the reconcile task once committed."""

from __future__ import annotations

from datetime import datetime, timedelta

from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser
from django.core.exceptions import PermissionDenied, ValidationError
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from allocations.models import QUOTA_HOLDING_STATUSES, GpuRequest, NodePool, Reservation, ReservationStatus, Team
from allocations.reservations.selectors import (
    pools_for_team,
    reservation_cancel_refusal,
    reservation_create_refusal,
    reservation_decide_refusal,
)
from allocations.reservations.tasks import reconcile_reservation_quotas
from allocations.teams.quotas import applicable_quotas
from allocations.teams.reservation_holds import approved_overlapping
from audit.services import audit_record, audit_snapshot


def _window_errors(*, start: datetime | None, end: datetime | None, now: datetime) -> dict[str, str]:
    errors: dict[str, str] = {}
    if start is None:
        errors["start"] = "Give the window's start."
    elif start <= now:
        errors["start"] = "The window must start in the future."
    if end is None:
        errors["end"] = "Give the window's end."
    elif start is not None and end <= start:
        errors["end"] = "The window must end after it starts."
    elif start is not None and end - start > timedelta(days=settings.RESERVATION_MAX_DAYS):
        errors["end"] = f"A reservation lasts at most {settings.RESERVATION_MAX_DAYS} days; make another after it."
    if start is not None and start > now + timedelta(days=settings.RESERVATION_HORIZON_DAYS):
        errors["start"] = f"Reserve at most {settings.RESERVATION_HORIZON_DAYS} days ahead."
    return errors


def _quota_error(*, team: Team, pool: NodePool, resource_name: str, quantity: int) -> str | None:
    """Why the team's quotas do not allow ``quantity`` units on the pool (nominal plus what it may borrow), or None."""
    quotas = applicable_quotas(team=team, resource_name=resource_name, node_pool=pool)
    if not quotas:
        return f"Team {team.slug} has no quota for {resource_name} on {pool}. Ask a platform admin for one."
    for quota in quotas:
        allowed = quota.limit + ((quota.borrowing_limit or 0) if quota.in_cohort else 0)
        if quantity > allowed:
            return (
                f"Team {team.slug}'s quota allows at most {allowed} {resource_name} ({quota.scope_label}: "
                f"{quota.limit} nominal, {allowed - quota.limit} borrowable); ask for a quota increase first."
            )
    return None


def _capacity_error(
    *,
    pool: NodePool,
    resource_name: str,
    quantity: int,
    start: datetime,
    end: datetime,
    team: Team,
    exclude: int | None,
) -> str | None:
    """Why the pool cannot hold ``quantity`` more for the window: its units, other approved reservations that meet
    it, and (when approving) other teams' allocations that run into it."""
    capacity = pool.capacity().get(resource_name, 0)
    overlapping = approved_overlapping(node_pool_id=pool.pk, resource_name=resource_name, start=start, end=end)
    if exclude is not None:
        overlapping = overlapping.exclude(pk=exclude)
    reserved = sum(item.quantity for item in overlapping)
    held_by_others = sum(
        GpuRequest.objects.filter(node_pool=pool, resource_name=resource_name, status__in=QUOTA_HOLDING_STATUSES)
        .exclude(team=team)
        .filter(Q(expires_at__isnull=True) | Q(expires_at__gt=start))
        .values_list("resource_units", flat=True)
    )
    if reserved + held_by_others + quantity <= capacity:
        return None
    return (
        f"Node pool {pool} has {capacity} {resource_name} in all: {reserved} already reserved and {held_by_others} "
        f"held by other teams' allocations that run into the window, {quantity} asked. Choose another window or "
        f"pool, or fewer units."
    )


def reservation_create(
    *,
    acting_user: AbstractBaseUser,
    team: Team,
    node_pool: NodePool,
    resource_name: str,
    quantity: int,
    start: datetime,
    end: datetime,
    reason: str = "",
) -> Reservation:
    """Ask for ``quantity`` units of the pool's resource for [start, end): a future window, within the pool's units
    and what the team's quota allows, not over what other approved reservations leave. It waits for an approver."""
    refusal = reservation_create_refusal(user=acting_user, team=team)
    if refusal:
        raise PermissionDenied(refusal)
    now = timezone.now()
    with transaction.atomic():
        Team.objects.select_for_update().filter(pk=team.pk).first()
        errors = _window_errors(start=start, end=end, now=now)
        if node_pool.pk not in {pool.pk for pool in pools_for_team(team=team)}:
            errors["node_pool"] = f"Team {team.slug} has no quota on node pool {node_pool}."
        else:
            capacity = node_pool.capacity().get(resource_name)
            if capacity is None:
                offered = ", ".join(sorted(node_pool.capacity())) or "nothing"
                errors["resource_name"] = f"Node pool {node_pool} offers {offered}, not {resource_name}."
            elif quantity is None or quantity < 1:
                errors["quantity"] = "Reserve at least one unit."
            elif quantity > capacity:
                errors["quantity"] = f"Node pool {node_pool} has {capacity} {resource_name} in all."
            elif quota_error := _quota_error(team=team, pool=node_pool, resource_name=resource_name, quantity=quantity):
                errors["quantity"] = quota_error
            elif not errors and (
                capacity_error := _capacity_error(
                    pool=node_pool,
                    resource_name=resource_name,
                    quantity=quantity,
                    start=start,
                    end=end,
                    team=team,
                    exclude=None,
                )
            ):
                errors["quantity"] = capacity_error
        if errors:
            raise ValidationError(errors)
        reservation = Reservation(
            team=team,
            node_pool=node_pool,
            resource_name=resource_name,
            quantity=quantity,
            start=start,
            end=end,
            reason=(reason or "").strip(),
            requested_by=acting_user,
        )
        reservation.full_clean()
        reservation.save()
        audit_record(actor=acting_user, obj=reservation, before=None)
    return reservation


def _on_kueue(reservation: Reservation) -> None:
    """Queue the reconcile of the reservation's cluster once committed (its queues' quota may change now)."""
    cluster_id = reservation.node_pool.cluster_id
    transaction.on_commit(lambda: reconcile_reservation_quotas.delay(cluster_id), robust=True)


def reservation_decide(
    *, acting_user: AbstractBaseUser, reservation: Reservation, approve: bool, comment: str = ""
) -> Reservation:
    """Approve (the pool must still hold it: reservations that meet the window and other teams' allocations that
    run into it are counted again, under the pool's lock) or decline (a reason is required)."""
    comment = (comment or "").strip()
    with transaction.atomic():
        Team.objects.select_for_update().filter(pk=reservation.team_id).first()
        # The pool's lock serializes decisions (and request approvals) on one pool.
        pool = NodePool.objects.select_for_update().select_related("cluster").get(pk=reservation.node_pool_id)
        reservation = Reservation.objects.select_related("team", "node_pool__cluster").get(pk=reservation.pk)
        refusal = reservation_decide_refusal(user=acting_user, reservation=reservation)
        if refusal:
            raise PermissionDenied(refusal)
        if not approve and not comment:
            raise ValidationError({"comment": "Say why the reservation is declined: the team reads it."})
        if approve:
            if reservation.end <= timezone.now():
                raise ValidationError({"end": "The window is over: it cannot be approved."})
            capacity_error = _capacity_error(
                pool=pool,
                resource_name=reservation.resource_name,
                quantity=reservation.quantity,
                start=max(reservation.start, timezone.now()),
                end=reservation.end,
                team=reservation.team,
                exclude=reservation.pk,
            )
            if capacity_error:
                raise ValidationError({"quantity": capacity_error})
        before = audit_snapshot(reservation)
        reservation.status = ReservationStatus.APPROVED if approve else ReservationStatus.DECLINED
        reservation.decided_by = acting_user
        reservation.decided_at = timezone.now()
        reservation.decision_comment = comment
        reservation.save()
        audit_record(actor=acting_user, obj=reservation, before=before, comment=comment)
        if approve:
            _on_kueue(reservation)
    return reservation


def reservation_cancel(*, acting_user: AbstractBaseUser, reservation: Reservation, comment: str = "") -> Reservation:
    """Cancel a pending or approved reservation before its window is over (who asked, or a lead of the team); the
    capacity is free again at once, and a Kueue cluster's quota is restored by the reconcile."""
    with transaction.atomic():
        Team.objects.select_for_update().filter(pk=reservation.team_id).first()
        reservation = (
            Reservation.objects.select_related("team", "node_pool")
            .select_for_update(of=("self",))
            .get(pk=reservation.pk)
        )
        refusal = reservation_cancel_refusal(user=acting_user, reservation=reservation, now=timezone.now())
        if refusal:
            raise PermissionDenied(refusal)
        before = audit_snapshot(reservation)
        reservation.status = ReservationStatus.CANCELLED
        reservation.save()
        audit_record(actor=acting_user, obj=reservation, before=before, comment=(comment or "").strip())
        if reservation.quota_applied:
            _on_kueue(reservation)
    return reservation
