"""Finance outputs a finance team can file: the monthly PDF and CSV carry the team's cost centre, the period's dates,
when they were generated, the price book version, subtotals by strategy and by GPU model; the PDF numbers its pages
and right-aligns its amounts (read back with pypdf, text and positions)."""

from __future__ import annotations

import csv
import io
import re
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal as D

import pypdf
import pytest
from fpdf import FPDF

from billing.costs.report_pdf import report_pdf
from billing.costs.reports import report_csv, stored_report_payload
from billing.costs.services import monthly_reports_close
from billing.models import MonthlyReport
from gpucore.formatting import format_money
from tests.billing.cost_helpers import OCT, held_request, load_book

pytestmark = pytest.mark.django_db
OCTOBER = date(2026, 10, 1)
MADE = datetime(2026, 11, 2, 7, 30, tzinfo=UTC)


@pytest.fixture
def report(demo_org) -> MonthlyReport:
    demo_org.team.cost_center = "CC-4100"
    demo_org.team.save(update_fields=["cost_center"])
    load_book({"H100-80GB": "2.00", "T4": "0.52", "A100-40GB": "1.60"})
    held_request(team=demo_org.team, start=OCT, end=OCT + timedelta(hours=10), quantity=2)
    held_request(team=demo_org.team, start=OCT, end=OCT + timedelta(hours=600), quantity=1)
    held_request(
        team=demo_org.team,
        start=OCT,
        end=OCT + timedelta(hours=100),
        gpu_model="T4",
        strategy="time-slicing",
        time_slice_replicas=4,
        tier="tier3_development",
    )
    monthly_reports_close(month=OCTOBER, send_email=False)
    return MonthlyReport.objects.get(team=demo_org.team, month=OCTOBER)


def rows_of(report: MonthlyReport) -> list[dict[str, str]]:
    return list(csv.DictReader(io.StringIO(report_csv([report], generated_at=MADE))))


def test_the_csv_names_cost_centre_period_price_book_and_when_it_was_made(report: MonthlyReport) -> None:
    rows = rows_of(report)

    assert {row["cost_center"] for row in rows} == {"CC-4100"}
    assert {(row["report_period_start"], row["report_period_end"]) for row in rows} == {("2026-10-01", "2026-10-31")}
    assert {row["generated_at"] for row in rows} == {"2026-11-02T07:30:00+00:00"}
    assert {row["price_book_version"] for row in rows if row["row_type"] == "line"} == {"1"}


def test_the_csv_subtotals_add_up_to_the_lines(report: MonthlyReport) -> None:
    rows = rows_of(report)
    lines = [row for row in rows if row["row_type"] == "line"]

    by_strategy = {row["strategy"]: D(row["amount"]) for row in rows if row["row_type"] == "subtotal_strategy"}
    by_model = {row["gpu_model"]: D(row["amount"]) for row in rows if row["row_type"] == "subtotal_gpu_model"}

    assert by_strategy == {"dedicated": D("1240.00"), "time-slicing": D("10.40")}  # 2x10 h + 600 h at 2.00
    assert by_model == {"H100-80GB": D("1240.00"), "T4": D("10.40")}
    assert sum(by_strategy.values()) == sum(by_model.values()) == sum(D(row["amount"]) for row in lines)


def pdf_pages(data: bytes) -> list[str]:
    return [page.extract_text() for page in pypdf.PdfReader(io.BytesIO(data)).pages]


def test_the_pdf_has_the_facts_subtotals_and_page_numbers(report: MonthlyReport) -> None:
    [page] = pdf_pages(report_pdf(report, generated_at=MADE))

    assert "Cost centre: CC-4100" in page
    assert "Period: 2026-10-01 to 2026-10-31 (UTC)" in page
    closed_at = report.closed_at.astimezone(UTC)
    assert "Price book: v1" in page and f"Closed: {closed_at:%Y-%m-%d %H:%M} UTC" in page
    assert "By strategy" in page and "By GPU model" in page
    assert "1,240.00 USD" in page and "Page 1 of 1" in page


def test_a_long_report_numbers_every_page_and_repeats_the_header(report: MonthlyReport) -> None:
    long = stored_report_payload(report)
    long["lines"] = long["lines"] * 30

    pages = pdf_pages(report_pdf(long, generated_at=MADE))

    assert len(pages) >= 3
    for number, text in enumerate(pages, start=1):
        assert f"Page {number} of {len(pages)}" in text
        assert "Rate/GPU-h" in text  # the table's header on every page it spills onto


def test_amounts_are_right_aligned(report: MonthlyReport) -> None:
    """The line amounts end at the same x (the Amount column's right edge), however long each is: read from the page's
    own drawing operators (``BT x y Td (text) Tj``), which the uncompressed PDF keeps as written."""
    content = pypdf.PdfReader(io.BytesIO(report_pdf(report, generated_at=MADE))).pages[0].get_contents().get_data()
    amounts = {format_money(row["amount"], "USD") for row in rows_of(report) if row["row_type"] == "line"}
    starts: dict[str, float] = {}
    for x, text in re.findall(rb"BT ([0-9.]+) [0-9.]+ Td \(([^)]*)\) Tj ET", content):
        if text.decode() in amounts:
            starts.setdefault(text.decode(), float(x))  # the first: the lines table comes before the subtotals
    metrics = FPDF(unit="pt")
    metrics.set_font("Helvetica", "", 8)
    ends = {text: x + metrics.get_string_width(text) for text, x in starts.items()}

    assert set(ends) == amounts and len(amounts) == 3
    assert max(ends.values()) - min(ends.values()) < 0.5, ends
    assert len({round(x) for x in starts.values()}) > 1  # different lengths start at different places


def test_a_closed_month_prints_when_it_was_closed_the_same_on_every_download(report: MonthlyReport) -> None:
    first = pdf_pages(report_pdf(report, generated_at=MADE))[0]
    later = pdf_pages(report_pdf(report, generated_at=MADE + timedelta(days=40)))[0]
    assert first == later and "Estimate made" not in first


def test_an_open_month_says_when_its_estimate_was_made(report: MonthlyReport) -> None:
    estimate = stored_report_payload(report) | {"status": "open", "closed_at": None}
    page = pdf_pages(report_pdf(estimate, generated_at=MADE))[0]
    assert "Estimate made: 2026-11-02 07:30 UTC" in page and "Closed:" not in page


def test_the_totals_come_first_even_when_the_lines_fill_pages(report: MonthlyReport) -> None:
    long = stored_report_payload(report)
    long["lines"] = long["lines"] * 30
    first, *rest = pdf_pages(report_pdf(long, generated_at=MADE))
    assert first.index("Total:") < first.index("Rate/GPU-h")
    assert all("Total:" not in page for page in rest)


def test_an_empty_month_says_there_are_no_lines(report: MonthlyReport) -> None:
    empty = stored_report_payload(report)
    empty["lines"] = []
    [page] = pdf_pages(report_pdf(empty, generated_at=MADE))
    assert "No GPU allocation was charged to this team in this month" in page
    assert "Rate/GPU-h" not in page and "By strategy" not in page
