"""Seeding the demo again (each `make run` does) leaves its story as it was: the same requests and closed months, and
budgets set again near their thresholds, since what runs has spent more in the meantime; a budget someone set in the
portal stays theirs."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from decimal import Decimal

import pytest
import time_machine
from django.core.management import call_command
from django.utils import timezone

from allocations.models import GpuRequest
from billing.costs.budget_services import team_budget_update
from billing.costs.month_spend import team_month_to_date
from billing.models import MonthlyReport, TeamBudget
from portal.demo_history import demo_budgets, month_start
from tests.billing.cost_helpers import held_request, load_book

CENT = Decimal("0.01")


def _demo_figures(now: datetime) -> dict[str, object]:
    """What a second seeding must leave as it was: the story's requests, the closed months, each budget's share
    spent (at ``now``)."""
    used = {
        budget.team.slug: (team_month_to_date(team=budget.team, now=now)["amount"] / budget.monthly_amount).quantize(
            CENT
        )
        for budget in TeamBudget.objects.select_related("team")
    }
    return {
        "requests": sorted(GpuRequest.objects.values_list("name", "status")),
        "reports": sorted(MonthlyReport.objects.values_list("team__slug", "month", "total")),
        "used": used,
    }


@pytest.mark.django_db(transaction=True)
def test_seeding_again_leaves_the_story_as_it_was(settings) -> None:
    settings.DEBUG = True
    first = timezone.now().replace(minute=20, second=0, microsecond=0)
    with time_machine.travel(first, tick=False):
        call_command("seed_demo", verbosity=0)
        seeded = _demo_figures(first)
        call_command("seed_demo", verbosity=0)  # the same moment: nothing changes
        assert _demo_figures(first) == seeded
    # A day later (the next `make run`): what runs has spent more, but the story reads the same.
    later = first + timedelta(hours=30)
    if month_start(later, 0) != month_start(first, 0):
        later = first + timedelta(minutes=30)  # the month turned: a later run closes a month more (another story)
    with time_machine.travel(later, tick=False):
        call_command("seed_demo", verbosity=0)
        again = _demo_figures(later)
    assert again["requests"] == seeded["requests"] and again["reports"] == seeded["reports"]
    for figures in (seeded, again):
        assert story_budgets(figures["used"]), figures["used"]


def story_budgets(used: dict[str, Decimal]) -> bool:
    """Vision just past its 80 % alert, nlp short of 50 %, speech about to cross 100 %."""
    return (
        Decimal("0.80") <= used["vision"] < Decimal("0.90")
        and Decimal("0.40") <= used["nlp"] < Decimal("0.50")
        and Decimal("0.90") <= used["speech"] < Decimal("1.00")
    )


@pytest.mark.django_db
def test_a_budget_set_in_the_portal_is_not_set_again_by_the_demo(demo_org) -> None:
    load_book({"H100-80GB": "2.00"}, effective_from="2026-10-01")
    start = datetime(2026, 11, 2, tzinfo=UTC)
    held_request(team=demo_org.team, start=start, end=None)
    teams = {"vision": demo_org.team, "nlp": demo_org.other_team}

    assert demo_budgets(teams=teams, now=start + timedelta(hours=10)) == 2
    assert TeamBudget.objects.get(team=demo_org.team).monthly_amount == 24  # 20.00 spent is 84 %
    assert demo_budgets(teams=teams, now=start + timedelta(hours=20)) == 1  # 40.00 spent: set again
    assert TeamBudget.objects.get(team=demo_org.team).monthly_amount == 48
    team_budget_update(
        acting_user=demo_org.platform_admin, team=demo_org.team, thresholds_pct=[50, 100], chat_webhook_url="",
        monthly_amount=Decimal("500"),
    )  # fmt: skip
    assert demo_budgets(teams=teams, now=start + timedelta(hours=30)) == 0
    assert TeamBudget.objects.get(team=demo_org.team).monthly_amount == 500
