"""Money and counts read the same on every page: thousands grouped, money to the cent with its currency (the
``money`` and ``number`` filters), on the lead's home, the team page, the budgets list, reports and quotas."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from decimal import Decimal

import pytest
import time_machine
from django.test import Client
from django.urls import reverse

from billing.costs.services import monthly_reports_close
from billing.models import TeamBudget
from tests.billing.cost_helpers import held_request, load_book
from tests.factories import DemoOrg, QuotaFactory

pytestmark = pytest.mark.django_db
OCT = datetime(2026, 10, 1, tzinfo=UTC)
NOV = datetime(2026, 11, 1, tzinfo=UTC)


@pytest.fixture
def big_team(demo_org: DemoOrg) -> DemoOrg:
    """A team with 1,200 units of quota, a 12,345.00 budget and 600 h at 2.00 (1,200.00) in October and November."""
    load_book({"H100-80GB": "2.00"}, effective_from="2026-10-01")
    QuotaFactory(team=demo_org.team, node_pool=demo_org.pool, resource_name="nvidia.com/gpu", limit=1200)
    TeamBudget.objects.create(team=demo_org.team, monthly_amount=Decimal("12345"))
    for start in (OCT, NOV):
        request = held_request(team=demo_org.team, start=start, end=start + timedelta(hours=600))
        request.requester = demo_org.member
        request.save()
    monthly_reports_close(month=OCT.date(), send_email=False)
    return demo_org


def page(user, url: str) -> str:
    client = Client()
    client.force_login(user)
    with time_machine.travel(NOV + timedelta(days=27, minutes=30), tick=False):
        response = client.get(url)
    assert response.status_code == 200, url
    return response.content.decode()


def test_the_leads_home_and_team_page_group_thousands(big_team: DemoOrg) -> None:
    home = page(big_team.team_lead, "/")
    assert "1,200.00 USD" in home  # the spend by member and the budget panel
    assert "12,345.00 USD" in home and "/ 1,200" in home
    team = page(big_team.team_lead, reverse("allocations:team-detail", args=["vision"]))
    assert "/ 1,200" in team and "1,200.00 USD" in team and "12,345.00 USD" in team
    assert "1200" not in team.replace('"1200"', "")  # no raw figure outside attributes


def test_budgets_reports_and_quotas_group_thousands(big_team: DemoOrg) -> None:
    budgets = page(big_team.platform_admin, reverse("billing:budget-list"))
    assert "12,345.00 USD" in budgets and "1,200.00 USD" in budgets
    reports = page(big_team.team_lead, reverse("billing:report-list"))
    assert "1,200.00 USD" in reports
    report = page(big_team.team_lead, reverse("billing:report-detail", args=["vision", 2026, 10]))
    assert 'id="report-total">1,200.00 USD' in report and "600.0" in report
    quotas = page(big_team.team_lead, reverse("allocations:quota-list"))
    assert "/ 1,200" in quotas and "/ 1200" not in quotas
