"""Quota enforcement: which quotas apply to an allocation, and the check that holds under concurrency.

Callers lock the team's row (``Team.objects.select_for_update()``) before checking and writing, so concurrent
submissions and approvals of one team are serialized by PostgreSQL instead of racing a read-then-write. A request that
borrows from the cohort also locks its cluster's row, so two teams never borrow the same lent unit at once (a team
using its own nominal quota needs no such lock: a borrowed unit is reclaimable by design).
"""

from __future__ import annotations

from dataclasses import dataclass

from django.core.exceptions import ValidationError
from django.db.models import F, OuterRef
from django.utils import timezone

from allocations.models import GpuRequest, NodePool, Quota, Team
from allocations.teams.quota_usage import columns, constants, quota_covers, quota_usage_by_quota, with_units_held
from allocations.teams.reservation_holds import (
    reserved_now_for,
    reserved_now_for_team,
    reserved_now_in_cohort,
)
from gpucore.quota import CohortMember, admit


@dataclass(frozen=True)
class QuotaHeadroom:
    """One quota that applies to an allocation: its limit, what is held now, what is left, and what the ask borrows."""

    quota: Quota
    in_use: int
    # Units of the checked ask beyond the nominal quota, lent by the cohort (only preemptible tiers borrow).
    borrowed: int = 0
    # Units the team reserved on the pool for a window covering now: the nominal quota is at least this much.
    reserved: int = 0

    @property
    def limit(self) -> int:
        """The nominal quota in force now: the quota's, raised to an approved reservation's units in its window."""
        return max(self.quota.limit, self.reserved)

    @property
    def available(self) -> int:
        return max(self.limit - self.in_use, 0)


class QuotaExceeded(ValidationError):
    """The allocation would take the team over a quota; the message names the quota, limit, use and ask."""

    def __init__(
        self, message: str, code: str, short: str = "", quota: Quota | None = None, shortfall: int = 0
    ) -> None:
        super().__init__(message, code=code)
        # The reason alone, for a page that already shows the numbers (the approval queue).
        self.short = short
        # The quota that refused and by how many units: the refusal's next steps (ask for more, borrow, wait).
        self.quota_id = quota.pk if quota is not None else None
        self.shortfall = shortfall


def _new_request(*, team: Team, resource_name: str, node_pool: NodePool | None) -> dict[str, object]:
    # A request not written yet, as ``quota_covers`` reads one: placed on ``node_pool`` (and so on its cluster).
    cluster_id = node_pool.cluster_id if node_pool is not None else None
    return {
        "team_id": team.pk,
        "resource_name": resource_name,
        "node_pool_id": node_pool.pk if node_pool is not None else None,
        "cluster_id": cluster_id,
        "node_pool__cluster_id": cluster_id,
    }


def applicable_quotas(*, team: Team, resource_name: str, node_pool: NodePool | None) -> list[Quota]:
    """Quotas a request of ``units`` of this resource on the pool counts against (``quota_covers``): the pool's own,
    its cluster's, and the team-wide one, each with ``units_held`` (``with_units_held``), in the order they were set."""
    request = constants(_new_request(team=team, resource_name=resource_name, node_pool=node_pool))
    return list(
        with_units_held(Quota.objects.filter(quota_covers(quota=columns(), request=request)))
        .select_related("cluster", "node_pool__cluster")
        .order_by("id")
    )


def quota_headroom(*, team: Team, resource_name: str, node_pool: NodePool | None) -> list[QuotaHeadroom]:
    """Each applicable quota with what the team holds against it now and what it reserved for now on the pool."""
    reserved = reserved_now_for_team(
        team_id=team.pk,
        node_pool_id=node_pool.pk if node_pool is not None else None,
        resource_name=resource_name,
        at=timezone.now(),
    )
    return [
        QuotaHeadroom(quota=quota, in_use=quota.units_held, reserved=reserved)
        for quota in applicable_quotas(team=team, resource_name=resource_name, node_pool=node_pool)
    ]


def quota_headroom_by_request(*, requests: list[GpuRequest]) -> dict[int, list[QuotaHeadroom]]:
    """The headroom of each request (``quota_headroom`` of its team, resource and pool), by request id, read in one
    query for the whole list (a display read: no lock)."""
    if not requests:
        return {}
    # Each quota joined to the listed requests of its team that count against it (``quota_covers``), in one filter so
    # that both sides name the same join.
    requests_of_team = "team__gpu_requests__"
    pairs = (
        Quota.objects.filter(
            quota_covers(quota=columns(), request=columns(requests_of_team)),
            team__gpu_requests__in=[request.pk for request in requests],
        )
        .annotate(
            for_request=F(f"{requests_of_team}id"),
            reserved_now=reserved_now_for(
                team=OuterRef("team_id"),
                node_pool=OuterRef(f"{requests_of_team}node_pool_id"),
                resource_name=OuterRef(f"{requests_of_team}resource_name"),
                at=timezone.now(),
            ),
        )
        .select_related("cluster", "node_pool__cluster")
        .order_by("id")
    )
    headroom: dict[int, list[QuotaHeadroom]] = {request.pk: [] for request in requests}
    for quota in with_units_held(pairs):
        headroom[quota.for_request].append(
            QuotaHeadroom(quota=quota, in_use=quota.units_held, reserved=quota.reserved_now)
        )
    return headroom


def cohort_members(*, quota: Quota) -> list[CohortMember]:
    """The other teams' quotas of the same resource and scope on the cluster (Kueue's cohort), with their use."""
    others = list(
        Quota.objects.filter(
            cluster_id=quota.cluster_id, node_pool_id=quota.node_pool_id, resource_name=quota.resource_name
        ).exclude(team_id=quota.team_id)
    )
    usage = quota_usage_by_quota(quotas=others)
    # A team inside a reservation window lends none of the reserved units: they count as its own, used.
    reserved = reserved_now_in_cohort(quotas=others, at=timezone.now())
    return [
        _member(
            other,
            max(usage[other.pk], reserved.get(other.pk, 0)),
            max(other.limit, reserved.get(other.pk, 0)),
        )
        for other in others
    ]


def _member(quota: Quota, in_use: int, nominal: int | None = None) -> CohortMember:
    # A blank borrowing limit means no borrowing in the portal (never Kueue's unlimited): 0.
    return CohortMember(
        nominal=quota.limit if nominal is None else nominal,
        used=in_use,
        borrowing_limit=quota.borrowing_limit or 0,
        lending_limit=quota.lending_limit,
    )


def may_borrow(request: GpuRequest) -> bool:
    """Whether the request's SLA tier may borrow beyond the nominal quota (only preemptible tiers: tier 3)."""
    return bool(request.sla_tier and request.sla_tier.preemptible)


def _judge(*, team: Team, resource_name: str, item: QuotaHeadroom, units: int, borrow: bool) -> QuotaHeadroom:
    """The headroom with the units ``units`` borrows, or QuotaExceeded saying why the quota refuses them."""
    quota = item.quota
    if item.in_use + units <= item.limit:
        return item
    reserved = f", raised to {item.reserved} by a reservation for now" if item.reserved > quota.limit else ""
    intro = (
        f"Quota exceeded: team {team.slug} may hold {item.limit} {resource_name} ({quota.scope_label}{reserved}); "
        f"{item.in_use} in use, {units} asked, {item.available} available"
    )
    refused = {"quota": quota, "shortfall": item.in_use + units - item.limit}
    if not (quota.in_cohort and quota.borrowing_limit):
        raise QuotaExceeded(f"{intro}.", code="quota_exceeded", short="No borrowing on this quota.", **refused)
    if not borrow:
        raise QuotaExceeded(
            f"{intro}. Only preemptible (tier 3) requests may borrow beyond the nominal quota "
            f"(up to {quota.borrowing_limit} more, from other teams' unused quota).",
            code="quota_exceeded",
            short=f"Only tier 3 may borrow (up to {quota.borrowing_limit} more).",
            **refused,
        )
    admission = admit(_member(quota, item.in_use, item.limit), cohort_members(quota=quota), units, may_borrow=True)
    if not admission.fits:
        raise QuotaExceeded(
            f"{intro}; borrowing up to {quota.borrowing_limit} more, {admission.available} can be admitted "
            f"now with what other teams lend.",
            code="quota_exceeded",
            short=f"Even borrowing, {admission.available} can be admitted now.",
            **refused,
        )
    return QuotaHeadroom(quota=quota, in_use=item.in_use, borrowed=admission.borrowed, reserved=item.reserved)


def quota_check(
    *, team: Team, resource_name: str, units: int, node_pool: NodePool | None, may_borrow: bool = False
) -> list[QuotaHeadroom]:
    """Raise QuotaExceeded unless ``units`` more of the resource fit every applicable quota of the team.

    Within the nominal quota always fits. Beyond it, only when ``may_borrow`` (a preemptible tier) and the quota has
    a borrowing limit: then the other teams' unused quota of the same scope lends the rest, as Kueue's cohort would
    (``gpucore.quota``), and each headroom says how many units were borrowed.
    A resource with no quota at all is refused: quotas are allowances, and an admin grants them.
    Call it with the team row locked, in the same transaction as the write it guards.
    """
    headroom = quota_headroom(team=team, resource_name=resource_name, node_pool=node_pool)
    where = f" on {node_pool}" if node_pool is not None else ""
    if not headroom:
        raise QuotaExceeded(
            f"Team {team.slug} has no quota for {resource_name}{where}. Ask a platform admin for one.",
            code="no_quota",
        )
    return [
        _judge(team=team, resource_name=resource_name, item=item, units=units, borrow=may_borrow) for item in headroom
    ]


@dataclass(frozen=True)
class QuotaFit:
    """Whether a pending request would pass the quota check now: the headroom (with borrowed units) or the refusal."""

    fits: bool
    headroom: list[QuotaHeadroom]
    refusal: str = ""
    short_refusal: str = ""

    @property
    def borrowed(self) -> int:
        return max((item.borrowed for item in self.headroom), default=0)


def quota_fit(*, request: GpuRequest, headroom: list[QuotaHeadroom]) -> QuotaFit:
    """The quota check's verdict on a request against headroom already read (a display read: no lock, no write).

    The same rule as ``quota_check``: within the nominal quota fits; beyond it only a preemptible tier fits, by
    borrowing from the cohort within the borrowing limit. Only a row over its nominal quota costs queries.
    """
    if not headroom:
        return QuotaFit(False, [], f"No quota for {request.resource_name}.", "No quota.")
    try:
        judged = [
            _judge(
                team=request.team,
                resource_name=request.resource_name,
                item=item,
                units=request.resource_units,
                borrow=may_borrow(request),
            )
            for item in headroom
        ]
    except QuotaExceeded as exc:
        return QuotaFit(False, headroom, exc.message, exc.short)
    return QuotaFit(True, judged)
