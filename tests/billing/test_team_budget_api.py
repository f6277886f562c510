"""``GET /api/v1/teams/{slug}/budget/``: the budget state as the pages show it, scoped like team costs."""

from __future__ import annotations

from decimal import Decimal

import pytest
from django.utils import timezone
from rest_framework.test import APIClient

from billing.models import BudgetNotice
from tests.billing.cost_helpers import finance_user
from tests.factories import ROLES, DemoOrg, TeamBudgetFactory

pytestmark = pytest.mark.django_db
URL = "/api/v1/teams/vision/budget/"


@pytest.mark.parametrize("role", ROLES)
def test_the_budget_is_visible_to_the_team_approvers_and_admins_only(demo_org: DemoOrg, role: str) -> None:
    client = APIClient()
    client.force_authenticate(demo_org.user(role))
    expected = 404 if role == "outsider" else 200
    assert client.get(URL).status_code == expected


def test_the_state_carries_spend_budget_projection_level_and_the_alerts_sent(demo_org: DemoOrg) -> None:
    TeamBudgetFactory(team=demo_org.team, monthly_amount=Decimal("1000.00"), thresholds_pct=[80, 50])
    now = timezone.now()
    BudgetNotice.objects.create(
        team=demo_org.team, month=now.date().replace(day=1), threshold_pct=50, spent=Decimal("500"),
        budget=Decimal("1000"), projected=Decimal("900"), currency="USD", crossed_at=now,
    )  # fmt: skip
    client = APIClient()
    client.force_authenticate(finance_user())

    body = client.get(URL).json()

    assert body["team"] == "vision" and body["currency"] == "USD" and body["month"] == f"{now:%Y-%m}"
    assert body["budget"] == "1000.00" and body["spent"] == "0.00" and body["level"] == "ok"
    assert body["thresholds_pct"] == [50, 80]
    assert [n["threshold_pct"] for n in body["notices"]] == [50]


def test_a_team_without_a_budget_says_so(demo_org: DemoOrg) -> None:
    client = APIClient()
    client.force_authenticate(demo_org.member)
    body = client.get(URL).json()
    assert body["budget"] is None and body["level"] == "none" and body["used_pct"] is None
