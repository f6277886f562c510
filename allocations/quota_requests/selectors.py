"""Reads of quotas and quota increase requests: the quota page's rows (used / nominal / borrowing), the increases a
user may see, the monthly cost of more units, and the next steps a quota refusal offers."""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal

from django.db.models import QuerySet

from allocations.clusters.placement import gpu_price
from allocations.models import (
    QUOTA_HOLDING_STATUSES,
    GpuRequest,
    NodePool,
    Quota,
    QuotaIncreaseRequest,
    QuotaRequestStatus,
    SharingMode,
    Team,
)
from allocations.selectors import User, teams_of, teams_visible_to, user_is_approver
from allocations.teams.quota_usage import quota_usage_by_quota
from gpucore.catalog import MigProfile, mig_profile_of_resource
from gpucore.pricing import HOURS_PER_MONTH


@dataclass(frozen=True)
class UnitPrice:
    """What one unit of a quota's resource costs for a month held, as a range over the pools it may run on."""

    low: Decimal | None
    high: Decimal | None
    currency: str

    def times(self, units: int) -> UnitPrice:
        scale = Decimal(units)
        return UnitPrice(
            None if self.low is None else self.low * scale,
            None if self.high is None else self.high * scale,
            self.currency,
        )

    @property
    def text(self) -> str:
        if self.low is None or self.high is None:
            return "no price for the pools it runs on"
        if self.low.quantize(Decimal("1")) == self.high.quantize(Decimal("1")):
            return f"{self.high:,.2f} {self.currency}"
        return f"{self.low:,.2f} to {self.high:,.2f} {self.currency} (by pool)"


def _unit_share(pool: NodePool, resource_name: str) -> Decimal:
    """The part of one GPU a unit of the resource is on this pool: a GPU, a time-sliced share or a MIG slice."""
    if pool.sharing_mode == SharingMode.TIME_SLICING:
        return Decimal(1) / Decimal(pool.time_slice_replicas or 1)
    profile = mig_profile_of_resource(resource_name)
    if pool.sharing_mode == SharingMode.MIG and profile and pool.gpu_model.mig_compute_slices:
        compute, _memory = MigProfile.parse_name(profile)
        return Decimal(compute) / Decimal(pool.gpu_model.mig_compute_slices)
    return Decimal(1)


def quota_unit_monthly_price(quota: Quota) -> UnitPrice:
    """A unit of the quota's resource held for a month (730 h): on its pool, else on each pool that offers it."""
    if quota.node_pool_id:
        pools = [quota.node_pool]
    else:
        candidates = NodePool.objects.select_related("gpu_model")
        if quota.cluster_id:
            candidates = candidates.filter(cluster_id=quota.cluster_id)
        pools = [pool for pool in candidates if quota.resource_name in pool.capacity()]
    prices = []
    currency = ""
    for pool in pools:
        price = gpu_price(pool.gpu_model)
        currency = price.currency
        if price.hourly is not None:
            prices.append(price.hourly * _unit_share(pool, quota.resource_name) * HOURS_PER_MONTH)
    if not prices:
        return UnitPrice(None, None, currency)
    return UnitPrice(min(prices), max(prices), currency)


def quotas_visible_to(*, user: User) -> QuerySet[Quota]:
    """The quotas of the teams the user may see (approvers and Finance: every team)."""
    return Quota.objects.filter(team__in=teams_visible_to(user).values("pk")).select_related(
        "team", "cluster", "node_pool__cluster", "node_pool__gpu_model"
    )


def quota_rows(*, quotas: list[Quota]) -> list[dict[str, object]]:
    """Each quota with the units held (approved, provisioning, active), what is borrowed beyond the nominal quota
    and its pending increase, read in two queries."""
    usage = quota_usage_by_quota(quotas=quotas)
    pending = {
        increase.quota_id: increase
        for increase in QuotaIncreaseRequest.objects.filter(quota__in=quotas, status=QuotaRequestStatus.PENDING)
    }
    return [
        {
            "quota": quota,
            "used": usage.get(quota.pk, 0),
            "borrowed": max(usage.get(quota.pk, 0) - quota.limit, 0),
            "pending": pending.get(quota.pk),
        }
        for quota in quotas
    ]


def quota_increases_visible_to(*, user: User) -> QuerySet[QuotaIncreaseRequest]:
    """Quota increase requests of the teams the user may see (approvers: every team)."""
    related = ("team", "quota__cluster", "quota__node_pool__cluster", "quota__node_pool__gpu_model")
    return QuotaIncreaseRequest.objects.filter(team__in=teams_visible_to(user).values("pk")).select_related(
        *related, "requested_by", "decided_by"
    )


def quota_increase_ask_refusal(*, user: User, quota: Quota) -> str | None:
    """Why ``user`` may not ask for more of this quota (members and leads of its team may), or None."""
    if not teams_of(user).filter(pk=quota.team_id).exists():
        return f"Only members of team {quota.team.name} ask for more of its quota."
    return None


def quota_increase_decide_refusal(*, user: User, increase: QuotaIncreaseRequest) -> str | None:
    """Why ``user`` may not grant or decline this increase, or None: platform approvers decide, never their own."""
    if not user_is_approver(user):
        return "Only platform approvers decide quota increases."
    if increase.requested_by_id == user.pk:
        return "Another approver decides a quota increase you asked for."
    if increase.status != QuotaRequestStatus.PENDING:
        return f"This increase is already {increase.get_status_display().lower()}."
    return None


@dataclass(frozen=True)
class QuotaNextSteps:
    """What a user may do after a quota refusal: ask for more, borrow with a preemptible tier, or wait."""

    quota: Quota
    may_ask: bool
    pending: QuotaIncreaseRequest | None
    borrowing_limit: int
    # The team's allocations holding this quota, soonest to end first (what waiting waits for).
    holders: list[GpuRequest]


def quota_next_steps(*, user: User, quota_id: int) -> QuotaNextSteps | None:
    """The next steps of a refusal by quota ``quota_id`` (None when the user may not see that quota)."""
    quota = quotas_visible_to(user=user).filter(pk=quota_id).first()
    if quota is None:
        return None
    holding = GpuRequest.objects.filter(
        team_id=quota.team_id, resource_name=quota.resource_name, status__in=QUOTA_HOLDING_STATUSES
    )
    if quota.node_pool_id:
        holding = holding.filter(node_pool_id=quota.node_pool_id)
    elif quota.cluster_id:
        holding = holding.filter(cluster_id=quota.cluster_id)
    holders = list(holding.only("id", "name", "resource_units", "expires_at").order_by("expires_at", "id")[:5])
    return QuotaNextSteps(
        quota=quota,
        may_ask=quota_increase_ask_refusal(user=user, quota=quota) is None,
        pending=QuotaIncreaseRequest.objects.filter(quota=quota, status=QuotaRequestStatus.PENDING).first(),
        borrowing_limit=(quota.borrowing_limit or 0) if quota.in_cohort else 0,
        holders=holders,
    )


def team_quota_increases(*, team: Team) -> QuerySet[QuotaIncreaseRequest]:
    """One team's quota increase requests, newest first."""
    return QuotaIncreaseRequest.objects.filter(team=team).select_related("quota", "requested_by", "decided_by")
