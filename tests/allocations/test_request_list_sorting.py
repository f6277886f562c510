"""The request list's sortable headers: ``?sort=`` from an allow-list, server-side, keeping the filters."""

from __future__ import annotations

import re

import pytest
from django.urls import reverse

from tests.factories import DemoOrg, GpuRequestFactory

pytestmark = pytest.mark.django_db


def _names(response) -> list[str]:
    return re.findall(r'<a href="/requests/\d+/">([^<]+)</a>', response.content.decode())


@pytest.fixture
def three_requests(demo_org: DemoOrg) -> None:
    for name in ("bravo", "alpha", "charlie"):
        GpuRequestFactory(team=demo_org.team, requester=demo_org.member, name=name)
    GpuRequestFactory(team=demo_org.other_team, name="other-teams-request")


def test_sort_by_name_both_ways_and_the_header_says_which(client, demo_org: DemoOrg, three_requests) -> None:
    client.force_login(demo_org.member)
    url = reverse("allocations:request-list")

    ascending = client.get(url, {"sort": "name"})
    descending = client.get(url, {"sort": "-name"})

    assert _names(ascending) == ["alpha", "bravo", "charlie"]
    assert _names(descending) == ["charlie", "bravo", "alpha"]
    assert 'aria-sort="ascending"' in ascending.content.decode()
    assert 'href="?sort=-name"' in ascending.content.decode()  # clicking again flips it
    assert "other-teams-request" not in descending.content.decode()  # sorting never widens the scope


def test_the_default_is_newest_first(client, demo_org: DemoOrg, three_requests) -> None:
    client.force_login(demo_org.member)

    response = client.get(reverse("allocations:request-list"))

    assert _names(response) == ["charlie", "alpha", "bravo"]
    assert 'aria-sort="descending"' in response.content.decode()


def test_sort_links_keep_the_filters(client, demo_org: DemoOrg, three_requests) -> None:
    client.force_login(demo_org.member)

    response = client.get(
        reverse("allocations:request-list"), {"q": "a", "status": ["pending_approval", "active"], "page": "1"}
    )

    assert 'href="?q=a&amp;status=pending_approval&amp;status=active&amp;sort=team"' in response.content.decode()


@pytest.mark.parametrize("sort", ["password", "requester__password", "-team__cost_center", "name;drop"])
def test_a_sort_outside_the_allow_list_is_a_400_naming_sort(client, demo_org: DemoOrg, sort: str) -> None:
    client.force_login(demo_org.member)

    response = client.get(reverse("allocations:request-list"), {"sort": sort})

    assert response.status_code == 400
    assert "sort: Sort by one of id, name, team" in response.content.decode()
