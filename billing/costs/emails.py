"""The monthly chargeback email: each closed report (CSV + PDF) to its team's leads, the summary to Finance.

Sent by the ``billing.email_monthly_reports`` task (``billing.costs.tasks``), queued once a month is closed.
Idempotent: a report is marked ``emailed_at`` once sent and never sent again.
"""

from __future__ import annotations

import logging
from datetime import date
from decimal import Decimal

from django.conf import settings
from django.core.mail import EmailMessage
from django.utils import timezone

from allocations.models import Membership, Role
from billing.costs.report_pdf import report_pdf
from billing.costs.reports import organisation_csv, report_csv
from billing.models import MonthlyReport, ReportStatus

logger = logging.getLogger(__name__)


def reports_email(*, month: date) -> int:
    """Email the month's closed reports not yet sent (CSV + PDF) to team leads, and the summary to Finance."""
    sent = 0
    reports = MonthlyReport.objects.filter(month=month, status=ReportStatus.CLOSED, emailed_at__isnull=True)
    for report in reports.select_related("team"):
        leads = list(
            Membership.objects.filter(team=report.team, role=Role.LEAD)
            .exclude(user__email="")
            .values_list("user__email", flat=True)
        )
        label = f"{report.team.slug}-{month:%Y-%m}"
        try:
            if leads:
                message = EmailMessage(
                    subject=f"GPU chargeback {month:%Y-%m}: {report.team.name}",
                    body=f"The GPU chargeback of {report.team.name} for {month:%B %Y} is closed. "
                    f"Total: {report.total.quantize(Decimal('0.01'))} {report.currency}. CSV and PDF attached.",
                    to=leads,
                )
                message.attach(f"chargeback-{label}.csv", report_csv([report]), "text/csv")
                message.attach(f"chargeback-{label}.pdf", report_pdf(report), "application/pdf")
                message.send()
                sent += 1
            # Delivery metadata, not report content: a queryset update leaves the closed report's figures alone.
            MonthlyReport.objects.filter(pk=report.pk).update(emailed_at=timezone.now())
        except Exception:
            logger.exception("Emailing report %s failed", label)
    finance = list(getattr(settings, "PORTAL_FINANCE_EMAILS", []) or [])
    if finance and sent:
        all_reports = list(MonthlyReport.objects.filter(month=month, status=ReportStatus.CLOSED).select_related("team"))
        message = EmailMessage(
            subject=f"GPU chargeback {month:%Y-%m}: organisation summary",
            body=f"The GPU chargeback for {month:%B %Y} is closed for {len(all_reports)} teams. CSVs attached.",
            to=finance,
        )
        message.attach(f"chargeback-summary-{month:%Y-%m}.csv", organisation_csv(month), "text/csv")
        message.attach(f"chargeback-lines-{month:%Y-%m}.csv", report_csv(all_reports), "text/csv")
        try:
            message.send()
        except Exception:
            logger.exception("Emailing the %s summary to Finance failed", month)
    return sent
