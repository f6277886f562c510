"""Reads of reservations: who may see, make and decide them, and what approved windows hold on a pool at a time."""

from __future__ import annotations

from datetime import datetime

from django.db.models import QuerySet

from allocations.choices import Role
from allocations.models import Membership, NodePool, Quota, Reservation, ReservationStatus, Team
from allocations.selectors import User, teams_visible_to, user_is_approver
from allocations.teams.reservation_holds import OPEN_STATUSES


def reservations_visible_to(*, user: User) -> QuerySet[Reservation]:
    """Reservations of the teams the user may see (approvers: every team)."""
    return Reservation.objects.filter(team__in=teams_visible_to(user).values("pk")).select_related(
        "team", "node_pool__cluster", "node_pool__gpu_model", "requested_by", "decided_by"
    )


def teams_user_leads(*, user: User) -> QuerySet[Team]:
    """The teams whose lead ``user`` is: the teams it may reserve capacity for."""
    if not user.is_authenticated:
        return Team.objects.none()
    led = Membership.objects.filter(user_id=user.pk, role=Role.LEAD).values("team_id")
    return Team.objects.filter(pk__in=led).order_by("name")


def reservation_create_refusal(*, user: User, team: Team) -> str | None:
    """Why ``user`` may not reserve for ``team`` (its leads may), or None."""
    if not teams_user_leads(user=user).filter(pk=team.pk).exists():
        return f"Only a lead of team {team.name} reserves capacity for it."
    return None


def reservation_decide_refusal(*, user: User, reservation: Reservation) -> str | None:
    """Why ``user`` may not approve or decline it, or None: platform approvers decide, never their own."""
    if not user_is_approver(user):
        return "Only platform approvers decide reservations."
    if reservation.requested_by_id == user.pk:
        return "Another approver decides a reservation you asked for."
    if reservation.status != ReservationStatus.PENDING:
        return f"This reservation is already {reservation.get_status_display().lower()}."
    return None


def reservation_cancel_refusal(
    *, user: User, reservation: Reservation, now: datetime, led_team_ids: set[int] | None = None
) -> str | None:
    """Why ``user`` may not cancel it, or None: who asked or a lead of the team, while it is open and not over
    (``led_team_ids``: the teams the user leads, read once for a list)."""
    if reservation.status not in OPEN_STATUSES:
        return f"This reservation is already {reservation.get_status_display().lower()}."
    if reservation.end <= now:
        return "This reservation's window is over."
    if led_team_ids is None:
        led_team_ids = set(teams_user_leads(user=user).values_list("pk", flat=True))
    if reservation.requested_by_id != user.pk and reservation.team_id not in led_team_ids:
        return "Only who asked for a reservation or a lead of its team cancels it."
    return None


def pools_for_team(*, team: Team) -> list[NodePool]:
    """The node pools where the team holds a quota (of the pool, its cluster, or team-wide) for a resource the pool
    offers: the pools it may reserve on."""
    quotas = list(Quota.objects.filter(team=team))
    pools = NodePool.objects.select_related("cluster", "gpu_model").order_by("cluster__name", "name")
    return [
        pool
        for pool in pools
        if any(_covers(quota, pool) and quota.resource_name in pool.capacity() for quota in quotas)
    ]


def _covers(quota: Quota, pool: NodePool) -> bool:
    if quota.node_pool_id:
        return quota.node_pool_id == pool.pk
    if quota.cluster_id:
        return quota.cluster_id == pool.cluster_id
    return True
