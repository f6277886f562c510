"""The team budget page: platform admins and Finance set the amount, leads the thresholds and chat, members read it,
other teams get a 404; every change is audited and bad thresholds are refused naming the field."""

from __future__ import annotations

from decimal import Decimal

import pytest
from django.test import Client

from audit.models import AuditEvent
from billing.models import TeamBudget
from tests.billing.cost_helpers import finance_user
from tests.factories import DemoOrg, TeamBudgetFactory

pytestmark = pytest.mark.django_db
URL = "/billing/teams/vision/budget/"
FORM = {"monthly_amount": "5000.00", "thresholds_pct": "90, 50", "chat_webhook_url": "slack://T0/B0/XYZ"}


def client_for(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


@pytest.mark.parametrize(
    ("role", "get", "post"),
    [("platform_admin", 200, 302), ("approver", 200, 403), ("team_lead", 200, 302), ("member", 200, 403),
     ("outsider", 404, 404)],
)  # fmt: skip
def test_who_sees_and_who_changes_the_budget(demo_org: DemoOrg, role: str, get: int, post: int) -> None:
    TeamBudgetFactory(team=demo_org.team, monthly_amount=Decimal("1000.00"))
    client = client_for(demo_org.user(role))

    assert client.get(URL).status_code == get
    assert client.post(URL, FORM).status_code == post

    budget = TeamBudget.objects.get(team=demo_org.team)
    if post == 302:
        assert budget.thresholds_pct == [50, 90] and budget.chat_webhook_url == "slack://T0/B0/XYZ"
        # A lead's post carries no amount field: only admins and Finance change it.
        assert budget.monthly_amount == (Decimal("5000.00") if role == "platform_admin" else Decimal("1000.00"))
        event = AuditEvent.objects.filter(object_type="billing.teambudget").latest("at")
        assert event.actor == demo_org.user(role)
        assert "slack://" not in str(event.after)  # the webhook's token is fingerprinted, never stored
    else:
        assert budget.thresholds_pct == [50, 80, 100]


def test_finance_sets_a_first_budget_and_the_team_page_links_to_it(demo_org: DemoOrg) -> None:
    finance = finance_user()
    assert client_for(finance).post(URL, FORM).status_code == 302
    assert TeamBudget.objects.get(team=demo_org.team).monthly_amount == Decimal("5000.00")

    team_page = client_for(demo_org.team_lead).get("/teams/vision/").content.decode()
    assert 'id="team-budget-link"' in team_page and "Set the budget and its alerts" in team_page
    member_page = client_for(demo_org.member).get("/teams/vision/").content.decode()
    assert "Set the budget and its alerts" not in member_page


def test_a_lead_cannot_create_a_budget_and_bad_thresholds_name_the_field(demo_org: DemoOrg) -> None:
    lead = client_for(demo_org.team_lead)
    page = lead.get(URL).content.decode()
    assert "No money budget set." in page and "<form" not in page.partition('id="team-budget"')[2]
    assert lead.post(URL, FORM).status_code == 403

    admin = client_for(demo_org.platform_admin)
    response = admin.post(URL, {**FORM, "thresholds_pct": "50, fifty"})
    assert response.status_code == 400 and b"Whole percentages" in response.content
    response = admin.post(URL, {**FORM, "thresholds_pct": "50, 50"})
    assert response.status_code == 400 and b"Each threshold once." in response.content
    assert not TeamBudget.objects.exists()


def test_the_chat_url_is_never_written_back_into_the_page_and_blank_keeps_it(demo_org: DemoOrg) -> None:
    TeamBudgetFactory(team=demo_org.team, chat_webhook_url="slack://T0/B0/SECRET")
    lead = client_for(demo_org.team_lead)

    assert "SECRET" not in lead.get(URL).content.decode()
    assert lead.post(URL, {"thresholds_pct": "80", "chat_webhook_url": ""}).status_code == 302
    assert TeamBudget.objects.get().chat_webhook_url == "slack://T0/B0/SECRET"  # blank: kept
    assert lead.post(URL, {"thresholds_pct": "80", "remove_chat": "on"}).status_code == 302
    assert TeamBudget.objects.get().chat_webhook_url == ""
