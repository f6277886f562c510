"""/api/v1/quota-increases/: a lead asks through the API with the cost effect in the answer, an approver grants it
(the quota changes), another team's ask is 404, and members neither decide nor ask for other teams."""

from __future__ import annotations

import pytest

from allocations.models import Quota, QuotaIncreaseRequest, QuotaRequestStatus
from tests.factories import QuotaFactory

pytestmark = pytest.mark.django_db

URL = "/api/v1/quota-increases/"


@pytest.fixture
def pool_quota(demo_org) -> Quota:
    return QuotaFactory(team=demo_org.team, node_pool=demo_org.pool, resource_name="nvidia.com/gpu", limit=4)


def test_a_lead_asks_and_an_approver_grants_through_the_api(client_as, demo_org, pool_quota) -> None:
    asked = client_as("team_lead").post(
        URL, {"quota": pool_quota.pk, "requested_limit": 6, "reason": "Two more for the retraining."}, format="json"
    )

    assert asked.status_code == 201, asked.json()
    body = asked.json()
    assert (body["team"], body["limit_when_asked"], body["status"]) == ("vision", 4, "pending")
    hourly = demo_org.pool.gpu_model.list_hourly_price
    assert body["monthly_cost_effect"]["high"] == f"{hourly * 730 * 2:.2f}"

    granted = client_as("approver").post(f"{URL}{body['id']}/grant/", {"comment": "ok"}, format="json")

    assert granted.status_code == 200 and granted.json()["status"] == "granted"
    pool_quota.refresh_from_db()
    assert pool_quota.limit == 6


def test_another_teams_ask_is_404_and_members_do_not_decide(client_as, demo_org, pool_quota) -> None:
    increase = QuotaIncreaseRequest.objects.create(
        team=demo_org.team,
        quota=pool_quota,
        limit_when_asked=4,
        requested_limit=5,
        reason="r",
        requested_by=demo_org.member,
    )

    assert client_as("outsider").get(f"{URL}{increase.pk}/").status_code == 404
    assert client_as("outsider").get(URL).json()["results"] == []
    assert client_as("team_lead").post(f"{URL}{increase.pk}/grant/", {}, format="json").status_code == 403
    declined_without_reason = client_as("approver").post(f"{URL}{increase.pk}/decline/", {}, format="json")
    assert declined_without_reason.status_code == 400 and "comment" in declined_without_reason.json()
    increase.refresh_from_db()
    assert increase.status == QuotaRequestStatus.PENDING


def test_nobody_asks_for_another_teams_quota(client_as, pool_quota) -> None:
    response = client_as("outsider").post(
        URL, {"quota": pool_quota.pk, "requested_limit": 9, "reason": "mine now"}, format="json"
    )

    assert response.status_code == 422 and "quota" in response.json()  # another team's quota: as no quota
    assert not QuotaIncreaseRequest.objects.exists()
