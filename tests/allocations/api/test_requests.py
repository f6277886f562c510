"""GET/POST /api/v1/requests/ and GET /api/v1/requests/{id}/(events/): scoping, submission, filters, query budget."""

from __future__ import annotations

import json
from datetime import timedelta
from decimal import Decimal

import pytest
from django.utils import timezone
from rest_framework.renderers import JSONRenderer
from rest_framework.test import APIClient

from allocations.api.serializers import GpuRequestDetailSerializer, GpuRequestSerializer
from allocations.models import GpuRequest, RequestStatus
from infra.api_pagination import COUNT_LIMIT
from tests.factories import ROLES, GpuRequestFactory

URL = "/api/v1/requests/"
NEW = {
    "team": "vision",
    "name": "resnet",
    "purpose": "fine-tune",
    "workload_type": "training",
    "gpu_memory_gb": 40,
    "command": ["python", "main.py"],
}

pytestmark = pytest.mark.django_db

# Which teams' requests each role sees: approvers (and the staff admin) all of them, everyone else their own team's.
VISIBLE_TEAMS = {
    "platform_admin": {"vision", "nlp"},
    "approver": {"vision", "nlp"},
    "team_lead": {"vision"},
    "member": {"vision"},
    "outsider": {"nlp"},
}


@pytest.fixture
def two_teams_requests(demo_org):
    """One request of each team, made by their members."""
    return (
        GpuRequestFactory(team=demo_org.team, requester=demo_org.member, name="vision-job"),
        GpuRequestFactory(team=demo_org.other_team, requester=demo_org.outsider, name="nlp-job"),
    )


@pytest.mark.parametrize("role", ROLES)
def test_list_shows_only_visible_teams(client_as, two_teams_requests, role):
    response = client_as(role).get(URL)

    assert response.status_code == 200
    body = response.json()
    assert {"count", "next", "previous", "results"} <= body.keys()
    assert {row["team"] for row in body["results"]} == VISIBLE_TEAMS[role]
    assert body["count"] == len(VISIBLE_TEAMS[role])


@pytest.mark.parametrize("role", ROLES)
def test_detail_of_another_teams_request_is_404(client_as, two_teams_requests, role):
    vision_request, nlp_request = two_teams_requests
    client = client_as(role)

    for request in (vision_request, nlp_request):
        response = client.get(f"{URL}{request.pk}/")
        expected = 200 if request.team.slug in VISIBLE_TEAMS[role] else 404
        assert response.status_code == expected
        if expected == 200:
            assert response.json()["id"] == request.pk


@pytest.mark.parametrize("role", ROLES)
def test_events_follow_the_same_scoping(client_as, submit, role):
    request = submit()

    response = client_as(role).get(f"{URL}{request.pk}/events/")

    if "vision" not in VISIBLE_TEAMS[role]:
        assert response.status_code == 404
        return
    assert response.status_code == 200
    events = response.json()
    assert [(e["from_status"], e["to_status"]) for e in events] == [("draft", "pending_approval")]
    assert events[0]["actor"] == "member"


# Submitting for team vision: members and leads may; approvers and the admin see the team but are not members (403);
# the outsider cannot even see it, so the slug does not resolve (422 naming `team`, no existence leak).
CREATE_STATUS = {"platform_admin": 403, "approver": 403, "team_lead": 201, "member": 201, "outsider": 422}


@pytest.mark.parametrize("role", ROLES)
def test_create_role_matrix(client_as, demo_org, role):
    response = client_as(role).post(URL, NEW, format="json")

    assert response.status_code == CREATE_STATUS[role], response.content
    if response.status_code == 201:
        body = response.json()
        assert body["status"] == RequestStatus.PENDING_APPROVAL
        assert body["team"] == "vision"
        assert body["requester"] == demo_org.user(role).username
        assert body["spec"]["resource_name"] == "nvidia.com/gpu"
        assert body["spec"]["estimated_monthly_cost"]["currency"] == "USD"
        assert body["created_at"] and body["submitted_at"]
        assert GpuRequest.objects.get(pk=body["id"]).spec == body["spec"]
    elif response.status_code == 422:
        assert "team" in response.json()
        assert not GpuRequest.objects.exists()
    else:
        assert "not a member" in response.json()["detail"]


def test_create_takes_cluster_image_command_and_expiry(client_as, demo_org):
    expires = (timezone.now() + timedelta(days=2)).isoformat()
    body = {**NEW, "cluster": "demo", "image": "nvcr.io/nvidia/pytorch:24.05-py3", "command": ["python", "train.py"]}

    response = client_as("member").post(URL, {**body, "expires_at": expires}, format="json")

    assert response.status_code == 201, response.content
    created = response.json()
    assert created["cluster"] == "demo"
    assert created["node_pool"] == "h100"
    assert created["command"] == ["python", "train.py"]
    assert created["expires_at"] is not None


@pytest.mark.parametrize("image", ["not an image!! ;rm -rf /", "nvcr.io/nvidia/pytorch"])
def test_an_image_that_is_not_a_pinned_reference_is_refused_naming_the_field(client_as, demo_org, image):
    response = client_as("member").post(URL, {**NEW, "image": image}, format="json")

    assert response.status_code == 400, response.content
    assert list(response.json()) == ["image"]
    assert "registry/name:tag" in response.json()["image"][0] or "Pin the image" in response.json()["image"][0]
    assert not GpuRequest.objects.exists()


@pytest.mark.parametrize(
    ("change", "fields", "expected"),
    [
        ({"gpu_memory_gb": -5}, {"gpu_memory_gb"}, 400),
        ({"workload_type": None}, {"workload_type"}, 400),
        ({"name": ""}, {"name"}, 400),
        ({"team": "no-such-team"}, {"team"}, 422),  # well formed, names nothing: 422
        ({"cluster": "nowhere"}, {"cluster"}, 422),
        ({"expires_at": "2000-01-01T00:00:00Z"}, {"expires_at"}, 400),
        ({"gpu_count": 0, "name": "", "shoe_size": 44}, {"gpu_count", "name", "shoe_size"}, 400),
    ],
)
def test_bad_submission_is_refused_naming_the_fields(client_as, demo_org, change, fields, expected):
    response = client_as("member").post(URL, {**NEW, **change}, format="json")

    assert response.status_code == expected, response.content
    assert fields <= response.json().keys()
    assert not GpuRequest.objects.exists()


def test_missing_team_and_name_are_required(client_as, demo_org):
    response = client_as("member").post(URL, {"workload_type": "training", "gpu_memory_gb": 40}, format="json")

    assert response.status_code == 400
    assert {"team", "name"} <= response.json().keys()


def test_quota_exceeded_is_400_with_limit_use_and_ask(client_as, demo_org):
    big = {**NEW, "gpu_memory_gb": 80, "gpu_count": 8, "replicas": 2}

    response = client_as("member").post(URL, big, format="json")

    assert response.status_code == 400
    [message] = response.json()["quota"]
    assert "may hold 8" in message
    assert "0 in use" in message
    assert "16 asked" in message
    assert not GpuRequest.objects.exists()


def test_list_filters_search_and_ordering(client_as, demo_org):
    GpuRequestFactory(team=demo_org.team, requester=demo_org.member, name="alpha", purpose="segmentation")
    GpuRequestFactory(
        team=demo_org.team,
        requester=demo_org.team_lead,
        name="beta",
        purpose="detection",
        status=RequestStatus.APPROVED,
    )
    GpuRequestFactory(team=demo_org.other_team, requester=demo_org.outsider, name="gamma")
    client = client_as("approver")

    def names(query: str) -> list[str]:
        response = client.get(f"{URL}?{query}")
        assert response.status_code == 200, response.content
        return [row["name"] for row in response.json()["results"]]

    assert names("status=approved") == ["beta"]
    assert sorted(names("team=vision")) == ["alpha", "beta"]
    assert names("q=segment") == ["alpha"]
    assert names("search=detect") == ["beta"]
    assert names("search=outsider") == ["gamma"]
    assert names("ordering=name") == ["alpha", "beta", "gamma"]
    assert names("ordering=-name") == ["gamma", "beta", "alpha"]
    assert client.get(f"{URL}?status=sleeping").status_code == 400
    assert names("page=1&created_after=2000-01-01T00:00:00Z") == names("page=1")
    assert names("created_after=2999-01-01T00:00:00Z") == []
    assert client.get(f"{URL}?created_after=yesterday").status_code == 400


def test_filters_never_widen_the_scope(client_as, two_teams_requests):
    response = client_as("member").get(f"{URL}?team=nlp")

    # Another team's slug is refused as an unknown one would be: no rows, and no sign that the team exists.
    assert response.status_code == 404
    assert "results" not in response.json()


@pytest.mark.parametrize("count", [1, 100])
@pytest.mark.parametrize(
    ("query", "budget"),
    [
        # Permissions (user and group perms for the approver check), count, page.
        ("", 5),
        ("?brief=true", 5),
        ("?fields=id,status,spec", 5),
        ("?omit=spec", 5),
        # Keyset mode: no COUNT(*).
        ("?after=0&page_size=200", 4),
    ],
)
def test_list_query_count_does_not_grow_with_rows(
    client_as, demo_org, django_assert_max_num_queries, count, query, budget
):
    GpuRequestFactory.create_batch(
        count, team=demo_org.team, requester=demo_org.member, cluster=demo_org.cluster, node_pool=demo_org.pool
    )
    client = client_as("member")

    with django_assert_max_num_queries(budget):
        response = client.get(URL + query)

    assert response.status_code == 200
    assert len(response.json()["results"]) == min(count, 25 if "page_size" not in query else 200)


@pytest.mark.parametrize("query", ["", "?brief=true", "?omit=spec"])
@pytest.mark.parametrize(
    ("status", "budget"),
    # A request that waits costs three more: itself with its pool, its place in the approval queue, its pool's holdings.
    [(RequestStatus.ACTIVE, 4), (RequestStatus.PENDING_APPROVAL, 7)],
)
def test_detail_query_count(client_as, demo_org, django_assert_max_num_queries, query, status, budget):
    obj = GpuRequestFactory(
        team=demo_org.team, requester=demo_org.member, cluster=demo_org.cluster, node_pool=demo_org.pool, status=status
    )

    with django_assert_max_num_queries(budget):
        response = client_as("member").get(f"{URL}{obj.pk}/{query}")

    assert response.status_code == 200
    assert response.json()["id"] == obj.pk


def test_list_is_the_full_representation_unless_asked_for_less(client_as, demo_org):
    GpuRequestFactory(team=demo_org.team, requester=demo_org.member)
    client = client_as("member")

    full = client.get(URL).json()["results"][0]
    brief = client.get(f"{URL}?brief=true").json()["results"][0]
    chosen = client.get(f"{URL}?fields=id,spec").json()["results"][0]
    omitted = client.get(f"{URL}?omit=spec,purpose").json()["results"][0]

    assert {"id", "status", "team", "requester", "spec", "created_at"} <= set(full)
    assert set(brief) == set(GpuRequestSerializer.BRIEF_FIELDS)
    assert set(chosen) == {"id", "spec"} and chosen["spec"] == full["spec"]
    assert set(omitted) == set(full) - {"spec", "purpose"}


@pytest.mark.parametrize(
    ("query", "parameter"),
    [("?fields=id,secret", "fields"), ("?omit=nope", "omit"), ("?brief=true&fields=bogus", "fields")],
)
def test_unknown_field_selection_is_400_naming_the_parameter(client_as, demo_org, query, parameter):
    response = client_as("member").get(URL + query)

    assert response.status_code == 400
    assert set(response.json()) == {parameter}


def test_page_size_is_bounded(client_as, demo_org):
    GpuRequestFactory.create_batch(3, team=demo_org.team, requester=demo_org.member)
    client = client_as("member")

    assert len(client.get(f"{URL}?page_size=2").json()["results"]) == 2
    assert len(client.get(f"{URL}?page_size=100000").json()["results"]) == 3


def test_keyset_mode_pages_through_everything_visible_once(client_as, two_teams_requests, demo_org):
    GpuRequestFactory.create_batch(4, team=demo_org.team, requester=demo_org.member)
    client = client_as("member")
    expected = sorted(GpuRequest.objects.filter(team__slug="vision").values_list("pk", flat=True))

    seen, url = [], f"{URL}?after=0&page_size=2&brief=1"
    while url:
        body = client.get(url).json()
        assert body["count"] is None
        seen += [row["id"] for row in body["results"]]
        url = body["next"]

    assert seen == expected
    assert client.get(f"{URL}?after=zero").status_code == 400


def test_anonymous_list_is_401(two_teams_requests):
    assert APIClient().get(URL).status_code == 401


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("created_after=2020-01-01T00:00:00%2B23:40", 200),  # PostgreSQL refuses offsets past 15:59 unless made UTC
        ("created_before=0001-01-01T00:00:00%2B23:00", 400),  # no such time in UTC
        ("created_after=yesterday", 400),
    ],
)
def test_time_filters_are_normalized_to_utc(client_as, two_teams_requests, query, expected):
    response = client_as("approver").get(f"{URL}?{query}")

    assert response.status_code == expected, response.content
    if expected == 200:
        assert response.json()["count"] == 2


@pytest.mark.parametrize("query", ["search=a%00b", "team=vi%00sion", "q=%00", "ordering=na%00me", "sla%00tier=x"])
def test_nul_characters_in_query_parameters_are_400(client_as, two_teams_requests, query):
    # PostgreSQL refuses NUL in text; the API must answer 400 before the value reaches it, never 500.
    response = client_as("approver").get(f"{URL}?{query}")

    assert response.status_code == 400
    assert list(response.json().values()) == [["Null characters are not allowed."]]


@pytest.mark.parametrize("field", ["team", "cluster", "name", "image"])
def test_nul_characters_in_the_body_are_400_naming_the_field(client_as, demo_org, field):
    value = {"team": "vision", "cluster": "demo", "name": "x", "image": "img"}[field]

    response = client_as("member").post(URL, {**NEW, field: f"{value}\x00"}, format="json")

    assert response.status_code == 400
    assert field in response.json()


def _rendered(data: object) -> object:
    """What a client reads: the data through DRF's JSON renderer and back."""
    return json.loads(JSONRenderer().render(data))


def test_list_and_detail_answer_exactly_what_the_serializer_documents(client_as, demo_org):
    # Every kind of field set: decimals, times, a null sla tier beside set cluster and pool, a command, a spec.
    now = timezone.now()
    full = GpuRequestFactory(
        team=demo_org.team,
        requester=demo_org.member,
        cluster=demo_org.cluster,
        node_pool=demo_org.pool,
        gpu_memory_gb=Decimal("12.5"),
        latency_p99_ms=Decimal("40.25"),
        expected_utilization_pct=Decimal("70"),
        duration_hours=Decimal("24"),
        expires_at=now + timedelta(days=1, microseconds=123),
        submitted_at=now,
        command=["python", "train.py"],
        status_detail="Waiting for approval",
    )
    bare = GpuRequestFactory(team=demo_org.team, requester=demo_org.member, sla_tier=None, purpose="")
    client = client_as("member")
    listed = {row["id"]: row for row in client.get(URL).json()["results"]}

    for obj in (full, bare):
        obj = GpuRequest.objects.get(pk=obj.pk)
        documented = _rendered(GpuRequestSerializer(obj).data)
        detail = _rendered(GpuRequestDetailSerializer(obj).data)
        assert client.get(f"{URL}{obj.pk}/").json() == detail
        assert listed[obj.pk] == documented
        # The same types and key order too (70.0, not 70), as a client's json.dumps shows them.
        assert json.dumps(client.get(f"{URL}{obj.pk}/").json()) == json.dumps(detail)
        assert json.dumps(listed[obj.pk]) == json.dumps(documented)
        # The detail is the list's item and where the request waits.
        assert list(detail) == [*documented, "waiting", "run_time"] and detail["waiting"]["stage"] == "approval"
        assert detail["run_time"] is None  # not activated yet
        assert client.get(f"{URL}{obj.pk}/?fields=id,team,expires_at,gpu_memory_gb").json() == {
            name: documented[name] for name in ("id", "team", "expires_at", "gpu_memory_gb")
        }


def test_count_stops_at_the_limit_and_says_it_is_not_exact(client_as, demo_org):
    template = GpuRequestFactory(team=demo_org.team, requester=demo_org.member)
    # The row's own columns: not the id, nor what the database generates (the spec's text).
    copied = [f.attname for f in GpuRequest._meta.concrete_fields if f.attname != "id" and not f.generated]
    columns = {name: getattr(template, name) for name in copied}
    GpuRequest.objects.bulk_create([GpuRequest(**columns) for _ in range(COUNT_LIMIT + 1)])  # limit + 2 in all
    client = client_as("member")
    last_full_page = COUNT_LIMIT // 25

    first = client.get(URL).json()
    deep = client.get(f"{URL}?page={last_full_page}").json()
    beyond = client.get(f"{URL}?page={last_full_page + 1}").json()

    assert (first["count"], first["count_exact"]) == (COUNT_LIMIT, False)
    assert first["next"] and len(first["results"]) == 25
    # Up to the limit the pages say there are more; the page past it counts to its end, exactly.
    assert (deep["count"], deep["count_exact"], len(deep["results"])) == (COUNT_LIMIT, False, 25)
    assert deep["next"].endswith(f"page={last_full_page + 1}")
    assert (beyond["count"], beyond["count_exact"], beyond["next"]) == (COUNT_LIMIT + 2, True, None)
    assert len(beyond["results"]) == 2
    assert client.get(f"{URL}?page={last_full_page + 2}").status_code == 404
    # A filtered list under the limit counts exactly.
    assert client.get(f"{URL}?status=approved").json()["count_exact"] is True


def test_count_is_exact_under_the_limit_and_null_in_keyset_mode(client_as, two_teams_requests):
    client = client_as("approver")

    assert (client.get(URL).json()["count"], client.get(URL).json()["count_exact"]) == (2, True)
    keyset = client.get(f"{URL}?after=0").json()
    assert (keyset["count"], keyset["count_exact"]) == (None, False)
