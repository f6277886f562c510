"""The requests list and detail with no filter, search or ordering asked (read with SQL compiled once per process,
``VisibleRequestRows``) answer exactly what the querysets' path answers: the same query with ``ordering`` set to the
default order goes that way. Status, body, counts, links (less the ordering parameter) and 404s are compared for every
role, field selection, page and keyset window."""

from __future__ import annotations

import json
from datetime import timedelta
from decimal import Decimal

import pytest
from django.contrib.auth.models import Group
from django.utils import timezone
from rest_framework.filters import BaseFilterBackend
from rest_framework.test import APIClient, APIRequestFactory, force_authenticate
from rest_framework.utils.urls import remove_query_param

from allocations.api.views import GpuRequestViewSet
from allocations.models import GpuRequest
from allocations.selectors import APPROVERS_GROUP
from tests.factories import ROLES, GpuRequestFactory

URL = "/api/v1/requests/"
DEFAULT_ORDER = "ordering=-created_at,-id"

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


def _answer(response):
    body = response.json()
    if isinstance(body, dict):
        for link in ("next", "previous"):
            if body.get(link):
                body[link] = remove_query_param(body[link], "ordering")
    return response.status_code, body


def _slow(query: str) -> str:
    return f"{query}&{DEFAULT_ORDER}" if query else f"?{DEFAULT_ORDER}"


@pytest.mark.parametrize("role", ROLES)
@pytest.mark.parametrize(
    "query",
    [
        "",
        "?brief=true",
        "?fields=id,team,requester,cluster,node_pool,sla_tier,spec,expires_at,gpu_memory_gb",
        "?omit=spec,purpose",
        "?page_size=2",
        "?page=2&page_size=2",
        "?page=3&page_size=2&brief=true",
        "?page=last&page_size=3",
        "?page=99",
        "?page=0",
        "?page=x",
        "?page_size=500",
        "?after=0&page_size=2",
        "?after=0&page_size=200",
        "?after=x",
        "?after=99999999999999999999",
        "?after=-99999999999999999999",
        "?fields=id,secret",
    ],
)
def test_the_list_answers_as_the_querysets_path(client_as, requests, role, query):
    client = client_as(role)

    fast = _answer(client.get(URL + query))

    assert fast == _answer(client.get(URL + _slow(query)))
    if fast[0] == 200 and "after=0" in query:
        last = fast[1]["results"][-1]["id"]
        after = query.replace("after=0", f"after={last}")
        assert _answer(client.get(URL + after)) == _answer(client.get(URL + _slow(after)))


@pytest.mark.parametrize("role", ROLES)
@pytest.mark.parametrize("query", ["", "?brief=true", "?fields=id,spec,team", "?omit=spec", "?fields=nope"])
def test_the_detail_answers_as_the_querysets_path(client_as, requests, role, query):
    client = client_as(role)
    for obj in (requests[0], requests[1], requests[2]):  # two of one team, one of the other
        url = f"{URL}{obj.pk}/{query}"
        assert _answer(client.get(url)) == _answer(client.get(url + ("&" if query else "?") + DEFAULT_ORDER))


@pytest.mark.parametrize("key", ["0", "x", "0.5", "1e3", "-1", "99999999999999999999", "%2012"])
def test_a_key_that_matches_nothing_is_the_same_404(client_as, requests, key):
    client = client_as("member")

    fast = client.get(f"{URL}{key}/")

    assert fast.status_code == 404
    assert _answer(fast) == _answer(client.get(f"{URL}{key}/?{DEFAULT_ORDER}"))


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
    assert detail.content == client.get(f"{URL}{obj.pk}/?{DEFAULT_ORDER}").content
    assert _answer(client.get(URL)) == _answer(client.get(f"{URL}?{DEFAULT_ORDER}"))
    with timezone.override("Asia/Kolkata"):
        assert _answer(client.get(URL)) == _answer(client.get(f"{URL}?{DEFAULT_ORDER}"))


class _NothingBackend(BaseFilterBackend):
    """A filter backend the compiled reads know nothing of."""

    def filter_queryset(self, request, queryset, view):
        return queryset.none()


class _NarrowedViewSet(GpuRequestViewSet):
    filter_backends = [*GpuRequestViewSet.filter_backends, _NothingBackend]


class _OwnScopeViewSet(GpuRequestViewSet):
    def get_queryset(self):
        return super().get_queryset().none()


@pytest.mark.parametrize("viewset", [_NarrowedViewSet, _OwnScopeViewSet])
def test_a_view_with_another_filter_or_scope_reads_through_its_querysets(demo_org, requests, viewset):
    factory = APIRequestFactory()
    listed, detail = factory.get(URL), factory.get(f"{URL}{requests[0].pk}/")
    for request in (listed, detail):
        force_authenticate(request, user=demo_org.member)

    assert viewset.as_view({"get": "list"})(listed).data["results"] == []
    assert viewset.as_view({"get": "retrieve"})(detail, pk=str(requests[0].pk)).status_code == 404


def test_the_spec_is_the_databases_json_text_written_as_it_is(client_as, demo_org):
    obj = GpuRequestFactory(team=demo_org.team, requester=demo_org.member, spec={"b": [1, 2.5], "a": {"x": None}})
    stored = GpuRequest.objects.values_list("spec_text", flat=True).get(pk=obj.pk)
    client = client_as("member")
    for path in (f"{URL}{obj.pk}/", f"{URL}?fields=id,spec", f"{URL}?fields=id,spec&{DEFAULT_ORDER}"):
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
