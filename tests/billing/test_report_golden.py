"""The monthly reports of fixed fixture months, byte for byte against CSVs saved before billing was reorganised.

Closing September and October 2025 (and estimating November) must write exactly the CSVs in ``golden/``: any
change to when a request held GPUs, what its spec says it held, or how a line is priced shows here as a diff.
(Regenerated once when the finance columns and the subtotal rows were added: cost centre, report period, price
book version, generation time; the line rows' first 17 columns did not change.)
There is one set per database: a report's lines are ordered by request, and PostgreSQL sorts the imported lines
(no request) last where SQLite sorts them first.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from django.db import connection

from allocations.models import Team
from billing.costs.chargeback import month_chargeback
from billing.costs.reports import live_reports, organisation_csv, report_csv
from billing.costs.services import monthly_reports_close
from billing.models import MonthlyReport
from tests.billing.fixture_months import CLOSED_AT, NOVEMBER, NOVEMBER_NOW, OCTOBER, SEPTEMBER, build_fixture_months

pytestmark = pytest.mark.django_db
GOLDEN = Path(__file__).parent / "golden"


def _closed_csv(month) -> str:
    reports = MonthlyReport.objects.filter(month=month).order_by("team__slug").prefetch_related("lines")
    return report_csv(reports, generated_at=CLOSED_AT)


def _golden(name: str) -> str:
    return (GOLDEN / connection.vendor / name).read_text(encoding="utf-8")


def test_closed_and_open_months_match_the_saved_csvs(settings) -> None:
    settings.BILLING_SHARE_IDLE_COST = False
    settings.PORTAL_CURRENCY = "USD"
    build_fixture_months()
    for month in (SEPTEMBER, OCTOBER):
        result = monthly_reports_close(month=month, now=CLOSED_AT, send_email=False)
        assert result.created == ["nlp", "speech", "vision"] and not result.failed
    assert _closed_csv(SEPTEMBER) == _golden("reports-2025-09.csv")
    assert _closed_csv(OCTOBER) == _golden("reports-2025-10.csv")
    assert organisation_csv(SEPTEMBER) == _golden("organisation-2025-09.csv")
    assert organisation_csv(OCTOBER) == _golden("organisation-2025-10.csv")
    teams = Team.objects.order_by("slug")
    shared = month_chargeback(month=NOVEMBER, now=NOVEMBER_NOW, share_idle=True)
    estimate = report_csv(live_reports(teams=teams, month=NOVEMBER, chargeback=shared), generated_at=NOVEMBER_NOW)
    assert estimate == _golden("estimate-2025-11.csv")
