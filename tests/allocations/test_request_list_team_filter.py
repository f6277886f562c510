"""The request list's team filter offers the teams the user may see, by name, and keeps the chosen one."""

from __future__ import annotations

import re

import pytest
from django.urls import reverse

from tests.factories import DemoOrg, MembershipFactory, TeamFactory

pytestmark = pytest.mark.django_db


def _team_options(response) -> list[tuple[str, bool]]:
    select = response.content.decode().partition('<select name="team" id="id_team">')[2].partition("</select>")[0]
    return [(slug, bool(chosen)) for slug, chosen in re.findall(r'<option value="([^"]*)"\s*(selected)?', select)]


def test_a_member_is_offered_their_own_teams_by_name_and_an_approver_every_team(client, demo_org: DemoOrg) -> None:
    aardvark = TeamFactory(slug="aardvark", name="Aardvark")
    MembershipFactory(user=demo_org.member, team=aardvark)
    TeamFactory(slug="zebra", name="Zebra")
    url = reverse("allocations:request-list")

    for _ in range(7):  # past the prepare threshold: the prepared read answers the same
        client.force_login(demo_org.member)
        assert _team_options(client.get(url)) == [("", False), ("aardvark", False), (demo_org.team.slug, False)]
    chosen = client.get(url, {"team": "aardvark"})
    assert _team_options(chosen) == [("", False), ("aardvark", True), (demo_org.team.slug, False)]

    client.force_login(demo_org.approver)
    every = [team.slug for team in sorted([aardvark, demo_org.team, demo_org.other_team], key=lambda t: t.name)]
    assert _team_options(client.get(url)) == [("", False), *[(slug, False) for slug in every], ("zebra", False)]
    client.force_login(demo_org.outsider)  # a member of the other team only
    assert _team_options(client.get(url)) == [("", False), (demo_org.other_team.slug, False)]
