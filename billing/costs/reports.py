"""Monthly reports as data (the ``/api/v1/reports/`` shape of docs/api.md), CSV and PDF (fpdf2).

Stored (closed) reports and live estimates of an open month come out in the same shape, so the API, the pages,
the CSV and the PDF never disagree. Amounts are rounded half-up to the cent here, at presentation only.
"""

from __future__ import annotations

import io
from collections.abc import Iterable
from datetime import UTC, date, datetime, timedelta
from decimal import ROUND_HALF_UP, Decimal
from pathlib import Path
from typing import Any

from django.conf import settings
from django.utils import timezone
from fpdf import FPDF

from allocations.models import Team
from billing.costs.chargeback import closed_reports, month_bounds, month_chargeback
from billing.models import MonthlyReport, OrganisationMonthSummary, ReportStatus
from gpucore.chargeback import Chargeback, TeamCharge
from gpucore.exports import SafeCsvWriter
from gpucore.formatting import format_gpu_hours, format_money
from gpucore.pricing import to_cents

CSV_COLUMNS = [
    "team",
    "month",
    "status",
    "row_type",
    "request",
    "name",
    "gpu_model",
    "strategy",
    "resource_name",
    "quantity",
    "period_start",
    "period_end",
    "allocated_gpu_hours",
    "rate",
    "amount",
    "avg_utilization_pct",
    "currency",
    # For finance (appended, so the columns above keep their places): where the cost is booked, the report's
    # period, the price book a line was priced with, and when the file was made.
    "cost_center",
    "report_period_start",
    "report_period_end",
    "price_book_version",
    "generated_at",
]
# Subtotal rows of each report in the CSV and the PDF: (row_type, the line field it groups by, the PDF's heading).
SUBTOTALS = (
    ("subtotal_strategy", "strategy", "By strategy", "Strategy"),
    ("subtotal_gpu_model", "gpu_model", "By GPU model", "GPU model"),
)


def money(amount: Decimal, currency: str) -> dict[str, str]:
    """A money object of the API: the amount rounded half-up to the cent, as a string, and its currency."""
    return {"amount": str(to_cents(amount)), "currency": currency}


def period(month: date) -> dict[str, str]:
    """A report's period as dates: its month's first and last day (UTC), ISO 8601."""
    start, end = month_bounds(month)
    return {"start": start.date().isoformat(), "end": (end - timedelta(days=1)).date().isoformat()}


def subtotals(lines: Iterable[dict[str, Any]], field: str) -> list[dict[str, Any]]:
    """The lines' GPU-hours and amounts added up per value of ``field`` (strategy, gpu_model), by that value."""
    groups: dict[str, tuple[Decimal, Decimal, int]] = {}
    for line in lines:
        key = str(line[field])
        hours, amount, count = groups.get(key, (Decimal(0), Decimal(0), 0))
        groups[key] = (hours + Decimal(line["allocated_gpu_hours"]), amount + Decimal(line["amount"]), count + 1)
    return [
        {"key": key, "allocated_gpu_hours": _q(hours, "0.001"), "amount": str(to_cents(amount)), "lines": count}
        for key, (hours, amount, count) in sorted(groups.items())
    ]


def _price_books(payload: dict[str, Any]) -> str:
    versions = payload.get("price_book_versions") or []
    return ", ".join(f"v{version}" for version in versions) if versions else "catalog list prices (no price book)"


def _q(value: Decimal, places: str) -> str:
    return str(value.quantize(Decimal(places), rounding=ROUND_HALF_UP))


def _util(value: float | None) -> float | None:
    return round(value, 1) if value is not None else None


def _line(**kw: Any) -> dict[str, Any]:
    return {
        "request": kw["request"],
        "name": kw["name"],
        "gpu_model": kw["gpu_model"],
        "strategy": kw["strategy"],
        "resource_name": kw["resource_name"],
        "quantity": kw["quantity"],
        "allocated_gpu_hours": _q(kw["allocated_gpu_hours"], "0.001"),
        "rate": _q(kw["rate"], "0.0001"),
        "amount": str(to_cents(kw["amount"])),
        "avg_utilization_pct": _util(kw["avg_utilization_pct"]),
        "imported": kw["imported"],
        "period_start": kw["period_start"].isoformat(),
        "period_end": kw["period_end"].isoformat(),
        "sla_multiplier": str(kw["sla_multiplier"].normalize()),
        "price_book_version": kw["price_book_version"],
        "rate_source": kw["rate_source"],
        "energy_kwh": round(kw["energy_kwh"], 3) if kw["energy_kwh"] is not None else None,
        "dedicated_amount": str(to_cents(kw["dedicated_amount"])),
    }


def stored_report_payload(report: MonthlyReport) -> dict[str, Any]:
    """A stored report (closed) in the API's shape; reads ``report.lines`` (prefetch it for lists)."""
    lines = [
        _line(
            request=line.request_ref,
            name=line.name,
            gpu_model=line.gpu_model,
            strategy=line.strategy,
            resource_name=line.resource_name,
            quantity=line.quantity,
            allocated_gpu_hours=line.allocated_gpu_hours,
            rate=line.rate,
            amount=line.amount,
            avg_utilization_pct=line.avg_utilization_pct,
            imported=line.imported_ref is not None,
            period_start=line.period_start,
            period_end=line.period_end,
            sla_multiplier=line.sla_multiplier,
            price_book_version=line.price_book_version,
            rate_source=line.rate_source,
            energy_kwh=line.energy_kwh,
            dedicated_amount=line.dedicated_amount,
        )
        for line in report.lines.all()
    ]
    currency = report.currency
    return {
        "id": report.pk,
        "team": report.team.slug,
        "team_name": report.team.name,
        "cost_center": report.team.cost_center,
        "period": period(report.month),
        "month": f"{report.month:%Y-%m}",
        "status": report.status,
        "total": money(report.total, currency),
        "lines": lines,
        "idle_share": money(report.idle_share, currency),
        "saving_vs_dedicated": money(report.saving_vs_dedicated, currency),
        "lines_total": money(report.amount, currency),
        "dedicated_baseline": money(report.dedicated_baseline, currency),
        "allocated_gpu_hours": _q(report.allocated_gpu_hours, "0.001"),
        "price_book_versions": report.price_book_versions,
        "warnings": report.warnings,
        "closed_at": report.closed_at.isoformat() if report.closed_at else None,
    }


def live_report_payload(*, team: Team, month: date, charge: TeamCharge) -> dict[str, Any]:
    """An open month's estimate for one team, computed now, in the same shape as a stored report."""
    currency = settings.PORTAL_CURRENCY
    lines = [
        _line(
            request=line.allocation.request_id,
            name=line.allocation.name,
            gpu_model=line.allocation.gpu_model,
            strategy=line.allocation.strategy,
            resource_name=line.allocation.resource_name,
            quantity=line.allocation.units,
            allocated_gpu_hours=line.allocated_gpu_hours,
            rate=line.rate,
            amount=line.amount,
            avg_utilization_pct=line.allocation.avg_utilization_pct,
            imported=line.allocation.imported,
            period_start=line.start,
            period_end=line.end,
            sla_multiplier=line.sla_multiplier,
            price_book_version=line.price_version,
            rate_source=line.rate_source,
            energy_kwh=line.allocation.energy_kwh,
            dedicated_amount=line.dedicated_amount,
        )
        for line in charge.lines
    ]
    unpriced = sorted({line.allocation.gpu_model for line in charge.lines if line.rate_source == "unpriced"})
    return {
        "id": None,
        "team": team.slug,
        "team_name": team.name,
        "cost_center": team.cost_center,
        "period": period(month),
        "month": f"{month:%Y-%m}",
        "status": ReportStatus.OPEN.value,
        "total": money(charge.total, currency),
        "lines": lines,
        "idle_share": money(charge.idle_share, currency),
        "saving_vs_dedicated": money(charge.saving_vs_dedicated, currency),
        "lines_total": money(charge.amount, currency),
        "dedicated_baseline": money(charge.dedicated_amount, currency),
        "allocated_gpu_hours": _q(charge.allocated_gpu_hours, "0.001"),
        "price_book_versions": sorted({ln.price_version for ln in charge.lines if ln.price_version is not None}),
        "warnings": [f"No price for {model}: its hours are charged at 0." for model in unpriced],
        "closed_at": None,
    }


def _payloads(reports: Iterable[MonthlyReport | dict[str, Any]]) -> list[dict[str, Any]]:
    return [r if isinstance(r, dict) else stored_report_payload(r) for r in reports]


def report_csv(reports: Iterable[MonthlyReport | dict[str, Any]], *, generated_at: datetime | None = None) -> str:
    """Reports as one CSV: a row per line, the subtotals by strategy and by GPU model, then each report's idle share
    and total rows (``row_type``); every row carries the cost centre, the report's period and the generation time."""
    out = io.StringIO()
    writer = SafeCsvWriter(out)
    writer.writerow(CSV_COLUMNS)
    made = (generated_at or timezone.now()).astimezone(UTC).isoformat(timespec="seconds")
    for payload in _payloads(reports):
        head = [payload["team"], payload["month"], payload["status"]]
        currency = payload["total"]["currency"]
        books = ";".join(str(version) for version in payload.get("price_book_versions") or [])

        def tail(version: object, *, payload: dict[str, Any] = payload) -> list[object]:
            period_ = payload["period"]
            return [payload.get("cost_center", ""), period_["start"], period_["end"], version, made]

        for line in payload["lines"]:
            writer.writerow(
                [
                    *head,
                    "line",
                    line["request"] if line["request"] is not None else "",
                    line["name"],
                    line["gpu_model"],
                    line["strategy"],
                    line["resource_name"],
                    line["quantity"],
                    line["period_start"],
                    line["period_end"],
                    line["allocated_gpu_hours"],
                    line["rate"],
                    line["amount"],
                    "" if line["avg_utilization_pct"] is None else line["avg_utilization_pct"],
                    currency,
                    *tail("" if line["price_book_version"] is None else line["price_book_version"]),
                ]
            )
        for row_type, field, _, _ in SUBTOTALS:
            for group in subtotals(payload["lines"], field):
                by = [group["key"], ""] if field == "gpu_model" else ["", group["key"]]
                hours_to_amount = [group["allocated_gpu_hours"], "", group["amount"]]
                writer.writerow(
                    [*head, row_type, "", "", *by, "", "", "", "", *hours_to_amount, "", currency, *tail(books)]
                )
        blank = [""] * 10
        writer.writerow([*head, "idle_share", *blank, payload["idle_share"]["amount"], "", currency, *tail(books)])
        writer.writerow([*head, "total", *blank, payload["total"]["amount"], "", currency, *tail(books)])
    return out.getvalue()


def organisation_csv(month: date) -> str:
    """The organisation's closed month: one row per team, then idle capacity and the grand total."""
    out = io.StringIO()
    writer = SafeCsvWriter(out)
    writer.writerow(["month", "team", "amount", "idle_share", "total", "saving_vs_dedicated", "currency"])
    reports = MonthlyReport.objects.filter(month=month, status=ReportStatus.CLOSED).select_related("team")
    for r in reports.order_by("team__slug"):
        writer.writerow(
            [
                f"{month:%Y-%m}",
                r.team.slug,
                to_cents(r.amount),
                to_cents(r.idle_share),
                to_cents(r.total),
                to_cents(r.saving_vs_dedicated),
                r.currency,
            ]
        )
    summary = OrganisationMonthSummary.objects.filter(month=month).first()
    if summary is not None:
        idle_left = Decimal(0) if summary.idle_shared else summary.idle_cost
        writer.writerow([f"{month:%Y-%m}", "(idle capacity)", "", "", to_cents(idle_left), "", summary.currency])
        writer.writerow(
            [f"{month:%Y-%m}", "(organisation total)", "", "", to_cents(summary.total), "", summary.currency]
        )
    return out.getvalue()


UNICODE_FONT = "portal-unicode"


def _unicode_font_path() -> Path | None:
    """The TrueType font for text beyond Latin-1 (CJK names), when installed: ``PDF_UNICODE_FONT``."""
    path = Path(getattr(settings, "PDF_UNICODE_FONT", "") or "/nonexistent")
    return path if path.is_file() else None


class _ReportPdf(FPDF):
    """Helvetica for Latin-1 text (small, searchable), the Unicode font for anything else (a team or request named in
    Chinese or Japanese). Without the font installed, other characters become '?', never dropped silently.
    Every page ends with what the document is and ``Page n of N``."""

    def __init__(self, *, footer_text: str = "") -> None:
        super().__init__(orientation="L", format="A4")
        self.footer_text = footer_text
        self.unicode_font = _unicode_font_path()
        if self.unicode_font is not None:
            for style in ("", "B", "I"):  # one face: WenQuanYi Micro Hei has no bold or italic
                self.add_font(UNICODE_FONT, style, str(self.unicode_font))

    def text_in(self, text: object, style: str, size: float) -> str:
        """Select the font for ``text`` and return the text to write with it."""
        value = str(text)
        try:
            value.encode("latin-1")
        except UnicodeEncodeError:
            if self.unicode_font is not None:
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


def report_pdf(report: MonthlyReport | dict[str, Any], *, generated_at: datetime | None = None) -> bytes:
    """One report as a PDF a finance team can file: team, cost centre, period, price book, generation time, the lines
    with right-aligned amounts, subtotals by strategy and GPU model, the totals, and page numbers (uncompressed, so
    the figures are searchable in the bytes)."""
    payload = _payloads([report])[0]
    currency = payload["total"]["currency"]
    made = (generated_at or timezone.now()).astimezone(UTC)
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
        f"Price book: {_price_books(payload)}    Currency: {currency}",
        f"Generated: {made:%Y-%m-%d %H:%M} UTC",
    ]
    for fact in facts:
        pdf.cell(0, 6, pdf.text_in(fact, "", 10), new_x="LMARGIN", new_y="NEXT")
    pdf.ln(3)
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
    pdf.ln(3)
    summary = [
        ("Allocations", "lines_total", ""),
        ("Share of idle capacity", "idle_share", ""),
        ("Saving vs all-dedicated", "saving_vs_dedicated", ""),
        ("Total", "total", "B"),
    ]
    if pdf.will_page_break(6 * len(summary) + 4):
        pdf.add_page()
    for label, key, style in summary:
        pdf.cell(60, 7, pdf.text_in(f"{label}:", style, 10 if not style else 12))
        pdf.cell(
            40,
            7,
            pdf.text_in(format_money(payload[key]["amount"], currency), style, 10 if not style else 12),
            align="R",
        )
        pdf.ln()
    for warning in payload["warnings"]:
        pdf.cell(0, 6, pdf.text_in(warning, "I", 9), new_x="LMARGIN", new_y="NEXT")
    return bytes(pdf.output())


def live_reports(*, teams: Iterable[Team], month: date, chargeback: Chargeback) -> list[dict[str, Any]]:
    """Open-month estimates for these teams from one computed chargeback."""
    return [
        live_report_payload(team=team, month=month, charge=chargeback.teams.get(team.slug) or TeamCharge(team.slug))
        for team in teams
    ]


def month_reports(*, teams: Iterable[Team], month: date, now: datetime | None = None) -> list[dict[str, Any]]:
    """Each team's report of ``month`` (``closed_reports``'s rule): stored where closed, else an estimate made now.

    Closed reports come first (by team slug), then the estimates of the other teams from one chargeback; a month
    that has not begun has no estimates.
    """
    teams = list(teams)
    now = now or timezone.now()
    stored = closed_reports(month=month, teams=teams).select_related("team").prefetch_related("lines")
    payloads = [stored_report_payload(report) for report in stored.order_by("team__slug")]
    closed = {payload["team"] for payload in payloads}
    missing = [team for team in teams if team.slug not in closed]
    if missing and month_bounds(month)[0] <= now:
        payloads += live_reports(teams=missing, month=month, chargeback=month_chargeback(month=month, now=now))
    return payloads
