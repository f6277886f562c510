"""Finance reads every team: the teams list with spend, budget and projection, the budgets list with its actions, team
and request pages opened read-only from every report line, a navigation without "New request"; members of other
teams still get a 404 for every page and endpoint that names another team's object."""

from __future__ import annotations

from datetime import timedelta
from decimal import Decimal

import pytest
from django.test import Client
from django.urls import reverse
from django.utils import timezone
from rest_framework.test import APIClient

from allocations.models import RequestStatus, Role
from billing.costs.services import monthly_reports_close
from tests.billing.cost_helpers import OCT, finance_user, held_request, load_book
from tests.factories import DemoOrg, GpuRequestFactory, MembershipFactory, TeamBudgetFactory

pytestmark = pytest.mark.django_db


def client_for(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def active_request(demo_org: DemoOrg, *, team=None, name: str = "train-resnet"):
    team = team or demo_org.other_team
    requester = demo_org.outsider if team == demo_org.other_team else demo_org.member
    return GpuRequestFactory(
        team=team,
        requester=requester,
        name=name,
        status=RequestStatus.ACTIVE,
        approved_at=timezone.now() - timedelta(hours=5),
        activated_at=timezone.now() - timedelta(hours=5),
        node_pool=demo_org.pool,
        cluster=demo_org.cluster,
    )


def test_finance_teams_list_shows_every_team_with_its_month(demo_org: DemoOrg) -> None:
    TeamBudgetFactory(team=demo_org.team, monthly_amount=Decimal("1000.00"))

    response = client_for(finance_user()).get(reverse("allocations:team-list"))

    body = response.content.decode()
    assert response.status_code == 200
    assert "You are not in a team yet" not in body
    assert 'data-team="vision"' in body and 'data-team="nlp"' in body
    assert "Spent this month" in body and "Projected month end" in body
    assert "1,000.00 USD" in body  # vision's budget, linked to its budget page
    assert reverse("billing:team-budget", args=["vision"]) in body


def test_finance_opens_any_team_page_read_only(demo_org: DemoOrg) -> None:
    client = client_for(finance_user())

    response = client.get(reverse("allocations:team-detail", args=["nlp"]))

    body = response.content.decode()
    assert response.status_code == 200
    assert 'id="team-read-only"' in body
    assert 'id="member-add"' not in body and "/members/" not in body  # no member management
    assert reverse("allocations:request-new") not in body
    # Reading is all: adding a member is refused.
    added = client.post(reverse("allocations:team-member-add", args=["nlp"]), {"username": "member", "role": "member"})
    assert added.status_code == 403


def test_finance_opens_any_request_read_only_and_changes_nothing(demo_org: DemoOrg) -> None:
    gpu_request = active_request(demo_org)
    client = client_for(finance_user())

    response = client.get(reverse("allocations:request-detail", args=[gpu_request.pk]))

    body = response.content.decode()
    assert response.status_code == 200
    assert "train-resnet" in body
    assert reverse("allocations:request-release", args=[gpu_request.pk]) not in body
    assert reverse("allocations:request-cancel", args=[gpu_request.pk]) not in body
    assert client.post(reverse("allocations:request-release", args=[gpu_request.pk])).status_code == 403
    gpu_request.refresh_from_db()
    assert gpu_request.status == RequestStatus.ACTIVE


def test_every_line_of_a_closed_report_opens_for_finance(demo_org: DemoOrg) -> None:
    load_book({"H100-80GB": "2.00"})
    gpu_request = held_request(team=demo_org.other_team, start=OCT, end=OCT + timedelta(hours=10))
    monthly_reports_close(month=OCT.date(), send_email=False)
    client = client_for(finance_user())

    report = client.get(reverse("billing:report-detail", args=["nlp", 2026, 10]))

    line = reverse("allocations:request-detail", args=[gpu_request.pk])
    assert report.status_code == 200 and f'href="{line}"' in report.content.decode()
    assert client.get(line).status_code == 200


def test_finance_navigation_offers_what_finance_uses(demo_org: DemoOrg) -> None:
    finance = finance_user()

    nav = client_for(finance).get(reverse("home")).content.decode().partition('aria-label="Main"')[2]
    nav = nav.partition("</nav>")[0]

    assert "New request" not in nav
    for name in ("billing:budget-list", "billing:dashboard", "billing:report-list", "allocations:team-list"):
        assert reverse(name) in nav
    assert ">Requests<" in nav  # every team's, not "My requests"
    # Finance in a team asks for GPUs like any member.
    MembershipFactory(user=finance, team=demo_org.team, role=Role.MEMBER)
    assert "New request" in client_for(finance).get(reverse("home")).content.decode()


def test_a_members_navigation_is_unchanged(demo_org: DemoOrg) -> None:
    body = client_for(demo_org.member).get(reverse("home")).content.decode()
    nav = body.partition('aria-label="Main"')[2].partition("</nav>")[0]

    assert "New request" in nav and "My requests" in nav
    assert reverse("billing:budget-list") not in nav


def test_finance_home_lists_every_teams_month_worst_first(demo_org: DemoOrg) -> None:
    TeamBudgetFactory(team=demo_org.other_team, monthly_amount=Decimal("1.00"))
    active_request(demo_org)

    body = client_for(finance_user()).get(reverse("home")).content.decode()

    card = body.partition('id="home-team-budgets"')[2].partition("</section>")[0]
    assert card.index('data-team="nlp"') < card.index('data-team="vision"')  # over budget before no budget
    assert 'data-level="over"' in card
    assert reverse("allocations:team-detail", args=["nlp"]) in card


@pytest.mark.parametrize(
    ("role", "teams", "action"),
    [("finance", {"vision", "nlp"}, "Set a budget"), ("platform_admin", {"vision", "nlp"}, "Set a budget"),
     ("team_lead", {"vision"}, "Edit budget"), ("member", {"vision"}, "View budget"), ("outsider", {"nlp"}, None)],
)  # fmt: skip
def test_budget_list_by_role(demo_org: DemoOrg, role: str, teams: set[str], action: str | None) -> None:
    TeamBudgetFactory(team=demo_org.team, monthly_amount=Decimal("1000.00"))
    user = finance_user() if role == "finance" else demo_org.user(role)

    response = client_for(user).get(reverse("billing:budget-list"))

    body = response.content.decode()
    assert response.status_code == 200
    listed = {slug for slug in ("vision", "nlp") if f'data-team="{slug}"' in body}
    assert listed == teams
    vision = body.partition('data-team="vision"')[2].partition("</tr>")[0]
    nlp = body.partition('data-team="nlp"')[2].partition("</tr>")[0]
    if "vision" in teams:
        assert ("Edit budget" if role != "member" else "View budget") in vision
    if role in ("finance", "platform_admin"):
        assert action in nlp  # nlp has no budget yet: those who set amounts are offered to
    if role == "outsider":
        assert "View budget" in nlp and "Set a budget" not in nlp


@pytest.mark.parametrize("name", ["allocations:team-detail", "billing:team-budget"])
def test_another_teams_member_still_gets_404_for_team_pages(demo_org: DemoOrg, name: str) -> None:
    assert client_for(demo_org.outsider).get(reverse(name, args=["vision"])).status_code == 404


def test_another_teams_member_still_gets_404_for_a_request(demo_org: DemoOrg) -> None:
    gpu_request = active_request(demo_org, team=demo_org.team)
    client = client_for(demo_org.outsider)

    assert client.get(reverse("allocations:request-detail", args=[gpu_request.pk])).status_code == 404
    api = APIClient()
    api.force_authenticate(demo_org.outsider)
    assert api.get(f"/api/v1/requests/{gpu_request.pk}/").status_code == 404
    assert api.get("/api/v1/teams/vision/").status_code == 404


def test_finance_reads_through_the_api_and_changes_nothing(demo_org: DemoOrg) -> None:
    gpu_request = active_request(demo_org, team=demo_org.team)
    api = APIClient()
    api.force_authenticate(finance_user())

    assert api.get(f"/api/v1/requests/{gpu_request.pk}/").status_code == 200
    assert api.get("/api/v1/teams/nlp/").status_code == 200
    assert api.post(f"/api/v1/requests/{gpu_request.pk}/release/", {}, format="json").status_code == 403
    gpu_request.refresh_from_db()
    assert gpu_request.status == RequestStatus.ACTIVE
