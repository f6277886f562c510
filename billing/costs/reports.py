"""Monthly reports as data (the ``/api/v1/reports/`` shape of docs/api.md) and CSV (the PDF: ``report_pdf``).

Stored (closed) reports and live estimates of an open month come out in the same shape, so the API, the pages,
the CSV and the PDF never disagree. Amounts are rounded half-up to the cent here, at presentation only.
"""

from __future__ import annotations

import io
from collections.abc import Iterable
from datetime import UTC, date, datetime, timedelta
from decimal import ROUND_HALF_UP, Decimal
from typing import Any

from django.conf import settings
from django.utils import timezone

from allocations.models import Team
from billing.costs.chargeback import closed_reports, month_bounds, month_chargeback
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


def price_books_text(payload: dict[str, Any]) -> str:
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


def payloads(reports: Iterable[MonthlyReport | dict[str, Any]]) -> list[dict[str, Any]]:
    return [r if isinstance(r, dict) else stored_report_payload(r) for r in reports]


def report_csv(reports: Iterable[MonthlyReport | dict[str, Any]], *, generated_at: datetime | None = None) -> str:
    """Reports as one CSV: a row per line, the subtotals by strategy and by GPU model, then each report's idle share
    and total rows (``row_type``); every row carries the cost centre, the report's period and the generation time."""
    out = io.StringIO()
    writer = SafeCsvWriter(out)
    writer.writerow(CSV_COLUMNS)
    made = (generated_at or timezone.now()).astimezone(UTC).isoformat(timespec="seconds")
    for payload in payloads(reports):
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
