"""Cost writes: loading a price book, importing historical usage, and closing a month's immutable reports.

The email of a closed month is sent by its own task (``billing.costs.tasks``, ``billing.costs.emails``).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from decimal import Decimal
from typing import Any

from django.conf import settings
from django.core.exceptions import PermissionDenied, ValidationError
from django.db import transaction
from django.db.models import Max
from django.utils import timezone

from allocations.models import SlaTier, Team
from allocations.selectors import User
from audit.services import audit_record
from billing.costs.chargeback import last_closed_month, month_bounds, month_chargeback
from billing.costs.selectors import catalog_models_by_name
from billing.costs.tasks import email_monthly_reports as email_monthly_reports_task
from billing.costs.usage_import import USAGE_HEADER, usage_import
from billing.models import (
    GpuPrice,
    MonthlyReport,
    MonthlyReportLine,
    OrganisationMonthSummary,
    PriceBook,
    ReportStatus,
    SlaMultiplier,
)
from gpucore.chargeback import TeamCharge
from gpucore.pricebook import PriceBookError, load_price_book_text

logger = logging.getLogger(__name__)

# The price book file's key for a stored price's column (the TCO inputs keep their names).
_PRICE_BOOK_KEYS = {"list_hourly": "hourly", "hourly_rate": "hourly", "multiplier": ""}


def _clean_as(row: Any, path: str, *, exclude: list[str]) -> None:
    """full_clean, with errors under the price book file's path (``gpu_models.T4.hourly``), not the column's."""
    try:
        row.full_clean(exclude=exclude)
    except ValidationError as exc:
        errors: dict[str, list[str]] = {}
        for column, messages in exc.message_dict.items():
            key = _PRICE_BOOK_KEYS.get(column, column)
            errors.setdefault(f"{path}.{key}" if key else path, []).extend(messages)
        raise ValidationError(errors) from exc


def price_book_load(*, text: str | None, acting_user: User | None = None) -> tuple[PriceBook, bool]:
    """Validate a price book YAML and store it as the next version; ``(book, created)``, idempotent per file.

    Prices take effect at 00:00 UTC of ``effective_from``; a date inside a month already closed is refused, since
    closed months are never recomputed with new prices. A signed-in ``acting_user`` must be a platform admin
    (PermissionDenied otherwise); None is the operator's shell (``manage.py load_price_book``, ``seed_demo``).
    """
    if acting_user is not None and not (acting_user.is_active and acting_user.is_staff):
        raise PermissionDenied("Only platform admins load price books.")
    if not isinstance(text, str) or not text.strip():
        raise ValidationError({"yaml": ["Send the price book file (YAML) as a string in 'yaml'."]})
    try:
        spec = load_price_book_text(text, currency=settings.PORTAL_CURRENCY)
    except PriceBookError as exc:
        raise ValidationError(dict(exc.errors.items())) from exc
    errors: dict[str, list[str]] = {}
    catalog = catalog_models_by_name()
    for price in spec.gpu_prices:
        if price.gpu_model.casefold() not in catalog:
            known = ", ".join(sorted({m.name for m in catalog.values()}))
            errors[f"gpu_models.{price.gpu_model}"] = [f"is not a catalog GPU model. Known models: {known}."]
    tiers = set(SlaTier.objects.values_list("slug", flat=True))
    for slug in spec.sla_multipliers:
        if slug not in tiers:
            errors[f"sla_multipliers.{slug}"] = [f"is not an SLA tier. Known tiers: {', '.join(sorted(tiers))}."]
    last_closed = last_closed_month()
    if last_closed is not None and spec.effective_from < month_bounds(last_closed)[1].date():
        errors["effective_from"] = [
            f"{spec.effective_from} falls in or before {last_closed:%Y-%m}, which is closed; "
            "closed months are never recomputed. Use a date after the last closed month."
        ]
    existing = PriceBook.objects.filter(effective_from=spec.effective_from).first()
    if existing is not None and existing.source.strip() == text.strip():
        return existing, False
    if existing is not None:
        errors.setdefault("effective_from", []).append(
            f"price book v{existing.version} already takes effect on {spec.effective_from}; "
            "load a new version with a later date."
        )
    if errors:
        raise ValidationError(errors)
    with transaction.atomic():
        version = (PriceBook.objects.select_for_update().aggregate(v=Max("version"))["v"] or 0) + 1
        book = PriceBook(
            version=version,
            currency=spec.currency,
            effective_from=spec.effective_from,
            source=text,
            notes=spec.notes,
            loaded_at=timezone.now(),
            loaded_by=acting_user if acting_user is not None and acting_user.is_authenticated else None,
        )
        book.full_clean()
        book.save()
        audit_record(actor=acting_user, obj=book, before=None, actor_label="load_price_book")
        for price in spec.gpu_prices:
            tco = price.tco
            row = GpuPrice(
                price_book=book,
                gpu_model=catalog[price.gpu_model.casefold()].name,
                hourly_rate=price.hourly_rate,
                list_hourly=price.hourly,
                purchase_price=tco.purchase_price if tco else None,
                amortization_months=tco.amortization_months if tco else None,
                tdp_watts=tco.tdp_watts if tco else None,
                pue=tco.pue if tco else None,
                kwh_price=tco.kwh_price if tco else None,
                ops_overhead_pct_per_year=tco.ops_overhead_pct_per_year if tco else None,
                opportunity_cost_per_hour=tco.opportunity_cost_per_hour if tco else None,
                power_scale=tco.power_scale if tco else None,
            )
            # The rate is stored unrounded beyond 10 places; quantize so full_clean accepts it.
            row.hourly_rate = row.hourly_rate.quantize(Decimal("1e-10"))
            _clean_as(row, f"gpu_models.{price.gpu_model}", exclude=["price_book"])
            row.save()
        for slug, multiplier in spec.sla_multipliers.items():
            row = SlaMultiplier(price_book=book, tier_slug=slug, multiplier=multiplier)
            _clean_as(row, f"sla_multipliers.{slug}", exclude=["price_book"])
            row.save()
    return book, True


# --- closing a month -------------------------------------------------------------------------------------------


@dataclass
class CloseResult:
    """What closing a month did: reports created, reports already closed, and teams that failed."""

    month: date
    created: list[str] = field(default_factory=list)
    already_closed: list[str] = field(default_factory=list)
    failed: dict[str, str] = field(default_factory=dict)
    summary_created: bool = False


def _report_lines(report: MonthlyReport, charge: TeamCharge) -> list[MonthlyReportLine]:
    q = Decimal("1e-10")
    return [
        MonthlyReportLine(
            report=report,
            request_ref=line.allocation.request_id,
            imported_ref=int(line.allocation.key.split(":")[1]) if line.allocation.imported else None,
            name=line.allocation.name[:100],
            gpu_model=line.allocation.gpu_model[:40],
            strategy=line.allocation.strategy,
            resource_name=line.allocation.resource_name[:63],
            quantity=line.allocation.units,
            sla_tier=line.allocation.sla_tier or "",
            period_start=line.start,
            period_end=line.end,
            hours=line.hours.quantize(q),
            unit_share=line.unit_share.quantize(q),
            allocated_gpu_hours=line.allocated_gpu_hours.quantize(q),
            gpu_rate=line.gpu_rate.quantize(q),
            sla_multiplier=line.sla_multiplier,
            rate=line.rate.quantize(q),
            amount=line.amount.quantize(q),
            dedicated_amount=line.dedicated_amount.quantize(q),
            rate_source=line.rate_source,
            price_book_version=line.price_version,
            avg_utilization_pct=line.allocation.avg_utilization_pct,
            energy_kwh=line.allocation.energy_kwh,
        )
        for line in charge.lines
    ]


def _close_team(*, team: Team, month: date, charge: TeamCharge, now: datetime) -> bool:
    q = Decimal("1e-10")
    with transaction.atomic():
        report, _created = MonthlyReport.objects.select_for_update().get_or_create(
            team=team, month=month, defaults={"currency": settings.PORTAL_CURRENCY, "status": ReportStatus.OPEN}
        )
        if report.status == ReportStatus.CLOSED:
            return False
        report.lines.all().delete()  # an open report left by an interrupted run is rebuilt, never doubled
        MonthlyReportLine.objects.bulk_create(_report_lines(report, charge))
        versions = sorted({line.price_version for line in charge.lines if line.price_version is not None})
        unpriced = sorted({line.allocation.gpu_model for line in charge.lines if line.rate_source == "unpriced"})
        report.amount = charge.amount.quantize(q)
        report.idle_share = charge.idle_share.quantize(q)
        report.total = charge.total.quantize(q)
        report.dedicated_baseline = charge.dedicated_amount.quantize(q)
        report.saving_vs_dedicated = charge.saving_vs_dedicated.quantize(q)
        report.allocated_gpu_hours = charge.allocated_gpu_hours.quantize(q)
        report.price_book_versions = versions
        report.warnings = [f"No price for {model}: its hours are charged at 0." for model in unpriced]
        report.status = ReportStatus.CLOSED
        report.closed_at = now
        report.full_clean()
        report.save()
    return True


def monthly_reports_close(*, month: date, now: datetime | None = None, send_email: bool = True) -> CloseResult:
    """Close a finished month: one immutable report per team and an organisation summary; idempotent.

    A report already closed is left as it is (never recomputed with new prices); one team's failure does not
    stop the others. ``send_email`` then queues ``billing.email_monthly_reports``, which sends the reports not yet
    emailed to team leads and ``PORTAL_FINANCE_EMAILS``.
    """
    now = now or timezone.now()
    month = month.replace(day=1)
    if month_bounds(month)[1] > now:
        raise ValidationError({"month": [f"{month:%Y-%m} has not ended yet; it can be closed from its last day on."]})
    result = CloseResult(month=month)
    chargeback = month_chargeback(month=month, now=now)
    for team in Team.objects.order_by("slug"):
        charge = chargeback.teams.get(team.slug) or TeamCharge(team.slug)
        try:
            if _close_team(team=team, month=month, charge=charge, now=now):
                result.created.append(team.slug)
            else:
                result.already_closed.append(team.slug)
        except Exception as exc:  # isolate per team: the others still close
            logger.exception("Closing %s for %s failed", month, team.slug)
            result.failed[team.slug] = str(exc)
    q = Decimal("1e-10")
    with transaction.atomic():
        if not OrganisationMonthSummary.objects.filter(month=month).exists():
            OrganisationMonthSummary.objects.create(
                month=month,
                currency=settings.PORTAL_CURRENCY,
                capacity_cost=chargeback.total_capacity_cost.quantize(q),
                allocated_cost=chargeback.total_allocated.quantize(q),
                idle_cost=chargeback.total_idle_cost.quantize(q),
                idle_shared=chargeback.idle_shared,
                total=(chargeback.total_allocated + chargeback.total_idle_cost).quantize(q),
                saving_vs_dedicated=sum(
                    (t.saving_vs_dedicated for t in chargeback.teams.values()), Decimal(0)
                ).quantize(q),
                by_model={
                    model: {
                        "capacity": str(chargeback.capacity_cost.get(model, Decimal(0)).quantize(q)),
                        "allocated": str(chargeback.allocated_base_cost.get(model, Decimal(0)).quantize(q)),
                        "idle": str(chargeback.idle_cost.get(model, Decimal(0)).quantize(q)),
                    }
                    for model in sorted({*chargeback.capacity_cost, *chargeback.allocated_base_cost})
                },
                closed_at=now,
            )
            result.summary_created = True
    if send_email:
        # Its own task: a mail server that is down never holds the close back, and the mail alone can be retried.
        email_monthly_reports_task.delay(f"{month:%Y-%m}")
    return result


def previous_month(now: datetime | None = None) -> date:
    """The first day of the calendar month before the one ``now`` (UTC) falls in."""
    today = (now or timezone.now()).astimezone(UTC).date()
    return date(today.year - (today.month == 1), (today.month - 2) % 12 + 1, 1)


__all__: list[Any] = [
    "USAGE_HEADER",
    "CloseResult",
    "monthly_reports_close",
    "previous_month",
    "price_book_load",
    "usage_import",
]
