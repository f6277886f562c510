"""The requests page lists exactly the requests its viewer may see (only theirs with "Only mine"), in the order of
each sortable column with the id breaking ties, a page at a time, and prints what each row shows."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from django.test import Client
from django.utils import timezone

from allocations.models import GpuRequest, RequestStatus, SlaTier
from allocations.requests.listing import REQUEST_LIST_SORTS
from tests.factories import GpuRequestFactory, MembershipFactory, TeamFactory, UserFactory

pytestmark = pytest.mark.django_db

SORTS = [direction + key for key in REQUEST_LIST_SORTS for direction in ("", "-")]
# What each sort key orders by, read off a request (the tier's name may be missing: SQL puts nulls first ascending
# on SQLite and last on PostgreSQL, so the tier is sorted only among requests that have one).
SORT_VALUES = {
    "id": lambda r: r.pk,
    "name": lambda r: r.name,
    "team": lambda r: r.team.name,
    "requester": lambda r: r.requester.username,
    "workload": lambda r: r.workload_type,
    "tier": lambda r: r.sla_tier.name,
    "status": lambda r: r.status,
    "created": lambda r: r.created_at,
}


@pytest.fixture
def people():
    """A member of two teams (one request theirs in each), an approver, a member of a third team, someone in no
    team, and 13 requests across the three teams with ties in every sortable column."""
    member, approver, stranger, loner = UserFactory(), UserFactory(is_staff=True), UserFactory(), UserFactory()
    vision, nlp, foreign = TeamFactory(name="Vision"), TeamFactory(name="NLP"), TeamFactory(name="Foreign")
    MembershipFactory(user=member, team=vision)
    MembershipFactory(user=member, team=nlp)
    MembershipFactory(user=stranger, team=foreign)
    statuses = [RequestStatus.PENDING_APPROVAL, RequestStatus.ACTIVE, RequestStatus.DRAFT]
    teams = [vision, nlp, foreign]
    tier = SlaTier.objects.get(slug="tier2_batch")
    now = timezone.now()
    for i in range(13):
        made = GpuRequestFactory(
            team=teams[i % 3],
            requester=member if i in (0, 4) else stranger,
            name=f"job-{i % 4}",
            status=statuses[i % 3],
            sla_tier=tier,
        )
        GpuRequest.objects.filter(pk=made.pk).update(created_at=now - timedelta(minutes=i % 5))
    return {"member": member, "approver": approver, "stranger": stranger, "loner": loner}


def _listed_ids(client: Client, query: str) -> list[int]:
    html = client.get(f"/requests/{query}").content.decode()
    return [int(pk) for pk in re.findall(r'<a href="/requests/(\d+)/">', html)]


def _expected_ids(user, *, mine: bool, sort: str) -> list[int]:
    if user.is_staff:
        visible = list(GpuRequest.objects.all())
    else:
        teams = set(user.memberships.values_list("team_id", flat=True))
        visible = [r for r in GpuRequest.objects.all() if r.team_id in teams]
    if mine:
        visible = [r for r in visible if r.requester_id == user.pk]
    key = SORT_VALUES[sort.removeprefix("-")]
    return [r.pk for r in sorted(visible, key=lambda r: (key(r), r.pk), reverse=sort.startswith("-"))]


@pytest.mark.parametrize("who", ["member", "approver", "stranger", "loner"])
@pytest.mark.parametrize("mine", [False, True])
def test_every_sort_lists_the_visible_requests_in_its_order(people, who, mine) -> None:
    user = people[who]
    client = Client()
    client.force_login(user)
    for sort in SORTS:
        query = f"?sort={sort}" + ("&mine=1" if mine else "")
        assert _listed_ids(client, query) == _expected_ids(user, mine=mine, sort=sort), sort


def test_pages_of_25_cover_the_list_once(people) -> None:
    GpuRequestFactory.create_batch(40, team=people["member"].memberships.first().team, requester=people["member"])
    client = Client()
    client.force_login(people["member"])

    pages = [_listed_ids(client, f"?sort=id&page={number}") for number in (1, 2, 3)]

    assert [len(page) for page in pages] == [25, 24, 24]  # page 3 is past the end: the last page, as get_page does
    assert pages[0] + pages[1] == _expected_ids(people["member"], mine=False, sort="id")
    assert pages[2] == pages[1]


def test_a_row_shows_the_requests_columns_escaped(people) -> None:
    member = people["member"]
    team = member.memberships.first().team
    odd = GpuRequestFactory(team=team, requester=member, name='<b>"odd" & name</b>', sla_tier=None)
    GpuRequest.objects.filter(pk=odd.pk).update(resource_name="", resource_units=0)
    client = Client()
    client.force_login(member)

    html = client.get("/requests/?sort=-id").content.decode()
    row, next_row, *_ = html.partition("<tbody>")[2].split("</tr>")

    assert f'<td data-label="#">{odd.pk}</td>' in row
    # Jinja2 (markupsafe) writes a double quote as &#34;, Django as &quot;: both are the escaped character.
    assert f'<a href="/requests/{odd.pk}/">&lt;b&gt;&#34;odd&#34; &amp; name&lt;/b&gt;</a>' in row
    assert f'<a href="/teams/{team.slug}/">{team.name}</a>' in row
    assert f'<td data-label="Requester">{member.username}</td>' in row
    assert '<td data-label="Workload">Training</td>' in row
    # No allocation, no tier.
    assert '<td data-label="Allocation"><span class="muted">—</span></td>' in row
    assert '<td data-label="Tier">—</td>' in row
    assert '<span class="status status-pending_approval">Pending approval</span>' in row
    assert re.search(r'<td data-label="Created" title="\d{4}-\d\d-\d\dT[^"]+">0\xa0minutes ago</td>', row)
    tier = SlaTier.objects.get(slug="tier2_batch").name
    assert "<code>nvidia.com/gpu</code> × 1" in next_row  # noqa: RUF001
    assert f'<td data-label="Tier">{tier}</td>' in next_row


@pytest.mark.parametrize(
    ("number", "shown"),
    [("99999999999999999999", 2), ("-99999999999999999999", 2), ("0", 2), ("3", 2), ("x", 1), ("2.5", 1)],
)
def test_any_page_number_shows_a_page_as_get_page_does(people, number, shown) -> None:
    # Past the end (or below 1) the last page, no number at all the first, as Django's Paginator.get_page answers.
    member = people["member"]
    GpuRequestFactory.create_batch(20, team=member.memberships.first().team, requester=member)
    client = Client()
    client.force_login(member)
    every = _expected_ids(member, mine=False, sort="id")

    response = client.get("/requests/", {"page": number, "sort": "id"})

    assert response.status_code == 200
    assert response.context["page"].number == shown
    assert _listed_ids(client, f"?sort=id&page={number}") == every[(shown - 1) * 25 : shown * 25]
