"""The team page in the navigation, and a lead managing the team's members: add, change role, remove; audited;
only that team's leads; never without a lead."""

from __future__ import annotations

import pytest
from django.core.exceptions import PermissionDenied, ValidationError
from django.test import Client
from django.urls import reverse

from allocations.models import Membership, Role
from allocations.teams.services import team_member_add, team_member_remove, team_member_role_change
from audit.models import AuditEvent
from tests.factories import ROLES, DemoOrg, UserFactory

pytestmark = pytest.mark.django_db


def client_for(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def roles(org: DemoOrg) -> dict[str, str]:
    return dict(org.team.memberships.values_list("user__username", "role"))


# --- Services --------------------------------------------------------------------------------------------------


def test_a_lead_adds_changes_and_removes_a_member_and_each_step_is_audited(demo_org: DemoOrg) -> None:
    newcomer = UserFactory(username="erin")

    team_member_add(team=demo_org.team, username="Erin", role=Role.MEMBER, acting_user=demo_org.team_lead)
    team_member_role_change(team=demo_org.team, member=newcomer, role=Role.LEAD, acting_user=demo_org.team_lead)
    assert roles(demo_org)["erin"] == Role.LEAD
    team_member_remove(team=demo_org.team, member=newcomer, acting_user=demo_org.team_lead)

    assert "erin" not in roles(demo_org)
    events = AuditEvent.objects.filter(object_type="allocations.membership").order_by("at", "id")
    assert [event.action for event in events] == ["create", "update", "delete"]
    assert {event.actor_id for event in events} == {demo_org.team_lead.pk}
    assert events[1].before == {"role": "member"} and events[1].after == {"role": "lead"}


@pytest.mark.parametrize("role", [role for role in ROLES if role != "team_lead"])
def test_only_the_teams_leads_manage_its_members(demo_org: DemoOrg, role: str) -> None:
    UserFactory(username="erin")

    with pytest.raises(PermissionDenied, match="Only leads of team Vision"):
        team_member_add(team=demo_org.team, username="erin", role=Role.MEMBER, acting_user=demo_org.user(role))
    with pytest.raises(PermissionDenied):
        team_member_remove(team=demo_org.team, member=demo_org.member, acting_user=demo_org.user(role))


def test_a_lead_of_another_team_cannot_touch_this_one(demo_org: DemoOrg) -> None:
    Membership.objects.filter(user=demo_org.outsider).update(role=Role.LEAD)

    with pytest.raises(PermissionDenied):
        team_member_remove(team=demo_org.team, member=demo_org.member, acting_user=demo_org.outsider)


def test_the_last_lead_can_neither_leave_nor_step_down(demo_org: DemoOrg) -> None:
    with pytest.raises(ValidationError, match="needs at least one lead"):
        team_member_remove(team=demo_org.team, member=demo_org.team_lead, acting_user=demo_org.team_lead)
    with pytest.raises(ValidationError, match="needs at least one lead"):
        team_member_role_change(
            team=demo_org.team, member=demo_org.team_lead, role=Role.MEMBER, acting_user=demo_org.team_lead
        )

    team_member_role_change(team=demo_org.team, member=demo_org.member, role=Role.LEAD, acting_user=demo_org.team_lead)
    team_member_role_change(
        team=demo_org.team, member=demo_org.team_lead, role=Role.MEMBER, acting_user=demo_org.team_lead
    )
    assert roles(demo_org) == {"member": Role.LEAD, "lead": Role.MEMBER}


def test_adding_names_the_field_it_refuses(demo_org: DemoOrg) -> None:
    with pytest.raises(ValidationError) as unknown:
        team_member_add(team=demo_org.team, username="nobody", role=Role.MEMBER, acting_user=demo_org.team_lead)
    assert "username" in unknown.value.message_dict
    with pytest.raises(ValidationError, match="already in team"):
        team_member_add(team=demo_org.team, username="member", role=Role.MEMBER, acting_user=demo_org.team_lead)
    with pytest.raises(ValidationError) as bad_role:
        team_member_add(team=demo_org.team, username="outsider", role="owner", acting_user=demo_org.team_lead)
    assert "role" in bad_role.value.message_dict


# --- Pages -----------------------------------------------------------------------------------------------------


def test_the_navigation_has_teams_and_one_team_goes_straight_to_it(demo_org: DemoOrg) -> None:
    client = client_for(demo_org.member)

    assert 'href="/teams/"' in client.get("/").content.decode()
    response = client.get(reverse("allocations:team-list"))
    assert response.status_code == 302 and response["Location"] == "/teams/vision/"


def test_an_approver_sees_the_list_of_teams(demo_org: DemoOrg) -> None:
    html = client_for(demo_org.approver).get(reverse("allocations:team-list")).content.decode()

    assert 'id="team-list"' in html and "/teams/vision/" in html and "/teams/nlp/" in html


def test_the_lead_sees_the_controls_and_the_member_does_not(demo_org: DemoOrg) -> None:
    lead_html = client_for(demo_org.team_lead).get("/teams/vision/").content.decode()
    member_html = client_for(demo_org.member).get("/teams/vision/").content.decode()

    assert 'id="member-add"' in lead_html and "(the only lead)" in lead_html
    assert f'action="/teams/vision/members/{demo_org.member.pk}/remove/"' in lead_html
    assert f'action="/teams/vision/members/{demo_org.team_lead.pk}/remove/"' not in lead_html
    assert 'data-confirm="Remove member from team Vision?' in lead_html
    assert 'id="member-add"' not in member_html and "/remove/" not in member_html


def test_the_lead_adds_and_removes_through_the_page(demo_org: DemoOrg) -> None:
    erin = UserFactory(username="erin")
    client = client_for(demo_org.team_lead)

    response = client.post("/teams/vision/members/", {"username": "erin", "role": "member"}, follow=True)
    assert "erin joined Vision as member." in response.content.decode()
    response = client.post(f"/teams/vision/members/{erin.pk}/role/", {"role": "lead"}, follow=True)
    assert "erin is now team lead of Vision." in response.content.decode()
    response = client.post(f"/teams/vision/members/{erin.pk}/remove/", follow=True)
    assert "erin was removed from Vision." in response.content.decode()
    response = client.post(f"/teams/vision/members/{demo_org.team_lead.pk}/remove/", follow=True)
    assert "needs at least one lead" in response.content.decode()
    assert roles(demo_org) == {"member": Role.MEMBER, "lead": Role.LEAD}


@pytest.mark.parametrize(("role", "expected"), [("member", 403), ("approver", 403), ("outsider", 404)])
def test_others_are_refused(demo_org: DemoOrg, role: str, expected: int) -> None:
    client = client_for(demo_org.user(role))

    assert client.post(f"/teams/vision/members/{demo_org.member.pk}/remove/").status_code == expected
    assert client.post("/teams/vision/members/", {"username": "outsider", "role": "member"}).status_code == expected
    assert roles(demo_org) == {"member": Role.MEMBER, "lead": Role.LEAD}


def test_membership_writes_are_posts(demo_org: DemoOrg) -> None:
    client = client_for(demo_org.team_lead)

    assert client.get(f"/teams/vision/members/{demo_org.member.pk}/remove/").status_code == 405
