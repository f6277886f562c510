"""A team's monthly report as a PDF finance can file (fpdf2): what it is and its totals first, then the lines and
their subtotals, page numbers on every page.

Text beyond Latin-1 (a team or request named in Chinese, Japanese or Korean, or with an emoji) is set in fonts the
portal ships as pinned Python packages, so no system font is needed: Noto Sans CJK (``cvttf-NotoSansCJK-Regular``)
and, for what it lacks, Noto Emoji (``manimgx-fonts``). ``PDF_UNICODE_FONT`` names another TrueType/OpenType font.
"""

from __future__ import annotations

import importlib.util
from datetime import UTC, datetime
from functools import cache
from pathlib import Path
from typing import Any

from django.conf import settings
from django.utils import timezone
from fpdf import FPDF

from billing.costs.reports import SUBTOTALS, payloads, price_books_text, subtotals
from billing.models import MonthlyReport, ReportStatus
from gpucore.formatting import format_gpu_hours, format_money

UNICODE_FONT = "portal-unicode"
EMOJI_FONT = "portal-emoji"


def _packaged_font(package: str, name: str) -> Path | None:
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        return None
    path = Path(next(iter(spec.submodule_search_locations))) / name
    return path if path.is_file() else None


@cache
def unicode_font_path() -> Path | None:
    """The font for text beyond Latin-1: ``PDF_UNICODE_FONT`` when it names a file, else the packaged Noto Sans CJK."""
    configured = getattr(settings, "PDF_UNICODE_FONT", "")
    if configured and Path(configured).is_file():
        return Path(configured)
    return _packaged_font("cvttf_NotoSansCJK_Regular", "NotoSansCJKtc-Regular.otf")


@cache
def emoji_font_path() -> Path | None:
    """The packaged Noto Emoji (monochrome outlines), for the characters the Unicode font lacks."""
    return _packaged_font("manimgx_fonts", "NotoEmoji[wght].ttf")


class _ReportPdf(FPDF):
    """Helvetica for Latin-1 text (small, searchable), the Unicode font for anything else, Noto Emoji as its fallback.
    Without those fonts other characters become '?', never dropped silently. Every page ends with what the document
    is and ``Page n of N``."""

    def __init__(self, *, footer_text: str = "") -> None:
        super().__init__(orientation="L", format="A4")
        self.footer_text = footer_text
        self.unicode_font = unicode_font_path()
        self._unicode_fonts_added = False

    def _add_unicode_fonts(self) -> None:
        """Parse the fonts only for a report that needs them: the CJK font is megabytes, most reports are Latin-1."""
        if self._unicode_fonts_added or self.unicode_font is None:
            return
        self._unicode_fonts_added = True
        for style in ("", "B", "I"):  # one face, used for every style
            self.add_font(UNICODE_FONT, style, str(self.unicode_font))
        emoji = emoji_font_path()
        if emoji is not None:
            for style in ("", "B", "I"):
                self.add_font(EMOJI_FONT, style, str(emoji))
            self.set_fallback_fonts([EMOJI_FONT], exact_match=False)

    def text_in(self, text: object, style: str, size: float) -> str:
        """Select the font for ``text`` and return the text to write with it."""
        value = str(text)
        try:
            value.encode("latin-1")
        except UnicodeEncodeError:
            if self.unicode_font is not None:
                self._add_unicode_fonts()
                self.set_font(UNICODE_FONT, style, size)
                return value
            value = value.encode("latin-1", "replace").decode("latin-1")
        self.set_font("Helvetica", style, size)
        return value

    def footer(self) -> None:
        self.set_y(-12)
        width = self.w - self.l_margin - self.r_margin
        self.cell(width / 2, 6, self.text_in(self.footer_text, "", 8))
        self.cell(width / 2, 6, self.text_in(f"Page {self.page_no()} of {{nb}}", "", 8), align="R")

    def table(self, headers: list[str], widths: list[float], rows: list[list[object]], numeric: set[int]) -> None:
        """A bordered table, numbers right-aligned; the header is repeated at the top of every page it spills onto."""

        def header() -> None:
            for index, (text, width) in enumerate(zip(headers, widths, strict=True)):
                self.cell(width, 7, self.text_in(text, "B", 9), border=1, align="R" if index in numeric else "L")
            self.ln()

        header()
        for row in rows:
            if self.will_page_break(6):
                self.add_page()
                header()
            for index, (value, width) in enumerate(zip(row, widths, strict=True)):
                self.cell(width, 6, self.text_in(value, "", 8), border=1, align="R" if index in numeric else "L")
            self.ln()


def _made_line(payload: dict[str, Any], generated_at: datetime | None) -> str:
    """A closed month says when it was closed (the same on every download); an open one when this estimate was made."""
    if payload["status"] == ReportStatus.CLOSED and payload.get("closed_at"):
        closed = datetime.fromisoformat(payload["closed_at"]).astimezone(UTC)
        return f"Closed: {closed:%Y-%m-%d %H:%M} UTC"
    made = (generated_at or timezone.now()).astimezone(UTC)
    return f"Estimate made: {made:%Y-%m-%d %H:%M} UTC"


def report_pdf(report: MonthlyReport | dict[str, Any], *, generated_at: datetime | None = None) -> bytes:
    """One report as a PDF a finance team can file: team, cost centre, period, price book and when it was closed (or,
    open, when the estimate was made), the totals, then the lines with right-aligned amounts and the subtotals by
    strategy and GPU model (uncompressed, so the figures are searchable in the bytes)."""
    payload = payloads([report])[0]
    currency = payload["total"]["currency"]
    pdf = _ReportPdf(footer_text=f"GPU Portal chargeback - {payload['team']} - {payload['month']}")
    pdf.set_compression(False)
    pdf.alias_nb_pages()
    pdf.set_title(f"GPU chargeback {payload['team']} {payload['month']}")
    pdf.add_page()
    title = pdf.text_in(f"GPU chargeback - {payload['team_name']} - {payload['month']}", "B", 16)
    pdf.cell(0, 10, title, new_x="LMARGIN", new_y="NEXT")
    status = "closed" if payload["status"] == ReportStatus.CLOSED else "open (estimate, not final)"
    facts = [
        f"Team: {payload['team_name']} ({payload['team']})    Cost centre: {payload.get('cost_center') or 'not set'}",
        f"Period: {payload['period']['start']} to {payload['period']['end']} (UTC)    Status: {status}",
        f"Price book: {price_books_text(payload)}    Currency: {currency}",
        _made_line(payload, generated_at),
    ]
    for fact in facts:
        pdf.cell(0, 6, pdf.text_in(fact, "", 10), new_x="LMARGIN", new_y="NEXT")
    pdf.ln(3)
    _summary(pdf, payload, currency)
    for warning in payload["warnings"]:
        pdf.cell(0, 6, pdf.text_in(warning, "I", 9), new_x="LMARGIN", new_y="NEXT")
    pdf.ln(3)
    if not payload["lines"]:
        message = "No GPU allocation was charged to this team in this month: there are no lines."
        pdf.cell(0, 7, pdf.text_in(message, "", 11), new_x="LMARGIN", new_y="NEXT")
        return bytes(pdf.output())
    _lines(pdf, payload, currency)
    return bytes(pdf.output())


def _summary(pdf: _ReportPdf, payload: dict[str, Any], currency: str) -> None:
    summary = [
        ("Allocations", "lines_total", ""),
        ("Share of idle capacity", "idle_share", ""),
        ("Saving vs all-dedicated", "saving_vs_dedicated", ""),
        ("Total", "total", "B"),
    ]
    for label, key, style in summary:
        size = 12 if style else 10
        pdf.cell(60, 7, pdf.text_in(f"{label}:", style, size))
        pdf.cell(40, 7, pdf.text_in(format_money(payload[key]["amount"], currency), style, size), align="R")
        pdf.ln()


def _lines(pdf: _ReportPdf, payload: dict[str, Any], currency: str) -> None:
    pdf.cell(0, 7, pdf.text_in("Lines", "B", 10), new_x="LMARGIN", new_y="NEXT")
    rows = [
        [
            line["request"] if line["request"] is not None else "import",
            line["name"][:34],
            line["gpu_model"],
            line["strategy"],
            line["resource_name"],
            line["quantity"],
            format_gpu_hours(line["allocated_gpu_hours"]),
            line["rate"],
            format_money(line["amount"], currency),
            "" if line["avg_utilization_pct"] is None else f"{line['avg_utilization_pct']:.1f}",
        ]
        for line in payload["lines"]
    ]
    headers = ["Request", "Name", "GPU model", "Strategy", "Resource", "Qty", "GPU-h", "Rate/GPU-h", "Amount", "Util %"]
    pdf.table(headers, [18, 52, 26, 24, 46, 12, 22, 22, 32, 16], rows, numeric={5, 6, 7, 8, 9})
    for _, field, heading, column in SUBTOTALS:
        groups = subtotals(payload["lines"], field)
        if pdf.will_page_break(10 + 7 * (len(groups) + 1)):  # a short subtotal table stays on one page
            pdf.add_page()
        pdf.ln(3)
        pdf.cell(0, 7, pdf.text_in(heading, "B", 10), new_x="LMARGIN", new_y="NEXT")
        sub_rows = [
            [g["key"], g["lines"], format_gpu_hours(g["allocated_gpu_hours"]), format_money(g["amount"], currency)]
            for g in groups
        ]
        pdf.table([column, "Lines", "GPU-h", "Amount"], [60, 20, 30, 40], sub_rows, {1, 2, 3})
