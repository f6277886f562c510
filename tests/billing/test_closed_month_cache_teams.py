"""A closed month's dashboards stay cached when a team is created afterwards: the new team has no report for the
month and needs none, so neither the cache key nor "every team has closed" depends on it."""

from __future__ import annotations

import pytest
from django.core.cache import cache

from billing.costs.services import monthly_reports_close
from tests.billing.test_cost_reports import OCTOBER
from tests.billing.test_dashboard_controls import _csv, october  # noqa: F401 - the fixture
from tests.factories import TeamFactory

pytestmark = pytest.mark.django_db


def test_a_team_created_after_the_close_keeps_the_month_cached(october, client, django_assert_max_num_queries) -> None:  # noqa: F811
    monthly_reports_close(month=OCTOBER, send_email=False)
    cache.clear()
    client.force_login(october.platform_admin)
    first = _csv(client, "strategy-mix", month="2026-10")
    TeamFactory(slug="newcomers")
    with django_assert_max_num_queries(9):  # session, user, teams, the cache key's stamp; no report lines read
        again = _csv(client, "strategy-mix", month="2026-10")
    assert again == first and first[0]["cost"] == "50.00"
    page = client.get("/billing/dashboards/", {"month": "2026-10"})
    assert page.status_code == 200 and page.context["panels"]
