"""What approved reservations hold on a pool at a time: the reads the quota check, the capacity check, the Kueue
queues and the capacity pages share (the reservations themselves are made and decided in
``allocations.reservations``)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from django.db.models import IntegerField, OuterRef, Q, QuerySet, Subquery, Sum
from django.db.models.functions import Coalesce

from allocations.models import QUOTA_HOLDING_STATUSES, GpuRequest, NodePool, Quota, Reservation, ReservationStatus, Team

OPEN_STATUSES = (ReservationStatus.PENDING, ReservationStatus.APPROVED)


def approved_overlapping(
    *, node_pool_id: int, resource_name: str, start: datetime, end: datetime | None
) -> QuerySet[Reservation]:
    """Approved reservations of the pool's resource whose window meets [start, end) (end None: open-ended)."""
    window = Q(end__gt=start) if end is None else Q(end__gt=start, start__lt=end)
    return Reservation.objects.filter(
        window, node_pool_id=node_pool_id, resource_name=resource_name, status=ReservationStatus.APPROVED
    ).select_related("team")


def held_on_pool(*, node_pool_id: int, resource_name: str, team_id: int, through: datetime | None = None) -> int:
    """Units the team holds on the pool now (approved, provisioning, active, ...); with ``through``, only those
    still held at that moment (no expiry, or one after it)."""
    held = GpuRequest.objects.filter(
        node_pool_id=node_pool_id, resource_name=resource_name, team_id=team_id, status__in=QUOTA_HOLDING_STATUSES
    )
    if through is not None:
        held = held.filter(Q(expires_at__isnull=True) | Q(expires_at__gt=through))
    return held.aggregate(total=Sum("resource_units"))["total"] or 0


@dataclass(frozen=True)
class ReservedHold:
    """An approved reservation of another team, and the units of it its own requests have not taken yet."""

    reservation: Reservation
    unclaimed: int

    @property
    def text(self) -> str:
        window = f"{self.reservation.start:%a %d %b %H:%M} to {self.reservation.end:%a %d %b %H:%M} UTC"
        return (
            f"{self.unclaimed} reserved for team {self.reservation.team.slug} from {window} "
            f"(reservation #{self.reservation.pk})"
        )


def reserved_for_other_teams(
    *, node_pool_id: int, resource_name: str, team_id: int, start: datetime, end: datetime | None
) -> list[ReservedHold]:
    """Other teams' approved reservations of the pool's resource that meet [start, end), each with the units its
    team's requests have not drawn yet: capacity a request of ``team_id`` over that span may not take."""
    holds = []
    for reservation in approved_overlapping(
        node_pool_id=node_pool_id, resource_name=resource_name, start=start, end=end
    ):
        if reservation.team_id == team_id:
            continue
        drawn = held_on_pool(
            node_pool_id=node_pool_id,
            resource_name=resource_name,
            team_id=reservation.team_id,
            through=max(reservation.start, start),
        )
        unclaimed = max(reservation.quantity - drawn, 0)
        if unclaimed:
            holds.append(ReservedHold(reservation=reservation, unclaimed=unclaimed))
    return holds


def reserved_now_for_team(*, team_id: int, node_pool_id: int | None, resource_name: str, at: datetime) -> int:
    """Units of the pool's resource the team has reserved (approved) for a window covering ``at``: its nominal quota
    there is at least this much."""
    if node_pool_id is None:
        return 0
    return (
        Reservation.objects.filter(
            team_id=team_id,
            node_pool_id=node_pool_id,
            resource_name=resource_name,
            status=ReservationStatus.APPROVED,
            start__lte=at,
            end__gt=at,
        ).aggregate(total=Sum("quantity"))["total"]
        or 0
    )


def reserved_now_for(*, team: OuterRef, node_pool: OuterRef, resource_name: OuterRef, at: datetime) -> Coalesce:
    """``reserved_now_for_team`` as a subquery of an outer query's team, pool and resource columns (0 when none)."""
    total = (
        Reservation.objects.filter(_in_window_at(at), team_id=team, node_pool_id=node_pool, resource_name=resource_name)
        .order_by()
        .values("team_id")
        .annotate(total=Sum("quantity"))
        .values("total")
    )
    return Coalesce(Subquery(total, output_field=IntegerField()), 0)


def _in_window_at(at: datetime) -> Q:
    return Q(status=ReservationStatus.APPROVED, start__lte=at, end__gt=at)


def reserved_now_by_team_pool(
    *, team_ids: set[int] | None, at: datetime, pool_ids: list[int] | None = None
) -> dict[tuple[int, int, str], int]:
    """Units reserved (approved, window covering ``at``) by (team, pool, resource), for the teams (or pools) given."""
    scope = Q(team_id__in=team_ids) if team_ids is not None else Q(node_pool_id__in=pool_ids or [])
    rows = (
        Reservation.objects.filter(_in_window_at(at), scope)
        .values_list("team_id", "node_pool_id", "resource_name")
        .annotate(total=Sum("quantity"))
    )
    return {(team_id, pool_id, resource): total for team_id, pool_id, resource, total in rows}


def reserved_now_in_cohort(*, quotas: list[Quota], at: datetime) -> dict[int, int]:
    """Units each cluster or pool quota's team reserved for now within the quota's scope, by quota id."""
    if not quotas:
        return {}
    reserved = reserved_now_by_team_pool(team_ids={quota.team_id for quota in quotas}, at=at)
    if not reserved:
        return {}
    cluster_of = dict(NodePool.objects.filter(pk__in={key[1] for key in reserved}).values_list("pk", "cluster_id"))
    out: dict[int, int] = {}
    for quota in quotas:
        out[quota.pk] = sum(
            units
            for (team_id, pool_id, resource), units in reserved.items()
            if team_id == quota.team_id
            and resource == quota.resource_name
            and (
                pool_id == quota.node_pool_id
                or (quota.node_pool_id is None and cluster_of[pool_id] == quota.cluster_id)
            )
        )
    return out


def team_reservations(*, team: Team, now: datetime) -> QuerySet[Reservation]:
    """A team's reservations that are open and not over yet, soonest first (the team page)."""
    return Reservation.objects.filter(team=team, status__in=OPEN_STATUSES, end__gt=now).select_related(
        "node_pool__cluster", "requested_by"
    )


def reserved_unclaimed_by_pool(*, pool_ids: list[int], at: datetime) -> dict[int, dict[str, int]]:
    """Per pool and resource, the units of approved reservations covering ``at`` that their teams' allocations on the
    pool have not drawn yet: capacity that is neither allocated nor free."""
    reserved = reserved_now_by_team_pool(team_ids=None, at=at, pool_ids=pool_ids)
    if not reserved:
        return {}
    held_rows = (
        GpuRequest.objects.filter(node_pool_id__in=pool_ids, status__in=QUOTA_HOLDING_STATUSES)
        .values_list("team_id", "node_pool_id", "resource_name")
        .annotate(total=Sum("resource_units"))
    )
    held = {(team_id, pool_id, resource): total for team_id, pool_id, resource, total in held_rows}
    out: dict[int, dict[str, int]] = {}
    for (team_id, pool_id, resource), units in reserved.items():
        unclaimed = max(units - held.get((team_id, pool_id, resource), 0), 0)
        bucket = out.setdefault(pool_id, {})
        bucket[resource] = bucket.get(resource, 0) + unclaimed
    return out


# Windows a pool's card lists: the next few are what an approver plans around.
UPCOMING_SHOWN = 5


def upcoming_reservations_by_pool(*, pool_ids: list[int], now: datetime) -> dict[int, list[Reservation]]:
    """Per pool, its approved reservations not over yet, soonest first (at most ``UPCOMING_SHOWN`` each)."""
    out: dict[int, list[Reservation]] = {}
    upcoming = Reservation.objects.filter(
        node_pool_id__in=pool_ids, status=ReservationStatus.APPROVED, end__gt=now
    ).select_related("team")
    for reservation in upcoming.order_by("start", "id"):
        bucket = out.setdefault(reservation.node_pool_id, [])
        if len(bucket) < UPCOMING_SHOWN:
            bucket.append(reservation)
    return out


@dataclass(frozen=True)
class WindowHold:
    """Units of an approved window covering now that its team has not drawn: held for that team until ``end``."""

    team_id: int
    units: int
    end: datetime
    text: str


def window_holds_by_pool(*, pool_ids: set[int], at: datetime) -> dict[tuple[int, str], list[WindowHold]]:
    """Per (pool, resource), the approved windows covering ``at`` with their undrawn units, in two queries."""
    if not pool_ids:
        return {}
    windows = list(
        Reservation.objects.filter(_in_window_at(at), node_pool_id__in=pool_ids)
        .values_list("pk", "team_id", "team__slug", "node_pool_id", "resource_name", "quantity", "end")
        .order_by("end", "pk")
    )
    if not windows:
        return {}
    held_rows = (
        GpuRequest.objects.filter(node_pool_id__in=pool_ids, status__in=QUOTA_HOLDING_STATUSES)
        .values_list("team_id", "node_pool_id", "resource_name")
        .annotate(total=Sum("resource_units"))
    )
    held = {(team_id, pool_id, resource): total for team_id, pool_id, resource, total in held_rows}
    out: dict[tuple[int, str], list[WindowHold]] = {}
    for pk, team_id, slug, pool_id, resource, quantity, end in windows:
        drawn = held.get((team_id, pool_id, resource), 0)
        units = max(quantity - drawn, 0)
        held[(team_id, pool_id, resource)] = max(drawn - quantity, 0)  # one team's next window draws what is left
        if units:
            text = f"{units} {resource} reserved for team {slug} until {end:%Y-%m-%d %H:%M} UTC (reservation #{pk})."
            out.setdefault((pool_id, resource), []).append(WindowHold(team_id, units, end, text))
    return out
