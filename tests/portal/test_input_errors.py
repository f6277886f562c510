"""Cross-cutting input rules: one exception handler, NUL characters refused once, one strict YYYY-MM parser."""

from __future__ import annotations

import pytest
from django.core.exceptions import PermissionDenied
from django.urls import reverse
from rest_framework.test import APIClient

from billing.costs.services import price_book_load
from billing.models import PriceBook
from tests.factories import DemoOrg

pytestmark = pytest.mark.django_db

NUL_MESSAGE = "Null characters are not allowed."
BOOK = "effective_from: 2026-12-01\ngpu_models: {T4: {hourly: '0.5'}}\n"


@pytest.mark.parametrize(
    ("path", "params"),
    [
        ("/api/v1/reports/", {"month": "26-1"}),  # was read as year 26, January
        ("/api/v1/reports/", {"month": "2026-1"}),
        ("/api/v1/teams/vision/usage/", {"month": "26-1"}),
        ("/api/v1/teams/vision/usage/", {"month": "2026-13"}),
    ],
)
def test_every_api_month_is_strict_yyyy_mm_and_a_400_names_month(
    api_client: APIClient, demo_org: DemoOrg, path: str, params: dict[str, str]
) -> None:
    api_client.force_authenticate(demo_org.member)

    response = api_client.get(path, params)

    assert response.status_code == 400, response.content
    assert list(response.json()) == ["month"]
    assert "YYYY-MM" in response.json()["month"][0]


@pytest.mark.parametrize("name", ["dashboard", "dashboard-csv"])
def test_dashboard_pages_answer_a_bad_month_with_a_400_naming_it(client, demo_org: DemoOrg, name: str) -> None:
    client.force_login(demo_org.member)
    url = reverse(f"billing:{name}", args=["cost-per-request"] if name == "dashboard-csv" else [])

    response = client.get(url, {"month": "26-1"})

    assert response.status_code == 400
    assert b"month: Use YYYY-MM, not &#x27;26-1&#x27;." in response.content
    assert client.get(url, {"month": "2026-10"}).status_code == 200


def test_nul_in_any_api_query_parameter_is_a_400_naming_that_parameter(api_client: APIClient, demo_org: DemoOrg):
    api_client.force_authenticate(demo_org.member)

    response = api_client.get("/api/v1/teams/vision/usage/?start=2026-10-01&end=2026-10-02&note=a%00b")

    assert response.status_code == 400
    assert response.json() == {"note": [NUL_MESSAGE]}


def test_nul_in_a_json_body_is_a_400_naming_the_field_before_any_permission_check(
    api_client: APIClient, demo_org: DemoOrg
) -> None:
    api_client.force_authenticate(demo_org.platform_admin)

    response = api_client.post("/api/v1/price-book/", {"yaml": BOOK + "#\x00"}, format="json")

    assert response.status_code == 400
    assert response.json() == {"yaml": [NUL_MESSAGE]}
    assert not PriceBook.objects.exists()


def test_nul_in_a_browser_form_is_a_400_page_naming_the_field(client, demo_org: DemoOrg) -> None:
    client.force_login(demo_org.member)

    response = client.post(reverse("allocations:request-new"), {"team": "vision", "name": "a\x00b"})

    assert response.status_code == 400
    assert b"name: Null characters are not allowed." in response.content


def test_nul_in_a_browser_query_and_in_a_path(client, demo_org: DemoOrg) -> None:
    client.force_login(demo_org.member)

    listing = client.get(reverse("allocations:request-list") + "?team=vi%00sion")

    assert listing.status_code == 400 and b"team: Null characters" in listing.content
    assert client.get("/teams/vi%00sion/").status_code == 404


def test_price_book_load_checks_its_own_permission(demo_org: DemoOrg) -> None:
    for user in (demo_org.member, demo_org.approver, demo_org.team_lead):
        with pytest.raises(PermissionDenied, match="Only platform admins"):
            price_book_load(text=BOOK, acting_user=user)
    assert not PriceBook.objects.exists()

    book, created = price_book_load(text=BOOK, acting_user=demo_org.platform_admin)

    assert created and book.version == 1


def test_price_book_api_refuses_before_reading_the_body(api_client: APIClient, demo_org: DemoOrg) -> None:
    api_client.force_authenticate(demo_org.member)

    assert api_client.post("/api/v1/price-book/", {}, format="json").status_code == 403
    api_client.force_authenticate(demo_org.platform_admin)
    empty = api_client.post("/api/v1/price-book/", {}, format="json")
    assert empty.status_code == 400 and list(empty.json()) == ["yaml"]
