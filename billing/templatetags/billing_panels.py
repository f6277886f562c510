"""Billing's panels on allocations pages (team spend, request and team utilization).

Allocations pages include them with ``{% load billing_panels %}``, so the allocations app never imports billing:
the template layer composes the two apps and the dependency keeps pointing one way (billing -> allocations).
"""

from __future__ import annotations

import functools
from datetime import datetime
from decimal import Decimal
from typing import Any

from django import template
from django.conf import settings
from django.utils import timezone

from allocations.models import Cluster, GpuRequest, Team
from billing.costs.budget import request_budget_effect, spec_budget_effect
from billing.costs.budget_services import user_may_edit_budget
from billing.costs.chargeback import priced_to
from billing.costs.month_spend import team_budget_states, team_month_to_date, teams_month_to_date
from billing.costs.waste import team_month_waste
from billing.costs.whatif import price_basis
from billing.utilization.request_utilization import request_utilization_context
from billing.utilization.selectors import team_utilization_context
from billing.utilization.series import TEAM_SERIES_DAYS, request_series, team_series
from billing.utilization.services import alert_action_refusal
from billing.utilization.troubleshooting import cluster_triage_context, request_triage_context
from billing.utilization_charts import utilization_timeseries_figure
from gpucore.budget import MoneyBudgetState
from gpucore.pricing import CATALOG_PRICE_BASIS

register = template.Library()


def page_priced_to(context: template.Context) -> datetime:
    """The moment every month-so-far amount of the page being rendered is priced to (``priced_to``: the start of the
    hour), read once a page so that its panels agree with each other even across the turn of an hour."""
    return context.render_context.setdefault("priced_to", priced_to(timezone.now()))


@register.inclusion_tag("billing/_team_month_to_date.html", takes_context=True)
def team_month_to_date_panel(context: template.Context, team: Team) -> dict[str, Any]:
    """This month's allocated GPU-hours and cost of a team against its budgets, and a link to set them."""
    user = context["request"].user
    as_of = page_priced_to(context)
    return {
        "month_to_date": team_month_to_date(team=team, now=as_of),
        "as_of": as_of,
        "team": team,
        "may_edit_budget": user_may_edit_budget(user, team),
    }


# In a page's render context: (request id, [start, end)) where the utilization panel found none of its rollups.
_NO_ROLLUPS = "request_no_rollups_between"


def _visibility_checked(context: template.Context, gpu_request: GpuRequest) -> bool:
    """Whether the page's view read this very object through ``gpu_requests_visible_to`` for the viewing user: the
    request page puts it in its context as ``visible_request``, and its panels then skip reading that again."""
    return context.get("visible_request") is gpu_request


@register.inclusion_tag("billing/_request_utilization.html", takes_context=True)
def request_utilization_panel(context: template.Context, gpu_request: GpuRequest) -> dict[str, Any]:
    """The request's utilization, alerts and right-sizing advice, for the viewing user."""
    panel = request_utilization_context(
        user=context["request"].user,
        request=gpu_request,
        visibility_checked=_visibility_checked(context, gpu_request),
    )
    if (utilization := panel["utilization"]) is not None:  # visible: the hourly chart over the allocation's life
        empty = None if utilization["rollups_in_window"] else (utilization["start"], utilization["end"])
        if empty is not None:  # the troubleshooting panel after it need not read them either
            context.render_context[_NO_ROLLUPS] = (gpu_request.pk, empty)
        utilization["series_figure"] = utilization_timeseries_figure(
            request_series(gpu_request, no_rollups_between=empty),
            title=f"Request #{gpu_request.pk}: utilization, memory and power by hour",
        )
    panel["request"] = context["request"]  # the alert forms come back to this page
    return panel


@register.inclusion_tag("billing/_gpu_troubleshooting.html", takes_context=True)
def request_troubleshooting_panel(context: template.Context, gpu_request: GpuRequest) -> dict[str, Any]:
    """The guide's hardware-vs-software tree on what the request's GPUs and messages showed."""
    pk, empty = context.render_context.get(_NO_ROLLUPS, (None, None))
    return request_triage_context(
        user=context["request"].user,
        request=gpu_request,
        visibility_checked=_visibility_checked(context, gpu_request),
        no_rollups_between=empty if pk == gpu_request.pk else None,
    )


@register.inclusion_tag("billing/_gpu_troubleshooting.html", takes_context=True)
def cluster_troubleshooting_panel(context: template.Context, cluster: Cluster) -> dict[str, Any]:
    """The guide's hardware-vs-software tree on what the cluster's GPUs showed in the last day."""
    return cluster_triage_context(user=context["request"].user, cluster=cluster)


@register.inclusion_tag("billing/_waste.html", takes_context=True)
def team_waste_panel(context: template.Context, team: Team) -> dict[str, Any]:
    """The team's month so far per request: GPU-hours held vs busy and the cost of the idle part."""
    as_of = page_priced_to(context)
    return {
        "waste": team_month_waste(team=team, now=as_of),
        "as_of": as_of,
        "waste_id": "team-waste",
        "waste_title": "Held vs busy this month",
    }


@register.inclusion_tag("billing/_team_utilization.html", takes_context=True)
def team_utilization_panel(context: template.Context, team: Team) -> dict[str, Any]:
    """The team's utilization by request over the last days, for the viewing user."""
    panel = team_utilization_context(user=context["request"].user, team=team)
    if panel["team_utilization"] is not None:
        panel["team_utilization"]["series_days"] = TEAM_SERIES_DAYS
        panel["team_utilization"]["series_figure"] = utilization_timeseries_figure(
            team_series(team.pk), title=f"{team.name}: utilization, memory and power by hour"
        )
    panel["request"] = context["request"]  # the alert forms come back to this page
    # Finance reads another team's alerts; only the team's members and approvers act on them.
    # Read once, and only where an alert row is drawn: a page without alerts reads nothing more.
    user = context["request"].user
    panel["alerts_read_only"] = functools.cache(lambda: alert_action_refusal(user=user, team=team) is not None)
    return panel


@register.simple_tag(takes_context=True)
def priced_to_time(context: template.Context) -> datetime:
    """``page_priced_to`` for a template that labels its amounts (``{% priced_to_time as as_of %}``)."""
    return page_priced_to(context)


@register.simple_tag(takes_context=True)
def price_basis_note(context: template.Context) -> str:
    """One sentence naming the prices amounts use (price book version, else the catalog list price); once a page."""
    cache = context.render_context
    if "price_basis_note" not in cache:
        cache["price_basis_note"] = "Prices: " + price_basis()["text"]
    return cache["price_basis_note"]


@register.simple_tag(takes_context=True)
def team_months_to_date(context: template.Context, teams: list[Team]) -> str:
    """Read the month to date of every team a page's request_budget_panel rows belong to, at once (two queries, not
    two per team); prints nothing. Call it before the rows, in the same template."""
    months = context.render_context.setdefault("month_to_date_by_team", {})
    missing = [team for team in teams if team.pk not in months]
    if missing:
        months.update(teams_month_to_date(teams=missing, notices=False))
    return ""


@register.simple_tag(takes_context=True)
def teams_money(context: template.Context, teams: list[Team]) -> str:
    """Read this month's budget state of every team a page's ``team_money_cells`` rows name, at once; prints
    nothing. Call it before the rows, in the same template."""
    states = context.render_context.setdefault("team_money", {})
    missing = [team for team in teams if team.pk not in states]
    if missing:
        states.update(team_budget_states(teams=missing, now=page_priced_to(context)))
    return ""


@register.inclusion_tag("billing/_team_money_cells.html", takes_context=True)
def team_money_cells(context: template.Context, team: Team) -> dict[str, Any]:
    """A teams table's cells of one team's month: spent, budget and share used, projected month end."""
    states = context.render_context.setdefault("team_money", {})
    if team.pk not in states:
        states.update(team_budget_states(teams=[team], now=page_priced_to(context)))
    return {"state": states[team.pk], "currency": settings.PORTAL_CURRENCY, "team": team}


@register.inclusion_tag("billing/_money_budget.html")
def money_budget(state: MoneyBudgetState, currency: str) -> dict[str, Any]:
    """A team's money budget this month: spend, budget, month-end projection and level."""
    return {"state": state, "currency": currency}


@register.inclusion_tag("billing/_request_budget.html", takes_context=True)
def request_budget_panel(context: template.Context, gpu_request: GpuRequest) -> dict[str, Any]:
    """What a pending request does to its team's month: spend so far, its cost this month, the budget left."""
    months = context.render_context.setdefault("month_to_date_by_team", {})
    team = gpu_request.team
    if team.pk not in months:
        months[team.pk] = team_month_to_date(team=team)
    effect = request_budget_effect(request=gpu_request, month_to_date=months[team.pk])
    money = months[team.pk]["money"]
    cost = effect.cost_this_month if effect is not None else None
    return {
        "effect": effect,
        "month_to_date": months[team.pk],
        "gpu_request": gpu_request,
        "money_after": None if cost is None or money.budget is None else money.spent + cost,
    }


@register.inclusion_tag("billing/_budget_preview.html")
def team_budget_preview(team: Team, spec: dict[str, Any]) -> dict[str, Any]:
    """The new-request preview's budget: the team's money budget this month, and where this request would take it."""
    state = team_budget_states(teams=[team])[team.pk]
    hours = (spec.get("estimated_cost") or {}).get("hours")  # the profile's duration, when it has one
    effect = spec_budget_effect(
        team=team,
        spec=spec,
        duration_hours=None if hours is None else Decimal(str(hours)),
        month_to_date={"gpu_hours": 0, "amount": 0},  # only this request's own cost is read from the effect
    )
    cost = effect.cost_this_month if effect is not None else None
    return {
        "team": team,
        "state": state,
        "request_cost": cost,
        "with_request": None if cost is None else state.projected + cost,
        "currency": settings.PORTAL_CURRENCY,
    }


@register.simple_tag
def catalog_price_basis() -> str:
    """The basis of every price a price book does not give (gpucore.pricing.CATALOG_PRICE_BASIS)."""
    return CATALOG_PRICE_BASIS
