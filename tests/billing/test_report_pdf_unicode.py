"""The monthly PDF keeps a team's and a request's CJK names (an embedded Unicode font), instead of turning them to '?'.

fpdf2 writes text in an embedded TrueType font as glyph ids and maps them back to Unicode in the font's ToUnicode
CMap (uncompressed here): each CJK character of the names must be mapped there, so a reader (and a search) sees it.
"""

from __future__ import annotations

from datetime import timedelta

import pytest

from billing.costs.reports import report_pdf
from billing.costs.services import monthly_reports_close
from billing.models import MonthlyReport
from tests.billing.cost_helpers import OCT, held_request, load_book

pytestmark = [pytest.mark.font, pytest.mark.django_db]
TEAM_NAME, REQUEST_NAME = "视觉团队", "训练任务"


def test_the_pdf_keeps_cjk_names(demo_org) -> None:
    demo_org.team.name = TEAM_NAME
    demo_org.team.save()
    load_book({"H100-80GB": "2.00"})
    request = held_request(team=demo_org.team, start=OCT, end=OCT + timedelta(hours=10))
    request.name = REQUEST_NAME
    request.save()
    monthly_reports_close(month=OCT.date(), send_email=False)
    pdf = report_pdf(MonthlyReport.objects.get(team=demo_org.team))
    mapped = {char for char in TEAM_NAME + REQUEST_NAME if f"<{ord(char):04X}>".encode() in pdf}
    print(f"\nCJK characters mapped in the PDF: {len(mapped)} of {len(set(TEAM_NAME + REQUEST_NAME))}")
    assert mapped == set(TEAM_NAME + REQUEST_NAME)
    assert b"(Total:)" in pdf and b"(20.00 USD)" in pdf  # Latin-1 text stays in Helvetica, searchable as before
