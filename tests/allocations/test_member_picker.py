"""The team page's user picker: a lead finds colleagues by name, username or e-mail (never those already in the
team, never inactive ones, never more than ten); members and other teams get nothing."""

from __future__ import annotations

import pytest
from django.test import Client
from django.urls import reverse

from tests.factories import DemoOrg, UserFactory

pytestmark = pytest.mark.django_db


def client_for(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def url(slug: str = "vision") -> str:
    return reverse("allocations:team-member-candidates", args=[slug])


def test_a_lead_finds_users_by_name_username_or_email(demo_org: DemoOrg) -> None:
    UserFactory(username="jdoe", first_name="Jane", last_name="Doe", email="jane.doe@example.com")
    UserFactory(username="xyz", first_name="Rob", last_name="Janeway", email="rob@example.com")
    UserFactory(username="janet", is_active=False)
    lead = client_for(demo_org.team_lead)

    by_name = lead.get(url(), {"q": "jane"}).json()["users"]
    by_email = lead.get(url(), {"q": "doe@exa"}).json()["users"]

    assert by_name == [{"username": "jdoe", "name": "Jane Doe"}, {"username": "xyz", "name": "Rob Janeway"}]
    assert [u["username"] for u in by_email] == ["jdoe"]
    assert "email" not in by_name[0]


def test_members_of_the_team_are_not_offered_and_one_letter_finds_nothing(demo_org: DemoOrg) -> None:
    lead = client_for(demo_org.team_lead)

    assert [u["username"] for u in lead.get(url(), {"q": "member"}).json()["users"]] == []
    assert lead.get(url(), {"q": "o"}).json()["users"] == []
    assert [u["username"] for u in lead.get(url(), {"q": "outsider"}).json()["users"]] == ["outsider"]


def test_at_most_ten_candidates(demo_org: DemoOrg) -> None:
    for n in range(12):
        UserFactory(username=f"engineer-{n:02}")

    users = client_for(demo_org.team_lead).get(url(), {"q": "engineer"}).json()["users"]

    assert len(users) == 10 and users[0]["username"] == "engineer-00"


def test_only_leads_search_and_other_teams_are_404(demo_org: DemoOrg) -> None:
    assert client_for(demo_org.member).get(url(), {"q": "out"}).status_code == 403
    assert client_for(demo_org.outsider).get(url(), {"q": "mem"}).status_code == 404
    assert client_for(demo_org.team_lead).get(url("nlp"), {"q": "out"}).status_code == 404


def test_the_team_page_offers_the_picker_to_leads(demo_org: DemoOrg) -> None:
    html = client_for(demo_org.team_lead).get(reverse("allocations:team-detail", args=["vision"])).content.decode()

    assert 'list="member-candidates"' in html and f'data-candidates-url="{url()}"' in html
    assert "js/member_picker.js" in html
