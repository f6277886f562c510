"""The request list's columns (chosen and saved per user), its search, its CSV export and the requester's bulk
release and cancel."""

from __future__ import annotations

import csv
import io
from datetime import timedelta

import pytest
from django.contrib.messages import get_messages
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from allocations.models import GpuRequest, RequestStatus, SavedListColumns
from allocations.requests.list_columns import DEFAULT_REQUEST_LIST_COLUMNS, REQUEST_LIST_COLUMN_REGISTRY
from billing.models import DailyUsage
from tests.factories import (
    ClusterFactory,
    GpuRequestFactory,
    MembershipFactory,
    NodePoolFactory,
    TeamFactory,
    UserFactory,
    dedicated_spec,
)

pytestmark = pytest.mark.django_db

EVERY_COLUMN = [column.key for column in REQUEST_LIST_COLUMN_REGISTRY]


@pytest.fixture
def org():
    """A member of vision with a teammate, a stranger in another team, a pool, and requests of each."""
    member, teammate, stranger = UserFactory(), UserFactory(username="dana"), UserFactory()
    vision = TeamFactory(slug="vision", name="Vision")
    foreign = TeamFactory(slug="foreign", name="Foreign")
    MembershipFactory(user=member, team=vision)
    MembershipFactory(user=teammate, team=vision)
    MembershipFactory(user=stranger, team=foreign)
    pool = NodePoolFactory(cluster=ClusterFactory(name="east"), name="a100-pool")
    spec = {**dedicated_spec("A100-80GB"), "estimated_monthly_cost": {"amount": "1234.50", "currency": "USD"}}
    placed = GpuRequestFactory(
        team=vision,
        requester=member,
        name="placed",
        status=RequestStatus.ACTIVE,
        spec=spec,
        node_pool=pool,
        cluster=pool.cluster,
        expires_at=timezone.now() + timedelta(hours=30),
    )
    pending = GpuRequestFactory(team=vision, requester=member, name="waiting", spec={}, gpu_model_requested="L4")
    theirs = GpuRequestFactory(team=vision, requester=teammate, name="teammates", status=RequestStatus.PENDING_APPROVAL)
    foreign_request = GpuRequestFactory(team=foreign, requester=stranger, name="foreign-job")
    return {
        "member": member,
        "teammate": teammate,
        "stranger": stranger,
        "vision": vision,
        "pool": pool,
        "placed": placed,
        "pending": pending,
        "theirs": theirs,
        "foreign": foreign_request,
    }


def _client(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def _headers(html: str) -> str:
    return html.partition("<thead>")[2].partition("</thead>")[0]


def test_the_chosen_columns_are_saved_for_the_user_and_shown_in_every_session(org) -> None:
    member = org["member"]
    response = _client(member).post(
        "/requests/columns/", {"columns": ["name", "gpu_model", "cost", "status", "nosuch"], "next": "/requests/?q=x"}
    )
    assert response.status_code == 302 and response["Location"] == "/requests/?q=x"
    assert SavedListColumns.objects.get(user=member).columns == ["name", "gpu_model", "status", "cost"]

    headers = _headers(_client(member).get("/requests/").content.decode())  # another session
    assert "GPU model" in headers and "Cost / month" in headers and "Created" not in headers and "Team" not in headers
    # Someone else still sees the defaults.
    assert "Created" in _headers(_client(org["teammate"]).get("/requests/").content.decode())


def test_choosing_no_column_keeps_the_choice_and_says_why(org) -> None:
    client = _client(org["member"])
    client.post("/requests/columns/", {"columns": ["name", "status"]})
    response = client.post("/requests/columns/", {"columns": ["nosuch"]})
    assert [str(m) for m in get_messages(response.wsgi_request)] == ["Choose at least one column."]
    assert SavedListColumns.objects.get(user=org["member"]).columns == ["name", "status"]
    client.post("/requests/columns/", {"reset": "1"})
    assert SavedListColumns.objects.get(user=org["member"]).columns == list(DEFAULT_REQUEST_LIST_COLUMNS)


def test_every_column_shows_its_value(org) -> None:
    client = _client(org["member"])
    client.post("/requests/columns/", {"columns": EVERY_COLUMN})
    placed = org["placed"]
    DailyUsage.objects.create(
        cluster=org["pool"].cluster,
        team=org["vision"],
        request=placed,
        day=timezone.now().date(),
        sample_count=120,
        util_weighted=60 * 20.0 + 60 * 50.0,
        util_samples=120,
        last_hour=timezone.now(),
    )
    html = client.get("/requests/?sort=id").content.decode()
    row = html.partition(f'name="ids" value="{placed.pk}"')[2].partition("</tr>")[0]
    assert f"<code>gpr-{placed.pk}</code>" in row
    assert "<code>team-vision</code>" in row
    assert '<td data-label="GPU model">A100-80GB</td>' in row
    assert '<td data-label="Pool">east/a100-pool</td>' in row
    assert "1,234.50 USD" in row
    assert '<td class="num" data-label="GPU utilization, 7 days">35 %</td>' in row
    assert "in 1\xa0day, 5\xa0hours" in row
    waiting = html.partition(f'name="ids" value="{org["pending"].pk}"')[2].partition("</tr>")[0]
    assert '<td data-label="GPU model">L4</td>' in waiting and "no price" in waiting


def test_every_column_reads_no_more_for_many_rows_than_for_one(org) -> None:
    client = _client(org["member"])
    client.post("/requests/columns/", {"columns": EVERY_COLUMN})
    client.get("/requests/")  # the session's first view reads the saved choice

    def queries() -> int:
        with CaptureQueriesContext(connection) as captured:
            assert client.get("/requests/").status_code == 200
        return len(captured)

    few = queries()
    for _ in range(24):
        GpuRequestFactory(
            team=org["vision"], requester=org["member"], node_pool=org["pool"], cluster=org["pool"].cluster
        )
    assert queries() == few


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("gpr-{placed}", {"placed"}),
        ("GPR-{placed}", {"placed"}),
        ("#{pending}", {"pending"}),
        ("a100-80", {"placed"}),  # the GPU model placed
        ("l4", {"pending"}),  # the GPU model asked for
        ("a100-pool", {"placed"}),
        ("east", {"placed"}),  # the pool's cluster
        ("team-vision", {"placed", "pending", "theirs"}),
        ("dana", {"theirs"}),
        ("foreign", set()),  # another team's namespace and request: not visible
    ],
)
def test_quick_search_finds_workload_names_models_pools_namespaces_and_requesters(org, query, expected) -> None:
    query = query.format(placed=org["placed"].pk, pending=org["pending"].pk)
    response = _client(org["member"]).get("/requests/", {"q": query, "sort": "id"})
    names = {
        name
        for name in ("placed", "waiting", "teammates", "foreign-job")
        if f">{name}</a>" in response.content.decode()
    }
    assert names == {{"placed": "placed", "pending": "waiting", "theirs": "teammates"}[key] for key in expected}


def _export(client: Client, query: str = "") -> list[list[str]]:
    response = client.get(f"/requests/export.csv{query}")
    assert response.status_code == 200 and response.streaming
    assert response["Content-Type"] == "text/csv; charset=utf-8"
    text = b"".join(response.streaming_content).decode().removeprefix("\ufeff")
    return list(csv.reader(io.StringIO(text)))


def test_the_export_has_the_shown_columns_and_every_filtered_request(org) -> None:
    member = org["member"]
    for i in range(30):
        GpuRequestFactory(team=org["vision"], requester=member, name=f"bulk-{i}")
    client = _client(member)
    client.post("/requests/columns/", {"columns": ["id", "name", "allocation", "cost", "status", "created"]})

    rows = _export(client, "?q=bulk&sort=name")
    assert rows[0] == ["#", "Name", "Resource", "Units", "Status", "Cost / month", "Currency", "Created (UTC)"]
    assert len(rows) == 31  # past the page of 25
    assert [row[1] for row in rows[1:4]] == ["bulk-0", "bulk-1", "bulk-10"]

    placed = next(row for row in _export(client, "?q=placed") if row[1] == "placed")
    assert placed[2:7] == ["nvidia.com/gpu", "1", "Active", "1234.50", "USD"]
    everything = _export(client)
    assert "foreign-job" not in {row[1] for row in everything}
    assert len(everything) == 1 + 33


def test_an_export_with_a_bad_filter_says_which(org) -> None:
    response = _client(org["member"]).get("/requests/export.csv?created_after=yesterday")
    assert response.status_code == 400 and b"created_after" in response.content


def _bulk(client: Client, action: str, ids: list[int]) -> list[str]:
    response = client.post("/requests/bulk/", {"action": action, "ids": ids, "next": "/requests/?mine=1"})
    assert response.status_code == 302 and response["Location"] == "/requests/?mine=1"
    return [str(m) for m in get_messages(response.wsgi_request)]


def test_bulk_cancel_acts_on_each_ticked_request_the_user_may_cancel(org) -> None:
    client = _client(org["member"])
    second = GpuRequestFactory(team=org["vision"], requester=org["member"], name="second")
    ids = [org["pending"].pk, second.pk, org["placed"].pk, org["foreign"].pk]
    said = _bulk(client, "cancel", ids)

    assert GpuRequest.objects.get(pk=org["pending"].pk).status == RequestStatus.RELEASED
    assert GpuRequest.objects.get(pk=second.pk).status == RequestStatus.RELEASED
    assert GpuRequest.objects.get(pk=org["placed"].pk).status == RequestStatus.ACTIVE
    assert GpuRequest.objects.get(pk=org["foreign"].pk).status == RequestStatus.PENDING_APPROVAL
    assert f"Cancelled 2 requests: #{org['pending'].pk}, #{second.pk}." in said
    assert f"#{org['placed'].pk} placed is active: not cancelled." in said
    assert f"Request #{org['foreign'].pk} was not found." in said


def test_bulk_release_gives_back_running_allocations(org) -> None:
    said = _bulk(_client(org["member"]), "release", [org["placed"].pk])
    assert GpuRequest.objects.get(pk=org["placed"].pk).status == RequestStatus.RELEASED
    assert said == [f"Released 1 request: #{org['placed'].pk}."]


def test_bulk_cancel_of_a_teammates_request_is_refused_by_its_rules(org) -> None:
    said = _bulk(_client(org["member"]), "cancel", [org["theirs"].pk])
    assert GpuRequest.objects.get(pk=org["theirs"].pk).status == RequestStatus.PENDING_APPROVAL
    assert len(said) == 1 and said[0].startswith(f"#{org['theirs'].pk} teammates: ")


@pytest.mark.parametrize(
    ("data", "said"),
    [
        ({"action": "approve", "ids": ["1"]}, "Choose cancel or release."),
        ({"action": "cancel"}, "Tick the requests to act on first."),
        ({"action": "cancel", "ids": ["x"]}, "The ticked requests are not request numbers."),
        ({"action": "cancel", "ids": [str(i) for i in range(1, 102)]}, "Tick at most 100 requests at once."),
    ],
)
def test_a_bulk_action_without_a_clear_choice_does_nothing(org, data, said) -> None:
    response = _client(org["member"]).post("/requests/bulk/", data)
    assert [str(m) for m in get_messages(response.wsgi_request)] == [said]
    assert not GpuRequest.objects.filter(status=RequestStatus.RELEASED).exists()


def test_only_the_requesters_own_actionable_rows_can_be_ticked(org) -> None:
    html = _client(org["member"]).get("/requests/").content.decode()
    assert f'name="ids" value="{org["pending"].pk}"' in html
    assert f'name="ids" value="{org["placed"].pk}"' in html
    assert f'name="ids" value="{org["theirs"].pk}"' not in html
    assert 'data-confirm="Release {count}?' in html
