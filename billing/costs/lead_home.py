"""A team lead's home: for each team they lead, this month's spend by member and by request, what waits for a
decision from the team (requests, extensions, quota increases), and the allocations that idle most."""

from __future__ import annotations

from collections import defaultdict
from datetime import datetime, timedelta
from decimal import Decimal
from typing import Any

from django.conf import settings
from django.utils import timezone

from allocations.models import (
    AllocationExtension,
    ExtensionStatus,
    GpuRequest,
    QuotaIncreaseRequest,
    QuotaRequestStatus,
    RequestStatus,
    Role,
    Team,
)
from billing.costs.chargeback import kept_for_the_hour, priced_to, team_month_charge
from billing.metering.selectors import rollup_usage_aggregates, weighted_utilization_pct
from billing.models import UtilizationRollup
from gpucore.pricing import cents_adding_up, to_cents

TOP_ROWS = 5
IDLE_WINDOW_DAYS = 7
# Below this mean utilization over the window an allocation counts as idling.
IDLE_BELOW_PCT = 20.0


def lead_teams(team_rows: list[dict[str, Any]]) -> list[Team]:
    """The teams of the home's rows the user leads (``viewer_role`` from ``home_overview``)."""
    return [row["team"] for row in team_rows if getattr(row["team"], "viewer_role", None) == Role.LEAD]


def lead_overview(*, teams: list[Team], now: datetime | None = None) -> list[dict[str, Any]]:
    """Per led team: spend by member and by request this month up to the start of the hour (``priced_to``, as
    ``as_of``), waiting items, and the top idle holdings."""
    if not teams:
        return []
    as_of = priced_to(now or timezone.now())
    spends = {team.pk: team_month_spend(team=team, now=as_of) for team in teams}
    waiting = _waiting(teams)
    idle = _idle(teams, now=as_of, spend={pk: row for spend in spends.values() for pk, row in spend["spend"].items()})
    return [
        {
            "team": team,
            "as_of": as_of,
            "total": spends[team.pk]["total"],
            "currency": settings.PORTAL_CURRENCY,
            "by_member": spends[team.pk]["by_member"],
            "not_requested": spends[team.pk]["not_requested"],
            "by_request": spends[team.pk]["by_request"],
            "more_requests": spends[team.pk]["more_requests"],
            "waiting": waiting[team.pk],
            "idle": idle[team.pk],
        }
        for team in teams
    ]


# The parts of a team's charge no member requested, as the members table names them.
IMPORTED_USAGE = "Imported usage"
IDLE_SHARE = "Share of idle capacity"


def team_month_spend(*, team: Team, now: datetime) -> dict[str, Any]:
    """The team's spend this month up to the start of ``now``'s hour by member and by request (the top ones), and each
    request's amount: read from its month charge and its requests, kept for the hour as the charge is (a team may hold
    thousands). ``not_requested``: imported usage and the idle share, so that the parts add up to the team's spend."""

    def build() -> dict[str, Any]:
        charge = team_month_charge(team=team, now=now)
        spend: dict[int, dict[str, Decimal]] = defaultdict(lambda: {"amount": Decimal(0), "gpu_hours": Decimal(0)})
        others = {IMPORTED_USAGE: Decimal(0), IDLE_SHARE: charge.idle_share}
        for line in charge.lines:
            if line.allocation.request_id is None:
                others[IMPORTED_USAGE] += line.amount
            else:
                spend[line.allocation.request_id]["amount"] += line.amount
                spend[line.allocation.request_id]["gpu_hours"] += line.allocated_gpu_hours
        requests = GpuRequest.objects.filter(team=team, pk__in=list(spend) or [0]).values(
            "pk", "name", "team_id", "status", "requester__username", "requester__first_name"
        )
        # In cents that add up to the team's spend as the budget panel prints it (never a cent off).
        cents = cents_adding_up({**{pk: values["amount"] for pk, values in spend.items()}, **others})
        rows = [{**row, "amount": cents[row["pk"]], "gpu_hours": spend[row["pk"]]["gpu_hours"]} for row in requests]
        rows.sort(key=lambda row: row["amount"], reverse=True)
        members: dict[str, dict[str, Any]] = {}
        for row in rows:
            who = members.setdefault(
                row["requester__username"],
                {
                    "username": row["requester__username"],
                    "name": row["requester__first_name"],
                    "amount": Decimal(0),
                    "requests": 0,
                },
            )
            who["amount"] += row["amount"]
            who["requests"] += 1
        not_requested = [{"label": label, "amount": cents[label]} for label in others if cents[label]]
        return {
            "total": sum(cents.values(), Decimal(0)),
            "by_member": sorted(members.values(), key=lambda m: m["amount"], reverse=True),
            "not_requested": not_requested,
            "by_request": rows[:TOP_ROWS],
            "more_requests": max(len(rows) - TOP_ROWS, 0),
            "spend": dict(spend),
        }

    return kept_for_the_hour(f"lead-spend:{team.pk}", priced_to(now), build)


def _waiting(teams: list[Team]) -> dict[int, dict[str, list[Any]]]:
    """The team's requests and extensions waiting for an approver, and its pending quota increases."""
    waiting: dict[int, dict[str, list[Any]]] = {
        team.pk: {"requests": [], "extensions": [], "quotas": []} for team in teams
    }
    for request in (
        GpuRequest.objects.filter(team__in=teams, status=RequestStatus.PENDING_APPROVAL)
        .select_related("requester")
        .only("pk", "name", "team_id", "submitted_at", "created_at", "requester__username")
        .order_by("submitted_at", "id")
    ):
        waiting[request.team_id]["requests"].append(request)
    for extension in AllocationExtension.objects.filter(
        request__team__in=teams, status=ExtensionStatus.PENDING
    ).select_related("request"):
        waiting[extension.request.team_id]["extensions"].append(extension)
    for increase in QuotaIncreaseRequest.objects.filter(
        team__in=teams, status=QuotaRequestStatus.PENDING
    ).select_related("quota"):
        waiting[increase.team_id]["quotas"].append(increase)
    return waiting


def _idle(teams: list[Team], *, now: datetime, spend: dict[int, dict[str, Decimal]]) -> dict[int, list[dict[str, Any]]]:
    """The team's running allocations measured under ``IDLE_BELOW_PCT`` over the last week, the costliest idle first
    (this month's charge times the unused share)."""
    since = now - timedelta(days=IDLE_WINDOW_DAYS)
    rows = (
        UtilizationRollup.objects.filter(
            team__in=teams, hour__gte=since, request__status=RequestStatus.ACTIVE, request__isnull=False
        )
        .values("request_id", "request__name", "request__team_id", "request__requester__username")
        .annotate(**rollup_usage_aggregates())
        .order_by()
    )
    idle: dict[int, list[dict[str, Any]]] = {team.pk: [] for team in teams}
    for row in rows:
        utilization = weighted_utilization_pct(row)
        if utilization is None or utilization >= IDLE_BELOW_PCT:
            continue
        amount = spend.get(row["request_id"], {}).get("amount", Decimal(0))
        idle[row["request__team_id"]].append(
            {
                "pk": row["request_id"],
                "name": row["request__name"],
                "requester": row["request__requester__username"],
                "utilization_pct": utilization,
                "idle_amount": to_cents(amount * Decimal(str(1 - utilization / 100))),
            }
        )
    for items in idle.values():
        items.sort(key=lambda item: item["idle_amount"], reverse=True)
        del items[TOP_ROWS:]
    return idle
