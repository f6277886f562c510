"""The monthly PDF keeps a team's and a request's CJK names (an embedded Unicode font), instead of turning them to '?'.

fpdf2 writes text in an embedded TrueType font as glyph ids and maps them back to Unicode in the font's ToUnicode
CMap (uncompressed here): each CJK character of the names must be mapped there, so a reader (and a search) sees it.
"""

from __future__ import annotations

from datetime import timedelta

import pytest

from billing.costs.report_pdf import report_pdf
from billing.costs.services import monthly_reports_close
from billing.models import MonthlyReport
from tests.billing.cost_helpers import OCT, held_request, load_book

pytestmark = [pytest.mark.font, pytest.mark.django_db]
TEAM_NAME, REQUEST_NAME = "视觉团队", "训练任务 🚀"


def _mapped(char: str) -> bytes:
    """How a ToUnicode CMap writes the character: UTF-16BE hex (a surrogate pair beyond the BMP)."""
    return ("<" + char.encode("utf-16-be").hex().upper() + ">").encode()


def test_the_pdf_keeps_cjk_names(demo_org) -> None:
    demo_org.team.name = TEAM_NAME
    demo_org.team.save()
    load_book({"H100-80GB": "2.00"})
    request = held_request(team=demo_org.team, start=OCT, end=OCT + timedelta(hours=10))
    request.name = REQUEST_NAME
    request.save()
    monthly_reports_close(month=OCT.date(), send_email=False)
    pdf = report_pdf(MonthlyReport.objects.get(team=demo_org.team))
    wanted = set((TEAM_NAME + REQUEST_NAME).replace(" ", ""))
    mapped = {char for char in wanted if _mapped(char) in pdf}
    print(f"\nCJK characters and emoji mapped in the PDF: {len(mapped)} of {len(wanted)}")
    assert mapped == wanted
    assert b"NotoEmoji" in pdf  # the rocket from the emoji font, the fallback of the CJK one
    assert b"(Total:)" in pdf and b"(20.00 USD)" in pdf  # Latin-1 text stays in Helvetica, searchable as before
