"""Reads: the what-if of a workload profile for a team: every strategy on every offered GPU model, priced for the
duration, with whether the team's quota and this month's budget allow it.

The sizing, prices and policy are ``gpucore.decision.whatif.compare`` over the pools that exist (as the
recommendation uses them); quota is ``allocations.teams.quotas.quota_check`` without writing anything; the budget is
``gpucore.budget`` against the team's month to date.
"""

from __future__ import annotations

from datetime import date, datetime
from decimal import Decimal
from typing import Any, NamedTuple

from django.conf import settings
from django.utils import timezone

from allocations.clusters.placement import candidate_pools, catalog_for_pools, gpu_hourly_rates, pool_for, pool_offers
from allocations.models import Cluster, NodePool, SharingMode, SlaTier, Team
from allocations.reference_data import tiers_by_slug
from allocations.teams.quotas import QuotaExceeded, quota_check
from billing.costs.budget import spec_budget_effect
from billing.costs.month_spend import team_month_to_date
from billing.models import PriceBook
from gpucore.decision import WorkloadProfile
from gpucore.decision.whatif import WhatIfOption, compare
from gpucore.pricing import CATALOG_PRICE_BASIS, book_in_effect, price_book_starts, share_text, to_cents
from infra.reference_cache import REFERENCE_DATA, cached


def _money(amount: Decimal | None) -> str | None:
    return None if amount is None else str(to_cents(amount))


def price_basis(*, at: datetime | None = None) -> dict[str, Any]:
    """Which prices amounts use now: the price book in effect (and its version), else the catalog's list price."""
    # Every book's date, version and currency, kept per process until a price book changes: pages that print this
    # sentence read no price book row.
    book = book_in_effect(cached(REFERENCE_DATA, "price-book-headers", _price_book_headers), at=at or timezone.now())
    if book is None:
        text = f"No price book loaded: every GPU model is priced at its {CATALOG_PRICE_BASIS}."
        return {"price_book_version": None, "basis": CATALOG_PRICE_BASIS, "text": text}
    text = (
        f"Price book v{book.version} (in effect from {book.effective_from:%Y-%m-%d}, {book.currency}); "
        f"a model it does not price falls back to its {CATALOG_PRICE_BASIS}."
    )
    return {"price_book_version": book.version, "basis": "price book", "text": text}


class _PriceBookHeader(NamedTuple):
    starts: datetime
    effective_from: date
    version: int
    currency: str


def _price_book_headers() -> tuple[_PriceBookHeader, ...]:
    """Each price book's start, date, version and currency."""
    return tuple(
        _PriceBookHeader(price_book_starts(effective_from), effective_from, version, currency)
        for effective_from, version, currency in PriceBook.objects.values_list("effective_from", "version", "currency")
    )


def team_what_if(
    *,
    team: Team,
    profile: WorkloadProfile,
    cluster: Cluster | None = None,
    reference_hours: Decimal | None = None,
    reference_gpu_model: str | None = None,
    now: datetime | None = None,
) -> dict[str, Any]:
    """The profile on every (model, strategy) the pools offer, for ``team``; ``ProfileError`` for a bad profile."""
    now = now or timezone.now()
    pools = candidate_pools(cluster)
    offered = pool_offers(pools)
    catalog = catalog_for_pools(profile, offered)
    if profile.gpu_model is not None:
        catalog = catalog.restricted_to(offered.models)  # the what-if compares every offered model, named or not
    options = compare(
        profile,
        catalog,
        offered=offered.offers,
        tiers=tiers_by_slug(),
        rates=gpu_hourly_rates(),
        time_slice_replicas=offered.time_slice_replicas,
        gpus_per_node=offered.gpus_per_node,
        mig_layouts=offered.mig_layouts,
        currency=settings.PORTAL_CURRENCY,
        reference_hours=reference_hours,
        reference_model=reference_gpu_model,
    )
    month = team_month_to_date(team=team, now=now)
    currency = settings.PORTAL_CURRENCY
    tier = SlaTier.objects.filter(slug=profile.sla_tier).first() if profile.sla_tier else None
    may_borrow = bool(tier and tier.preemptible)  # a preemptible tier may borrow beyond the quota, as at submission
    return {
        "team": team.slug,
        "currency": currency,
        "duration_hours": None if profile.duration_hours is None else float(profile.duration_hours),
        "price_basis": price_basis(at=now),
        "month_to_date": {
            "month": f"{month['month']:%Y-%m}",
            "gpu_hours": float(month["gpu_hours"]),
            "amount": str(month["amount"]),
            "budget_gpu_hours": None if month["budget"] is None else float(month["budget"]),
        },
        "options": [
            _option(option, team=team, profile=profile, pools=pools, month=month, now=now, may_borrow=may_borrow)
            for option in options
        ],
    }


def _option(
    option: WhatIfOption,
    *,
    team: Team,
    profile: WorkloadProfile,
    pools: list[NodePool],
    month: dict[str, Any],
    now: datetime,
    may_borrow: bool,
) -> dict[str, Any]:
    currency = settings.PORTAL_CURRENCY
    data: dict[str, Any] = {
        "gpu_model": option.gpu_model,
        "strategy": option.strategy.value,
        "fits": option.fits,
        "permitted": option.permitted,
        "reason": option.reason,
        "resource_name": option.resource_name,
        "quantity": option.quantity,
        "replicas": profile.replicas,
        "mig_profile": option.mig_profile,
        "time_slice_replicas": option.time_slice_replicas,
        "gpu_share": None if option.gpu_share is None else share_text(option.gpu_share),
        "estimated_monthly_cost": {"amount": _money(option.monthly), "currency": currency},
        "estimated_cost": None,
        "node_pool": None,
        "quota": None,
        "budget": None,
        "run": None,
    }
    if profile.duration_hours is not None and option.fits:
        data["estimated_cost"] = {
            "amount": _money(option.duration_cost),
            "currency": currency,
            "hours": float(profile.duration_hours),
        }
    if option.run is not None:
        run = option.run
        data["run"] = {
            "estimate": True,
            "reference_gpu_model": run.reference_model,
            "reference_hours": float(run.reference_hours),
            "speedup": float(run.speedup.quantize(Decimal("0.01"))),
            "hours": float(run.hours.quantize(Decimal("0.01"))),
            "cost": {"amount": _money(run.cost), "currency": currency},
        }
    if not option.fits or option.resource_name is None or option.quantity is None:
        return data
    pool = pool_for(
        pools,
        gpu_model=option.gpu_model,
        strategy=option.strategy.value,
        mig_profile=option.mig_profile,
        time_slice_replicas=option.time_slice_replicas,
    )
    if pool is None:
        return data
    resource = pool.shared_resource_name if pool.sharing_mode == SharingMode.TIME_SLICING else option.resource_name
    units = option.quantity * profile.replicas
    data["node_pool"] = f"{pool.cluster.name}/{pool.name}"
    data["quota"] = _quota(team=team, resource=resource, units=units, pool=pool, may_borrow=may_borrow)
    spec = {
        "gpu_share": data["gpu_share"],
        "quantity": option.quantity,
        "replicas": profile.replicas,
        "estimated_monthly_cost": data["estimated_monthly_cost"],
    }
    effect = spec_budget_effect(
        team=team, spec=spec, duration_hours=profile.duration_hours, now=now, month_to_date=month
    )
    if effect is not None:
        data["budget"] = {
            "allowed": effect.fits_budget,
            "gpu_hours_this_month": float(effect.gpu_hours_this_month.quantize(Decimal("0.01"))),
            "cost_this_month": _money(effect.cost_this_month),
            "left_gpu_hours": (
                None
                if effect.budget_left_gpu_hours is None
                else float(effect.budget_left_gpu_hours.quantize(Decimal("0.01")))
            ),
        }
    return data


def _quota(*, team: Team, resource: str, units: int, pool: NodePool, may_borrow: bool) -> dict[str, Any]:
    """Whether the team's quota holds ``units`` more of ``resource`` now (a read: nothing is reserved)."""
    try:
        quota_check(team=team, resource_name=resource, units=units, node_pool=pool, may_borrow=may_borrow)
    except QuotaExceeded as exc:
        return {"allowed": False, "resource_name": resource, "units": units, "message": " ".join(exc.messages)}
    return {"allowed": True, "resource_name": resource, "units": units, "message": None}
