"""``GET /api/v1/teams/{slug}/usage/``: the shape of docs/api.md ("Teams, usage, budgets and reports"), scoping by
role, and 400s naming the bad parameter."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from rest_framework.test import APIClient

from allocations.models import RequestStatus
from tests.billing.rollups import rollup
from tests.factories import ROLES, DemoOrg, GpuRequestFactory

pytestmark = pytest.mark.django_db
OCT = datetime(2026, 10, 1, tzinfo=UTC)


def url(slug: str = "vision") -> str:
    return f"/api/v1/teams/{slug}/usage/"


@pytest.fixture
def usage_data(demo_org: DemoOrg) -> int:
    req = GpuRequestFactory(team=demo_org.team, status=RequestStatus.ACTIVE, node_pool=demo_org.pool)
    for i, (util, peak) in enumerate([(20.0, 10240.0), (80.0, 20480.0)]):
        rollup(
            cluster=demo_org.cluster,
            hour=OCT.replace(hour=i),
            team=demo_org.team,
            request=req,
            avg_utilization_pct=util,
            peak_memory_used_mib=peak,
            energy_kwh=0.5,
        )
    # Another team's hour and one in September stay out.
    rollup(cluster=demo_org.cluster, hour=OCT.replace(hour=3), team=demo_org.other_team, gpu_uuid="GPU-9")
    rollup(cluster=demo_org.cluster, hour=datetime(2026, 9, 30, 23, tzinfo=UTC), team=demo_org.team)
    return req.pk


@pytest.mark.parametrize(
    ("role", "status"),
    [("platform_admin", 200), ("approver", 200), ("team_lead", 200), ("member", 200), ("outsider", 404)],
)
def test_usage_is_scoped_to_visible_teams(
    api_client: APIClient, demo_org: DemoOrg, usage_data: int, role: str, status: int
) -> None:
    assert role in ROLES
    api_client.force_authenticate(demo_org.user(role))
    response = api_client.get(url(), {"month": "2026-10"})
    assert response.status_code == status, response.content


def test_anonymous_is_refused(api_client: APIClient, demo_org: DemoOrg) -> None:
    assert api_client.get(url(), {"month": "2026-10"}).status_code in (401, 403)


def test_unknown_team_is_404(api_client: APIClient, demo_org: DemoOrg) -> None:
    api_client.force_authenticate(demo_org.approver)
    assert api_client.get(url("nobody"), {"month": "2026-10"}).status_code == 404


def test_month_shape(api_client: APIClient, demo_org: DemoOrg, usage_data: int) -> None:
    api_client.force_authenticate(demo_org.member)
    body = api_client.get(url(), {"month": "2026-10"}).json()
    assert body["team"] == "vision"
    assert body["start"] == "2026-10-01T00:00:00Z" and body["end"] == "2026-11-01T00:00:00Z"
    assert body["gpu_hours"] == 2.0
    assert body["avg_utilization_pct"] == 50.0
    assert body["peak_memory_used_gb"] == 20.0
    assert body["energy_kwh"] == 1.0
    assert body["by_request"] == [
        {
            "request": usage_data,
            "gpu_hours": 2.0,
            "avg_utilization_pct": 50.0,
            "peak_memory_used_gb": 20.0,
            "energy_kwh": 1.0,
        }
    ]
    assert body["complete"] is False  # the demo cluster has never been ingested


def test_start_end_range(api_client: APIClient, demo_org: DemoOrg, usage_data: int) -> None:
    api_client.force_authenticate(demo_org.team_lead)
    body = api_client.get(url(), {"start": "2026-10-01T01:00:00+00:00", "end": "2026-10-02"}).json()
    assert body["start"] == "2026-10-01T01:00:00Z" and body["end"] == "2026-10-02T00:00:00Z"
    assert body["gpu_hours"] == 1.0 and body["avg_utilization_pct"] == 80.0


def test_offsets_are_converted_to_utc(api_client: APIClient, demo_org: DemoOrg, usage_data: int) -> None:
    api_client.force_authenticate(demo_org.member)
    body = api_client.get(url(), {"start": "2026-10-01T02:00:00+02:00", "end": "2026-10-01T03:00:00+02:00"}).json()
    assert body["start"] == "2026-10-01T00:00:00Z" and body["gpu_hours"] == 1.0


@pytest.mark.parametrize(
    ("params", "field"),
    [
        ({}, "start"),
        ({"month": "2026-13"}, "month"),
        ({"month": "October"}, "month"),
        ({"month": "2026-10", "start": "2026-10-01"}, "month"),
        ({"start": "2026-10-01"}, "end"),
        ({"end": "2026-10-01"}, "start"),
        ({"start": "yesterday", "end": "2026-10-02"}, "start"),
        ({"start": "2026-10-01", "end": "2026-10-02T25:00:00Z"}, "end"),
        ({"start": "2026-10-01T00:00:00", "end": "2026-10-02"}, "start"),  # no offset: never guessed
        ({"start": "2026-10-02", "end": "2026-10-01"}, "end"),
        ({"start": "2026-10-01", "end": "2026-10-01"}, "end"),
        ({"start": "2024-01-01", "end": "2026-10-01"}, "end"),
    ],
)
def test_bad_parameters_are_400_naming_them(
    api_client: APIClient, demo_org: DemoOrg, params: dict[str, str], field: str
) -> None:
    api_client.force_authenticate(demo_org.member)
    response = api_client.get(url(), params)
    assert response.status_code == 400, response.content
    assert list(response.json()) == [field]
    assert isinstance(response.json()[field], list) and response.json()[field]


def test_outsider_gets_404_before_parameter_errors(api_client: APIClient, demo_org: DemoOrg) -> None:
    api_client.force_authenticate(demo_org.outsider)
    assert api_client.get(url(), {"month": "bad"}).status_code == 404


def test_token_auth_works(api_client: APIClient, demo_org: DemoOrg) -> None:
    from tests.factories import api_key_for

    token = api_key_for(user=demo_org.member)
    api_client.credentials(HTTP_AUTHORIZATION=f"Token {token.key}")
    assert api_client.get(url(), {"month": "2026-10"}).status_code == 200


def test_the_schema_says_start_and_end_take_a_time_or_a_date(
    api_client: APIClient, demo_org: DemoOrg, usage_data: int
) -> None:
    from drf_spectacular.generators import SchemaGenerator

    operation = SchemaGenerator().get_schema(request=None, public=True)["paths"]["/api/v1/teams/{slug}/usage/"]["get"]
    formats = {
        param["name"]: {choice["format"] for choice in param["schema"]["oneOf"]}
        for param in operation["parameters"]
        if param["name"] in ("start", "end")
    }
    api_client.force_authenticate(demo_org.member)
    by_date = api_client.get(f"/api/v1/teams/{demo_org.team.slug}/usage/", {"start": "2026-10-01", "end": "2026-10-02"})
    by_time = api_client.get(
        f"/api/v1/teams/{demo_org.team.slug}/usage/", {"start": "2026-10-01T00:00:00Z", "end": "2026-10-02T00:00:00Z"}
    )

    assert formats == {"start": {"date-time", "date"}, "end": {"date-time", "date"}}
    assert by_date.status_code == by_time.status_code == 200
    assert by_date.json() == by_time.json()
