"""The header's search: requests by name or id, teams, clusters, only among what the user may see (no IDOR)."""

from __future__ import annotations

import pytest
from django.urls import reverse

from tests.factories import DemoOrg, GpuRequestFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def requests_of_both_teams(demo_org: DemoOrg):
    ours = GpuRequestFactory(team=demo_org.team, requester=demo_org.member, name="vision-sweep")
    theirs = GpuRequestFactory(team=demo_org.other_team, name="nlp-secret-sweep")
    return ours, theirs


def _search(client, query: str) -> str:
    """The results part of the search page (the query itself is echoed in the search boxes above it)."""
    response = client.get(reverse("allocations:search"), {"q": query})
    assert response.status_code == 200
    return response.content.decode().partition('id="search-requests"')[2]


def test_a_member_finds_their_teams_request_by_name_and_by_id(client, demo_org: DemoOrg, requests_of_both_teams):
    ours, _theirs = requests_of_both_teams
    client.force_login(demo_org.member)

    by_name = _search(client, "sweep")
    by_id = _search(client, f"#{ours.pk}")

    assert reverse("allocations:request-detail", args=[ours.pk]) in by_name
    assert "nlp-secret-sweep" not in by_name
    assert reverse("allocations:request-detail", args=[ours.pk]) in by_id
    assert demo_org.team.name in _search(client, demo_org.team.slug)


def test_an_outsider_cannot_find_another_teams_request_by_name_or_id(
    client, demo_org: DemoOrg, requests_of_both_teams
) -> None:
    vision_request, _nlp_request = requests_of_both_teams
    client.force_login(demo_org.outsider)  # a member of nlp, not of vision

    for query in ("vision-sweep", str(vision_request.pk), f"#{vision_request.pk}"):
        page = _search(client, query)
        assert "vision-sweep" not in page
        assert reverse("allocations:request-detail", args=[vision_request.pk]) not in page
        assert "No request matches." in page
    assert "nlp-secret-sweep" in _search(client, "sweep")  # their own team's request is found
    assert demo_org.team.name not in _search(client, demo_org.team.slug)


def test_clusters_are_found_by_platform_admins_only(client, demo_org: DemoOrg) -> None:
    cluster_url = reverse("allocations:cluster-detail", args=[demo_org.cluster.name])

    client.force_login(demo_org.member)
    assert cluster_url not in _search(client, demo_org.cluster.name)

    client.force_login(demo_org.approver)
    assert cluster_url in _search(client, demo_org.cluster.name)


def test_the_search_box_is_in_every_pages_header_and_an_empty_query_lists_nothing(client, demo_org: DemoOrg):
    client.force_login(demo_org.member)

    home = client.get(reverse("home")).content.decode()
    empty = _search(client, "   ")

    assert f'action="{reverse("allocations:search")}"' in home
    assert empty == ""  # no results section at all
