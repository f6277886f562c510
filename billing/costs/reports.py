"""Monthly reports as data (the DESIGN.md ``/api/v1/reports/`` shape), CSV and PDF (fpdf2).

Stored (closed) reports and live estimates of an open month come out in the same shape, so the API, the pages,
the CSV and the PDF never disagree. Amounts are rounded half-up to the cent here, at presentation only.
"""

from __future__ import annotations

import io
from collections.abc import Iterable
from datetime import date, datetime
from decimal import ROUND_HALF_UP, Decimal
from pathlib import Path
from typing import Any

from django.conf import settings
from django.utils import timezone
from fpdf import FPDF

from allocations.models import Team
from billing.costs.selectors import closed_reports, month_bounds, month_chargeback
from billing.models import MonthlyReport, OrganisationMonthSummary, ReportStatus
from gpucore.chargeback import Chargeback, TeamCharge
from gpucore.exports import SafeCsvWriter
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
]


def money(amount: Decimal, currency: str) -> dict[str, str]:
    """A money object of the API: the amount rounded half-up to the cent, as a string, and its currency."""
    return {"amount": str(to_cents(amount)), "currency": currency}


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
    """A stored report (closed) in the DESIGN.md shape; reads ``report.lines`` (prefetch it for lists)."""
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


def report_csv(reports: Iterable[MonthlyReport | dict[str, Any]]) -> str:
    """Reports as one CSV: a row per line, then each report's idle share and total rows (``row_type``)."""
    out = io.StringIO()
    writer = SafeCsvWriter(out)
    writer.writerow(CSV_COLUMNS)
    for payload in _payloads(reports):
        head = [payload["team"], payload["month"], payload["status"]]
        currency = payload["total"]["currency"]
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
                ]
            )
        blank = [""] * 10
        writer.writerow([*head, "idle_share", *blank, payload["idle_share"]["amount"], "", currency])
        writer.writerow([*head, "total", *blank, payload["total"]["amount"], "", currency])
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
    Chinese or Japanese). Without the font installed, other characters become '?', never dropped silently."""

    def __init__(self) -> None:
        super().__init__(orientation="L", format="A4")
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


def report_pdf(report: MonthlyReport | dict[str, Any]) -> bytes:
    """One report as a one-table PDF (uncompressed, so the figures are searchable in the bytes)."""
    payload = _payloads([report])[0]
    currency = payload["total"]["currency"]
    pdf = _ReportPdf()
    pdf.set_compression(False)
    pdf.set_title(f"GPU chargeback {payload['team']} {payload['month']}")
    pdf.add_page()
    title = pdf.text_in(f"GPU chargeback - {payload['team_name']} - {payload['month']}", "B", 16)
    pdf.cell(0, 10, title, new_x="LMARGIN", new_y="NEXT")
    status = "closed" if payload["status"] == ReportStatus.CLOSED else "open (estimate, not final)"
    status_text = pdf.text_in(f"Status: {status}.  Currency: {currency}.", "", 10)
    pdf.cell(0, 6, status_text, new_x="LMARGIN", new_y="NEXT")
    pdf.ln(3)
    headers = ["Request", "Name", "GPU model", "Strategy", "Resource", "Qty", "GPU-h", "Rate/GPU-h", "Amount", "Util %"]
    widths = [18, 52, 26, 24, 46, 12, 24, 24, 26, 18]
    for header, width in zip(headers, widths, strict=True):
        pdf.cell(width, 7, pdf.text_in(header, "B", 9), border=1)
    pdf.ln()
    for line in payload["lines"]:
        util = "" if line["avg_utilization_pct"] is None else f"{line['avg_utilization_pct']:.1f}"
        cells = [
            line["request"] if line["request"] is not None else "import",
            line["name"][:34],
            line["gpu_model"],
            line["strategy"],
            line["resource_name"],
            line["quantity"],
            line["allocated_gpu_hours"],
            line["rate"],
            line["amount"],
            util,
        ]
        for value, width in zip(cells, widths, strict=True):
            pdf.cell(width, 6, pdf.text_in(value, "", 8), border=1)
        pdf.ln()
    pdf.ln(3)
    for label, key in (
        ("Allocations", "lines_total"),
        ("Share of idle capacity", "idle_share"),
        ("Saving vs all-dedicated", "saving_vs_dedicated"),
    ):
        text = pdf.text_in(f"{label}: {payload[key]['amount']} {currency}", "", 10)
        pdf.cell(0, 6, text, new_x="LMARGIN", new_y="NEXT")
    total = pdf.text_in(f"Total: {payload['total']['amount']} {currency}", "B", 12)
    pdf.cell(0, 8, total, new_x="LMARGIN", new_y="NEXT")
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
