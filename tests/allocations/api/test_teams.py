"""GET /api/v1/teams/ and /api/v1/teams/{slug}/: scoping, members, quotas with units in use, query budget."""

from __future__ import annotations

import pytest

from allocations.requests.services import gpu_request_approve
from tests.factories import ROLES, ClusterFactory, GpuRequestFactory, MembershipFactory, QuotaFactory, TeamFactory

URL = "/api/v1/teams/"
VISIBLE = {
    "platform_admin": {"vision", "nlp"},
    "approver": {"vision", "nlp"},
    "team_lead": {"vision"},
    "member": {"vision"},
    "outsider": {"nlp"},
}

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize("role", ROLES)
def test_list_shows_visible_teams(client_as, role):
    response = client_as(role).get(URL)

    assert response.status_code == 200
    assert {team["slug"] for team in response.json()["results"]} == VISIBLE[role]


@pytest.mark.parametrize("role", ROLES)
def test_detail_of_an_invisible_team_is_404(client_as, role):
    client = client_as(role)

    for slug in ("vision", "nlp"):
        expected = 200 if slug in VISIBLE[role] else 404
        assert client.get(f"{URL}{slug}/").status_code == expected


def test_detail_has_members_and_quota_use(client_as, submit, demo_org):
    gpu_request_approve(request=submit(gpu_count=2, gpu_memory_gb=80), acting_user=demo_org.approver)
    submit(name="pending")  # pending requests hold nothing

    body = client_as("member").get(f"{URL}vision/").json()

    assert body["namespace"] == "team-vision"
    assert body["members"] == [{"username": "lead", "role": "lead"}, {"username": "member", "role": "member"}]
    [quota] = body["quotas"]
    assert (quota["resource_name"], quota["limit"], quota["used"], quota["scope"]) == (
        "nvidia.com/gpu",
        8,
        2,
        "all clusters",
    )


def test_quota_use_respects_the_quota_scope(client_as, submit, demo_org):
    elsewhere = ClusterFactory(name="elsewhere")
    QuotaFactory(team=demo_org.team, cluster=demo_org.cluster, limit=4)
    QuotaFactory(team=demo_org.team, cluster=elsewhere, limit=2)
    QuotaFactory(team=demo_org.team, node_pool=demo_org.pool, limit=3)
    gpu_request_approve(request=submit(), acting_user=demo_org.approver)

    quotas = client_as("member").get(f"{URL}vision/").json()["quotas"]

    used = {(q["cluster"], q["node_pool"]): q["used"] for q in quotas}
    assert used == {(None, None): 1, ("demo", None): 1, ("elsewhere", None): 0, (None, "demo/h100"): 1}


@pytest.mark.parametrize("extra_teams", [1, 12])
def test_list_query_count_does_not_grow_with_teams(client_as, demo_org, django_assert_max_num_queries, extra_teams):
    for index in range(extra_teams):
        team = TeamFactory(slug=f"extra{index}")
        MembershipFactory(team=team)
        QuotaFactory(team=team, limit=2)
        GpuRequestFactory(team=team, status="approved")
    client = client_as("approver")

    # Permissions (2), count, page, members, quotas, quota use: the same for 3 or 14 teams.
    with django_assert_max_num_queries(7):
        response = client.get(URL)

    assert response.status_code == 200
    assert response.json()["count"] == 2 + extra_teams


def test_nul_in_a_slug_or_a_search_is_not_a_server_error(client_as):
    client = client_as("approver")

    assert client.get(f"{URL}vi%00sion/").status_code == 404
    assert client.get(f"{URL}?search=%00").status_code == 400
