"""The requests list and detail as a client reads them: page numbers, keyset windows and field selections for every
role, bad page numbers and ids answered 404 or 400 (on SQLite as on PostgreSQL), a spec and times read back exactly,
and the spec's JSON text written into the answer as the database keeps it."""

from __future__ import annotations

import json
from datetime import timedelta
from decimal import Decimal

import pytest
from django.contrib.auth.models import Group
from django.utils import timezone
from rest_framework.renderers import JSONRenderer
from rest_framework.test import APIClient

from allocations.api.serializers import GpuRequestDetailSerializer, GpuRequestSerializer
from allocations.models import GpuRequest
from allocations.selectors import APPROVERS_GROUP, gpu_requests_visible_to
from tests.factories import ROLES, GpuRequestFactory

URL = "/api/v1/requests/"

pytestmark = pytest.mark.django_db


@pytest.fixture
def requests(demo_org):
    """Requests of both teams, some with the same creation time (the id breaks the tie), one with every field set."""
    now = timezone.now()
    made = [
        GpuRequestFactory(
            team=demo_org.team,
            requester=demo_org.member,
            cluster=demo_org.cluster,
            node_pool=demo_org.pool,
            gpu_memory_gb=Decimal("12.5"),
            latency_p99_ms=Decimal("40.25"),
            expires_at=now + timedelta(days=1, microseconds=123),
            submitted_at=now,
            command=["python", "train.py"],
        ),
        GpuRequestFactory(team=demo_org.team, requester=demo_org.member, sla_tier=None, purpose=""),
        GpuRequestFactory(team=demo_org.other_team, requester=demo_org.outsider),
    ]
    made += GpuRequestFactory.create_batch(4, team=demo_org.team, requester=demo_org.team_lead)
    made += GpuRequestFactory.create_batch(3, team=demo_org.other_team, requester=demo_org.outsider)
    GpuRequest.objects.filter(pk__in=[made[3].pk, made[4].pk, made[5].pk]).update(created_at=now)
    return made


def _documented(user, fields=None, serializer=GpuRequestSerializer) -> list[dict]:
    """What ``serializer`` documents for the user's visible requests, newest first, as a client reads it (the
    fields in the order asked for: the brief's own order)."""
    visible = gpu_requests_visible_to(user=user).order_by("-created_at", "-id")
    rows = json.loads(JSONRenderer().render(serializer(visible, many=True, fields=fields).data))
    return rows if fields is None else [{name: row[name] for name in fields} for row in rows]


@pytest.mark.parametrize("role", ROLES)
@pytest.mark.parametrize(
    ("query", "fields"),
    [
        ("", None),
        ("?brief=true", GpuRequestSerializer.BRIEF_FIELDS),
        ("?fields=id,team,requester,cluster,node_pool,sla_tier,spec,expires_at,gpu_memory_gb", None),
        ("?omit=spec,purpose", None),
    ],
)
def test_pages_and_keyset_windows_answer_the_documented_requests(client_as, demo_org, requests, role, query, fields):
    client = client_as(role)
    if "fields=" in query or "omit=" in query:
        fields = [name for name in GpuRequestSerializer.Meta.fields if _kept(query, name)]
    expected = _documented(demo_org.user(role), fields)
    separator = "&" if query else "?"

    first = client.get(f"{URL}{query}{separator}page_size=2").json()
    second = client.get(first["next"]).json() if first["next"] else {"results": []}
    keyset = client.get(f"{URL}{query}{separator}after=0&page_size=200").json()

    assert (first["count"], first["count_exact"]) == (len(expected), True)
    assert first["results"] + second["results"] == expected[:4]
    assert json.dumps(first["results"]) == json.dumps(expected[:2])  # the same types and key order
    assert keyset["count"] is None and keyset["next"] is None
    assert keyset["results"] == sorted(expected, key=lambda row: row["id"])


def _kept(query: str, name: str) -> bool:
    names = query.partition("=")[2].split(",")
    return name in names if query.startswith("?fields=") else name not in names


@pytest.mark.parametrize(
    ("query", "status", "body"),
    [
        ("?page=99", 404, {"detail": "Invalid page."}),
        ("?page=0", 404, {"detail": "Invalid page."}),
        ("?page=x", 400, {"page": ["A page number from 1, or `last`."]}),
        ("?page=99999999999999999999", 404, {"detail": "Invalid page."}),
        ("?page=-99999999999999999999", 400, {"page": ["A page number from 1, or `last`."]}),
        ("?after=x", 400, {"after": ["A whole number (the last id you read)."]}),
        ("?after=99999999999999999999", 400, {"after": ["A whole number (the last id you read)."]}),
        ("?after=-99999999999999999999", 400, {"after": ["A whole number (the last id you read)."]}),
        ("?fields=id,secret", 400, {"fields": ["Unknown field(s): secret."]}),
    ],
)
def test_a_page_or_window_that_cannot_be_read_is_a_404_or_a_400_naming_the_parameter(
    client_as, requests, query, status, body
):
    response = client_as("member").get(URL + query)

    assert (response.status_code, response.json()) == (status, body)


def test_the_last_page_and_a_clamped_page_size(client_as, requests):
    client = client_as("approver")

    last = client.get(f"{URL}?page=last&page_size=3").json()
    clamped = client.get(f"{URL}?page_size=500").json()

    assert len(last["results"]) == len(requests) % 3 and last["next"] is None and last["previous"]
    assert len(clamped["results"]) == len(requests) and clamped["next"] is None


@pytest.mark.parametrize("role", ROLES)
@pytest.mark.parametrize("query", ["", "?brief=true", "?fields=id,spec,team", "?omit=spec"])
def test_the_detail_answers_the_documented_request_or_404(client_as, demo_org, requests, role, query):
    client = client_as(role)
    fields = None
    if query == "?brief=true":
        fields = GpuRequestSerializer.BRIEF_FIELDS
    elif query:
        fields = [name for name in GpuRequestDetailSerializer.Meta.fields if _kept(query, name)]
    documented = {row["id"]: row for row in _documented(demo_org.user(role), fields, GpuRequestDetailSerializer)}
    for obj in (requests[0], requests[1], requests[2]):  # two of one team, one of the other
        response = client.get(f"{URL}{obj.pk}/{query}")
        if obj.pk in documented:
            assert response.status_code == 200 and response.json() == documented[obj.pk]
        else:
            assert response.status_code == 404


@pytest.mark.parametrize("key", ["0", "x", "0.5", "1e3", "-1", "99999999999999999999", "%20x"])
def test_a_key_that_matches_nothing_is_a_404(client_as, requests, key):
    response = client_as("member").get(f"{URL}{key}/")

    assert response.status_code == 404
    assert list(response.json()) == ["detail"]


def test_a_filter_or_search_still_narrows_the_detail(client_as, requests):
    client = client_as("member")
    obj = requests[0]

    assert client.get(f"{URL}{obj.pk}/").status_code == 200
    assert client.get(f"{URL}{obj.pk}/?status=rejected").status_code == 404
    assert client.get(f"{URL}{obj.pk}/?search=no-such-name").status_code == 404


def test_a_permission_granted_between_calls_widens_the_list_at_once(client_as, demo_org, requests):
    member = demo_org.member
    before = APIClient()
    before.force_authenticate(type(member).objects.get(pk=member.pk))
    assert {row["team"] for row in before.get(URL).json()["results"]} == {demo_org.team.slug}

    member.groups.add(Group.objects.get(name=APPROVERS_GROUP))
    after = APIClient()
    after.force_authenticate(type(member).objects.get(pk=member.pk))  # the next request reads the user afresh
    assert {row["team"] for row in after.get(URL).json()["results"]} == {demo_org.team.slug, demo_org.other_team.slug}


def test_specs_and_times_read_as_the_querysets_path_reads_them(client_as, demo_org):
    # psycopg's own loader reads the times (Django's is a Python subclass), orjson the JSON columns: the same values
    # as Django's loader and json.loads, an integer over 64 bits (orjson reads it as a float), tiny, long and huge
    # floats and any text included.
    spec = {"big": 2**70, "tiny": 1.5e-7, "long": 0.1 + 0.2, "text": 'é\u2028"\\/\t', "empty": {}, "none": None}
    obj = GpuRequestFactory(
        team=demo_org.team,
        requester=demo_org.member,
        spec=spec,
        command=["python", "-c", "print(1)", 2**64, 1e300],
        submitted_at=timezone.now().replace(microsecond=0),
        expires_at=timezone.now().replace(microsecond=120000),
    )
    client = client_as("member")

    detail = client.get(f"{URL}{obj.pk}/")

    assert detail.json()["spec"] == spec
    assert b'"big":1180591620717411303424' in detail.content  # an integer, not 1.1805916207174113e+21
    assert b'"command":["python","-c","print(1)",18446744073709551616,' in detail.content
    assert client.get(URL).json()["results"] == _documented(demo_org.member)
    with timezone.override("Asia/Kolkata"):
        listed = client.get(URL).json()["results"]
        assert listed == _documented(demo_org.member)
        assert listed[0]["expires_at"].endswith("+05:30")


def test_the_spec_is_the_databases_json_text_written_as_it_is(client_as, demo_org):
    obj = GpuRequestFactory(team=demo_org.team, requester=demo_org.member, spec={"b": [1, 2.5], "a": {"x": None}})
    stored = GpuRequest.objects.values_list("spec_text", flat=True).get(pk=obj.pk)
    client = client_as("member")
    for path in (f"{URL}{obj.pk}/", f"{URL}?fields=id,spec", f"{URL}?fields=id,spec&ordering=name"):
        response = client.get(path)
        assert b'"spec":' + stored.encode() in response.content, path
    # Indented and browsable answers parse it.
    indented = client.get(f"{URL}{obj.pk}/", HTTP_ACCEPT="application/json; indent=2")
    assert b"\n" in indented.content and indented.json()["spec"] == {"b": [1, 2.5], "a": {"x": None}}
    browsable = client.get(f"{URL}{obj.pk}/?format=api", HTTP_ACCEPT="text/html")
    assert browsable.status_code == 200 and b"&quot;x&quot;: null" in browsable.content


def test_the_spec_text_follows_the_spec_however_it_is_written(demo_org):
    obj = GpuRequestFactory(team=demo_org.team, requester=demo_org.member, spec={"v": 1})
    GpuRequest.objects.filter(pk=obj.pk).update(spec={"v": 2, "w": "é"})
    assert json.loads(GpuRequest.objects.values_list("spec_text", flat=True).get(pk=obj.pk)) == {"v": 2, "w": "é"}
    obj.refresh_from_db()
    obj.spec = {"v": 3}
    obj.save()
    assert json.loads(GpuRequest.objects.values_list("spec_text", flat=True).get(pk=obj.pk)) == {"v": 3}


def test_a_request_read_as_an_instance_leaves_the_spec_text_out(demo_org, django_assert_num_queries):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from allocations.models import RequestEvent

    obj = GpuRequestFactory(team=demo_org.team, requester=demo_org.member, spec={"strategy": "mig"})
    RequestEvent.objects.create(request=obj, from_status="", to_status=obj.status, actor=demo_org.member)
    with CaptureQueriesContext(connection) as queries:
        fetched = GpuRequest.objects.get(pk=obj.pk)
        related = RequestEvent.objects.filter(request=obj).first().request  # through the base manager
    assert all("spec_text" not in query["sql"] for query in queries), [q["sql"] for q in queries]
    assert fetched.spec == related.spec == {"strategy": "mig"}
    # Asked for by name it is read, as the requests API reads it.
    assert json.loads(GpuRequest.objects.values_list("spec_text", flat=True).get(pk=obj.pk)) == {"strategy": "mig"}
