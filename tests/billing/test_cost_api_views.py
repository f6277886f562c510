"""Reports API and pages: the role matrix, CSV, the price book endpoint, dashboards and their CSVs."""

from __future__ import annotations

import csv
import io
from datetime import timedelta

import pytest
from django.urls import reverse

from billing.costs.services import monthly_reports_close
from tests.billing.cost_helpers import OCT, finance_user, held_request, load_book, rollup
from tests.billing.test_cost_reports import OCTOBER
from tests.factories import ROLES

pytestmark = pytest.mark.django_db

VISIBLE = {
    "platform_admin": {"vision", "nlp"},
    "approver": {"vision", "nlp"},
    "finance": {"vision", "nlp"},
    "team_lead": {"vision"},
    "member": {"vision"},
    "outsider": {"nlp"},
}


@pytest.fixture
def closed(demo_org):
    load_book({"H100-80GB": "2.00"})
    req = held_request(team=demo_org.team, start=OCT, end=OCT + timedelta(hours=10), quantity=2)
    held_request(team=demo_org.other_team, start=OCT, end=OCT + timedelta(hours=5))
    rollup(cluster=demo_org.cluster, hour=OCT, request=req, util=40.0)
    monthly_reports_close(month=OCTOBER, send_email=False)
    demo_org.finance = finance_user()
    return demo_org


@pytest.mark.parametrize("role", [*ROLES, "finance"])
def test_reports_api_role_matrix(closed, api_client, role, django_assert_max_num_queries) -> None:
    api_client.force_authenticate(getattr(closed, role))
    with django_assert_max_num_queries(12):
        response = api_client.get("/api/v1/reports/", {"month": "2026-10"})
    assert response.status_code == 200
    body = response.json()
    assert {r["team"] for r in body} == VISIBLE[role]
    vision = next((r for r in body if r["team"] == "vision"), None)
    if vision:
        assert vision["status"] == "closed" and vision["total"] == {"amount": "40.00", "currency": "USD"}
        line = vision["lines"][0]
        assert set(line) >= {
            "request", "name", "gpu_model", "strategy", "resource_name", "quantity",
            "allocated_gpu_hours", "rate", "amount", "avg_utilization_pct",
        }  # fmt: skip
        assert (line["allocated_gpu_hours"], line["rate"], line["amount"]) == ("20.000", "2.0000", "40.00")
        assert {"idle_share", "saving_vs_dedicated"} <= set(vision)


def test_reports_api_other_team_is_404_and_anonymous_refused(closed, api_client) -> None:
    assert api_client.get("/api/v1/reports/").status_code in (401, 403)
    api_client.force_authenticate(closed.member)
    assert api_client.get("/api/v1/reports/", {"team": "nlp"}).status_code == 404
    assert api_client.get("/api/v1/reports/", {"month": "october"}).json() == {"month": ["Use YYYY-MM, not 'october'."]}


def test_reports_api_csv_and_open_month_estimate(closed, api_client) -> None:
    api_client.force_authenticate(closed.approver)
    response = api_client.get("/api/v1/reports/", {"month": "2026-10", "format": "csv"})
    assert response.status_code == 200 and response["Content-Type"].startswith("text/csv")
    rows = list(csv.DictReader(io.StringIO(response.content.decode())))
    totals = {r["team"]: r["amount"] for r in rows if r["row_type"] == "total"}
    assert totals == {"nlp": "10.00", "vision": "40.00"}
    held_request(team=closed.team, start=OCT + timedelta(days=31), end=OCT + timedelta(days=31, hours=3))
    estimate = api_client.get("/api/v1/reports/", {"month": "2026-11", "team": "vision"}).json()
    assert estimate[0]["status"] == "open" and estimate[0]["total"]["amount"] == "6.00"


def test_price_book_api(closed, api_client) -> None:
    api_client.force_authenticate(closed.outsider)
    body = api_client.get("/api/v1/price-book/").json()
    assert body["current"]["version"] == 1 and body["current"]["gpu_models"]["H100-80GB"]["hourly"] == "2"
    text = "effective_from: 2026-12-01\ngpu_models: {T4: {hourly: '0.5'}}\n"
    assert api_client.post("/api/v1/price-book/", {"yaml": text}, format="json").status_code == 403
    api_client.force_authenticate(closed.platform_admin)
    assert api_client.post("/api/v1/price-book/", {"yaml": text}, format="json").status_code == 201
    bad = api_client.post("/api/v1/price-book/", {"yaml": "effective_from: 2026-12-02\ngpu_models: {T4: {hourly: x}}"})
    assert bad.status_code == 400 and "gpu_models.T4.hourly" in bad.json()


def test_report_pages_scoped(closed, client) -> None:
    client.force_login(closed.member)
    assert client.get(reverse("billing:report-list")).status_code == 200
    detail = client.get(reverse("billing:report-detail", args=["vision", 2026, 10]))
    assert detail.status_code == 200 and b"40.00" in detail.content
    assert client.get(reverse("billing:report-detail", args=["nlp", 2026, 10])).status_code == 404
    pdf = client.get(reverse("billing:report-download", args=["vision", 2026, 10, "pdf"]))
    assert pdf.content.startswith(b"%PDF") and b"(Total:)" in pdf.content and b"(40.00 USD)" in pdf.content
    assert client.get(reverse("billing:report-download", args=["nlp", 2026, 10, "csv"])).status_code == 404


def test_dashboard_and_chart_csvs(closed, client) -> None:
    client.force_login(closed.platform_admin)
    page = client.get(reverse("billing:dashboard"), {"month": "2026-10"})
    assert page.status_code == 200
    panels = {p["id"]: p for p in page.context["panels"]}
    assert not panels["cost-over-time"]["empty"] and not panels["pool-heatmap"]["empty"]
    assert b"js/plotly-cartesian.min.js" in page.content and b"cdn" not in page.content.lower()
    over_time = client.get(reverse("billing:dashboard-csv", args=["cost-over-time"]), {"month": "2026-10"})
    rows = list(csv.DictReader(io.StringIO(over_time.content.decode())))
    assert {"month": "2026-10", "team": "vision", "cost": "40.00"} in rows
    assert not any(r["team"] == "(idle capacity)" for r in rows)  # idle capacity is a toggle, off by default
    with_idle = client.get(reverse("billing:dashboard-csv", args=["cost-over-time"]), {"month": "2026-10", "idle": "1"})
    assert any(r["team"] == "(idle capacity)" for r in csv.DictReader(io.StringIO(with_idle.content.decode())))
    client.force_login(closed.member)
    member_rows = client.get(reverse("billing:dashboard-csv", args=["cost-over-time"]), {"month": "2026-10"})
    teams = {r["team"] for r in csv.DictReader(io.StringIO(member_rows.content.decode()))}
    assert teams == {"vision"}
    # Members cannot turn idle capacity on: the toggle is for those who see every team's costs.
    member_idle = client.get(
        reverse("billing:dashboard-csv", args=["cost-over-time"]), {"month": "2026-10", "idle": "1"}
    )
    assert {r["team"] for r in csv.DictReader(io.StringIO(member_idle.content.decode()))} == {"vision"}
    assert client.get(reverse("billing:dashboard-csv", args=["nope"])).status_code == 404
