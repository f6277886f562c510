"""The requests page with no filter (allocations.request_list_rows.UnfilteredRequestRows, SQL compiled once per shape)
reads what the page's querysets read, and the page it prints is the one the FilterSet's path prints."""

from __future__ import annotations

import re

import pytest
from django.contrib.auth.models import AnonymousUser
from django.test import Client

from allocations.compiled_reads import prepared_values
from allocations.models import RequestStatus, SlaTier
from allocations.request_list_rows import UnfilteredRequestRows, request_table_rows
from allocations.request_tables import REQUEST_LIST_SORTS, request_list_ordering
from allocations.selectors import gpu_requests_visible_to
from tests.factories import GpuRequestFactory, MembershipFactory, TeamFactory, UserFactory

pytestmark = pytest.mark.django_db

SORTS = [direction + key for key in REQUEST_LIST_SORTS for direction in ("", "-")]


@pytest.fixture
def people():
    """A member of two teams (one request theirs in each), an approver, a member of a third team, someone in no
    team, and 13 requests across the three teams with ties in every sortable column."""
    member, approver, stranger, loner = UserFactory(), UserFactory(is_staff=True), UserFactory(), UserFactory()
    vision, nlp, foreign = TeamFactory(name="Vision"), TeamFactory(name="NLP"), TeamFactory(name="Foreign")
    MembershipFactory(user=member, team=vision)
    MembershipFactory(user=member, team=nlp)
    MembershipFactory(user=stranger, team=foreign)
    tiers = [SlaTier.objects.get(slug="tier2_batch"), None]
    statuses = [RequestStatus.PENDING_APPROVAL, RequestStatus.ACTIVE, RequestStatus.DRAFT]
    teams = [vision, nlp, foreign]
    for i in range(13):
        GpuRequestFactory(
            team=teams[i % 3],
            requester=member if i in (0, 4) else stranger,
            name=f"job-{i % 4}",
            status=statuses[i % 3],
            sla_tier=tiers[i % 2],
        )
    return {"member": member, "approver": approver, "stranger": stranger, "loner": loner}


def _queryset_rows(user, *, mine: bool, ordering, start: int, stop: int, upto: int):
    """What the page read before: the visible requests, only the user's with ``mine``, its window and count."""
    if not user.is_authenticated:
        return [], 0
    requests = gpu_requests_visible_to(user=user).select_related(None)
    if mine:
        requests = requests.filter(requester=user)
    rows = prepared_values(request_table_rows(requests.order_by(*ordering)[start:stop]))
    return rows, requests.order_by()[:upto].count()


@pytest.mark.parametrize("who", ["member", "approver", "stranger", "loner", "anonymous"])
@pytest.mark.parametrize("mine", [False, True])
def test_every_window_and_count_is_the_querysets(people, who, mine) -> None:
    user = AnonymousUser() if who == "anonymous" else people[who]
    for sort in SORTS:
        ordering = request_list_ordering(sort)
        source = UnfilteredRequestRows(user=user, mine=mine, ordering=ordering)
        # The page as it opens, past psycopg's prepare threshold (5 runs): prepared, it answers as the first runs did.
        for _ in range(6 if sort == "-created" else 1):
            for start, stop, upto in [(0, 5, 4), (0, 5, 20), (5, 10, 20), (10, 15, 20), (20, 25, 30)]:
                expected, count = _queryset_rows(user, mine=mine, ordering=ordering, start=start, stop=stop, upto=upto)
                rows, counted = source.rows_with_count(start, stop, upto)
                assert [{k: v for k, v in row.items() if k != "_bounded_count"} for row in rows] == expected
                assert counted == (count if expected else None)
                assert source.rows(start, stop) == expected
                assert source.count(upto) == count
    if who in ("member", "approver", "stranger") and not (mine and who == "approver"):
        assert expected or source.count(100)  # the cases read rows at all


def _page(client: Client, query: str) -> str:
    # The sign-out form's CSRF token is masked anew on every page; the links keep an empty search as they keep any.
    html = client.get(f"/requests/{query}").content.decode().replace("q=&amp;", "")
    return re.sub(r'name="csrfmiddlewaretoken" value="[^"]+"', "", html)


@pytest.mark.parametrize("who", ["member", "approver", "loner"])
def test_the_page_without_a_filter_is_the_page_through_the_filterset(people, who) -> None:
    client = Client()
    client.force_login(people[who])
    for extra in ["", "&sort=name", "&sort=-status&page=2", "&mine=1", "&page=9"]:
        unfiltered = _page(client, "?" + extra.lstrip("&"))
        # An empty search goes through the FilterSet and filters nothing: the same page, byte for byte.
        assert unfiltered == _page(client, "?q=" + extra)
        if who == "member":
            assert "job-0" in unfiltered or "page=" in extra
