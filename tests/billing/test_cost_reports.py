"""Price book loading, usage import, closing a month (immutable reports), CSV/PDF export, emails."""

from __future__ import annotations

import csv
import io
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal as D

import pytest
from django.core import mail
from django.core.exceptions import ValidationError
from django.core.management import call_command
from django.core.management.base import CommandError

from allocations.clusters.placement import gpu_hourly_rates
from billing.costs.chargeback import month_chargeback
from billing.costs.report_pdf import report_pdf
from billing.costs.reports import report_csv
from billing.costs.selectors import current_gpu_rates
from billing.costs.services import monthly_reports_close, price_book_load, usage_import
from billing.costs.tasks import email_monthly_reports
from billing.models import ClosedReportError, ImportedUsage, MonthlyReport, MonthlyReportLine, OrganisationMonthSummary
from billing.tasks import close_previous_month
from tests.billing.cost_helpers import OCT, held_request, load_book, rollup

pytestmark = pytest.mark.django_db
OCTOBER = date(2026, 10, 1)


def test_load_price_book_command_and_current_rates(tmp_path, capsys) -> None:
    path = tmp_path / "prices.yaml"
    path.write_text(
        'currency: USD\neffective_from: 2026-10-01\ngpu_models:\n  A100-40GB: {hourly: "2.00"}\n'
        '  H100-80GB: {purchase_price: "27500", amortization_months: 36, tdp_watts: 700, pue: "1.4", '
        'kwh_price: "0.12", ops_overhead_pct_per_year: "25"}\n'
        'sla_multipliers: {tier1_realtime: "1.5", tier2_batch: "1.0", tier3_development: "0.8"}\n'
    )
    call_command("load_price_book", str(path))
    assert "Loaded price book v1" in capsys.readouterr().out
    rates = current_gpu_rates()
    assert rates["A100-40GB"] == D("2.00") and rates["H100-80GB"].quantize(D("0.01")) == D("1.95")
    assert gpu_hourly_rates() == rates  # the recommendation framework prices from the book
    call_command("load_price_book", str(path))  # the same file again is a no-op
    assert "Already loaded" in capsys.readouterr().out


def test_price_book_errors_name_the_field(tmp_path) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text(
        "effective_from: 2026-10-01\ngpu_models: {B300: {hourly: '9'}, T4: {hourly: x}}\n"
        "sla_multipliers: {platinum: '2'}\n"
    )
    with pytest.raises(CommandError) as info:
        call_command("load_price_book", str(path))
    text = str(info.value)
    assert "gpu_models.T4.hourly" in text
    with pytest.raises(ValidationError) as exc:
        price_book_load(
            text="effective_from: 2026-10-01\ngpu_models: {B300: {hourly: '9'}}\nsla_multipliers: {gold: 2}"
        )
    assert {"gpu_models.B300", "sla_multipliers.gold"} <= set(exc.value.message_dict)


def test_second_book_same_date_refused_and_future_book_not_in_effect() -> None:
    load_book({"T4": "0.50"})
    with pytest.raises(ValidationError) as exc:
        load_book({"T4": "0.60"})
    assert "already takes effect" in " ".join(exc.value.message_dict["effective_from"])
    load_book({"T4": "0.70"}, effective_from="2099-01-01")
    assert current_gpu_rates() == {"T4": D("0.50")}


CSV_HEADER = (
    "team,request,gpu_model,strategy,resource_name,quantity,time_slice_replicas,start,end,avg_utilization_pct\n"
)


def test_import_usage_all_or_nothing_with_line_numbers(demo_org, tmp_path) -> None:
    bad = tmp_path / "bad.csv"
    bad.write_text(
        CSV_HEADER
        + "vision,old-1,A100-40GB,mig,nvidia.com/mig-3g.20gb,1,,2026-10-01T00:00:00Z,2026-10-02T00:00:00Z,41\n"
        + "ghosts,old-2,A100-40GB,dedicated,nvidia.com/gpu,1,,2026-10-01T00:00:00Z,2026-10-02T00:00:00Z,\n"
        + "nlp,old-3,T4,time-slicing,nvidia.com/gpu,1,,2026-10-01T00:00:00,2026-09-02T00:00:00Z,120\n"
    )
    with pytest.raises(CommandError) as info:
        call_command("import_usage", str(bad))
    text = str(info.value)
    assert "line 3: team: 'ghosts'" in text
    assert "line 4: time_slice_replicas" in text and "line 4: start" in text and "line 4: avg_utilization_pct" in text
    assert ImportedUsage.objects.count() == 0  # line 2 was fine, but nothing is imported
    good = tmp_path / "good.csv"
    good.write_text(
        CSV_HEADER
        + "vision,old-1,A100-40GB,mig,nvidia.com/mig-3g.20gb,1,,2026-10-01T00:00:00Z,2026-10-02T00:00:00Z,41\n"
        + "nlp,old-3,T4,time-slicing,nvidia.com/gpu,1,4,2026-10-01T00:00:00Z,2026-10-01T10:00:00Z,\n"
    )
    call_command("import_usage", str(good))
    assert ImportedUsage.objects.count() == 2
    with pytest.raises(ValidationError, match="already imported"):
        usage_import(csv_text=good.read_text())


def test_close_month_reports_lines_idle_and_saving(demo_org, settings) -> None:
    settings.BILLING_SHARE_IDLE_COST = False
    settings.PORTAL_FINANCE_EMAILS = ["finance@example.com"]
    load_book({"H100-80GB": "2.00", "A100-40GB": "2.10"}, tier1_realtime="1.5")
    # demo pool: 16 H100s. vision: 2 H100s for 10 days; nlp: 1 H100 for the whole month in tier1.
    vision = held_request(team=demo_org.team, start=OCT, end=OCT + timedelta(days=10), quantity=2)
    held_request(team=demo_org.other_team, start=datetime(2026, 9, 20, tzinfo=UTC), end=None, tier="tier1_realtime")
    rollup(cluster=demo_org.cluster, hour=OCT, request=vision, util=50.0)
    rollup(cluster=demo_org.cluster, hour=OCT + timedelta(hours=1), request=vision, util=70.0)
    result = monthly_reports_close(month=OCTOBER)
    assert sorted(result.created) == ["nlp", "vision"] and result.summary_created
    v = MonthlyReport.objects.get(team=demo_org.team, month=OCTOBER)
    n = MonthlyReport.objects.get(team=demo_org.other_team, month=OCTOBER)
    assert v.status == "closed" and v.total.quantize(D("0.01")) == D("960.00")  # 2 x 240 h x 2.00
    assert n.total.quantize(D("0.01")) == D("2232.00")  # 744 h x 2.00 x 1.5
    line = v.lines.get()
    assert line.request_ref == vision.pk and line.avg_utilization_pct == pytest.approx(60.0)
    summary = OrganisationMonthSummary.objects.get(month=OCTOBER)
    # 16 GPUs x 744 h x 2.00 = 23808.00; allocated at base rate 960 + 1488 = 2448.00; idle 21360.00.
    assert summary.capacity_cost.quantize(D("0.01")) == D("23808.00")
    assert summary.idle_cost.quantize(D("0.01")) == D("21360.00")
    # Emails: the vision lead gets CSV + PDF; nlp has no lead; Finance gets the summary.
    subjects = sorted(m.subject for m in mail.outbox)
    assert subjects == ["GPU chargeback 2026-10: Vision", "GPU chargeback 2026-10: organisation summary"]
    lead_mail = next(m for m in mail.outbox if m.to == ["lead@example.com"])
    assert {a[0] for a in lead_mail.attachments} == {"chargeback-vision-2026-10.csv", "chargeback-vision-2026-10.pdf"}


def test_closed_reports_are_immutable_and_never_recomputed(demo_org) -> None:
    load_book({"H100-80GB": "2.00"})
    held_request(team=demo_org.team, start=OCT, end=OCT + timedelta(hours=10))
    monthly_reports_close(month=OCTOBER, send_email=False)
    report = MonthlyReport.objects.get(team=demo_org.team, month=OCTOBER)
    line = report.lines.get()
    report.total = D(1)
    with pytest.raises(ClosedReportError):
        report.save()
    with pytest.raises(ClosedReportError):
        report.delete()
    line.amount = D(0)
    with pytest.raises(ClosedReportError):
        line.save()
    with pytest.raises(ClosedReportError):
        line.delete()
    with pytest.raises(ClosedReportError):
        MonthlyReportLine.objects.filter(pk=line.pk).update(amount=D(0))
    with pytest.raises(ClosedReportError):
        MonthlyReportLine.objects.filter(pk=line.pk).delete()
    with pytest.raises(ClosedReportError):
        MonthlyReportLine.objects.bulk_create([MonthlyReportLine(**{**_fields(line), "id": None})])
    # A later price book for a closed month is refused; closing again changes nothing.
    with pytest.raises(ValidationError, match="closed"):
        load_book({"H100-80GB": "9.00"}, effective_from="2026-10-15")
    load_book({"H100-80GB": "9.00"}, effective_from="2026-11-01")
    again = monthly_reports_close(month=OCTOBER, send_email=False)
    assert again.created == [] and "vision" in again.already_closed
    assert MonthlyReport.objects.get(pk=report.pk).total.quantize(D("0.01")) == D("20.00")
    call_command("build_monthly_reports", "--month", "2026-10", "--no-email")
    assert MonthlyReport.objects.get(pk=report.pk).lines.get().amount.quantize(D("0.01")) == D("20.00")


def test_the_monthly_email_is_its_own_task_and_sends_each_report_once(demo_org, settings) -> None:
    settings.PORTAL_FINANCE_EMAILS = ["finance@example.com"]
    load_book({"H100-80GB": "2.00"})
    held_request(team=demo_org.team, start=OCT, end=OCT + timedelta(hours=10))
    monthly_reports_close(month=OCTOBER, send_email=False)
    assert mail.outbox == []
    assert email_monthly_reports.delay("2026-10").get() == {"month": "2026-10", "sent": 1}
    assert sorted(m.subject for m in mail.outbox) == [
        "GPU chargeback 2026-10: Vision",
        "GPU chargeback 2026-10: organisation summary",
    ]
    assert email_monthly_reports("2026-10") == {"month": "2026-10", "sent": 0} and len(mail.outbox) == 2


def _fields(line: MonthlyReportLine) -> dict:
    return {f.attname: getattr(line, f.attname) for f in MonthlyReportLine._meta.concrete_fields}


def test_open_month_cannot_be_closed_and_task_closes_previous(demo_org) -> None:
    with pytest.raises(ValidationError, match="not ended"):
        monthly_reports_close(month=date(2099, 1, 1))
    out = close_previous_month()
    assert out["failed"] == {} and set(out["created"]) >= {"vision", "nlp"}


def test_mid_month_price_change_in_closed_report(demo_org) -> None:
    load_book({"A100-40GB": "2.00"})
    load_book({"A100-40GB": "3.00"}, effective_from="2026-10-16")
    held_request(team=demo_org.team, start=OCT, end=None, gpu_model="A100-40GB")
    monthly_reports_close(month=OCTOBER, send_email=False)
    report = MonthlyReport.objects.get(team=demo_org.team, month=OCTOBER)
    assert [line.rate.normalize() for line in report.lines.order_by("period_start")] == [D(2), D(3)]
    assert report.total.quantize(D("0.01")) == D("1872.00") and report.price_book_versions == [1, 2]


def test_weighted_idle_sharing_in_reports(demo_org, settings) -> None:
    settings.BILLING_SHARE_IDLE_COST = True
    load_book({"H100-80GB": "0.95"})
    demo_org.pool.node_count, demo_org.pool.gpus_per_node = 1, 4
    demo_org.pool.save()
    day = datetime(2026, 10, 2, tzinfo=UTC)
    held_request(team=demo_org.team, start=OCT, end=day, quantity=2)
    held_request(team=demo_org.other_team, start=OCT, end=OCT + timedelta(hours=12))
    charge = month_chargeback(month=OCTOBER, now=day)  # the window ends with the day: the OpenCost example
    assert charge.teams["vision"].total.quantize(D("0.01")) == D("72.96")
    assert charge.teams["nlp"].total.quantize(D("0.01")) == D("18.24")


def test_csv_and_pdf_export(demo_org) -> None:
    load_book({"H100-80GB": "2.00", "T4": "0.52"})
    held_request(team=demo_org.team, start=OCT, end=OCT + timedelta(hours=10), quantity=2)
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
    report = MonthlyReport.objects.get(team=demo_org.team, month=OCTOBER)
    rows = list(csv.DictReader(io.StringIO(report_csv([report]))))
    lines = [r for r in rows if r["row_type"] == "line"]
    # 2 x 10 h x 2.00; 1/4 x 100 h x 0.52 x 0.8 (tier3's own multiplier: the book names no tier).
    assert [r["amount"] for r in lines] == ["40.00", "10.40"]
    total = next(r for r in rows if r["row_type"] == "total")
    assert total["amount"] == str(report.total.quantize(D("0.01")))
    pdf = report_pdf(report)
    # The label and its right-aligned amount are two cells of the summary.
    assert pdf.startswith(b"%PDF") and b"(Total:)" in pdf and f"({total['amount']} USD)".encode() in pdf
