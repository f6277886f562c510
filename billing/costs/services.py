"""Cost writes: loading a price book, importing historical usage, and closing a month's immutable reports.

The email of a closed month is sent by its own task (``billing.costs.tasks``, ``billing.costs.emails``).
"""

from __future__ import annotations

import csv
import io
import logging
import re
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from decimal import Decimal, InvalidOperation
from typing import Any

from django.conf import settings
from django.core.exceptions import PermissionDenied, ValidationError
from django.db import transaction
from django.db.models import Max
from django.utils import timezone

from allocations.models import GpuModel, SlaTier, Team
from allocations.selectors import User
from audit.services import audit_record
from billing.costs.selectors import month_bounds, month_chargeback
from billing.costs.tasks import email_monthly_reports as email_monthly_reports_task
from billing.models import (
    GpuPrice,
    ImportedUsage,
    MonthlyReport,
    MonthlyReportLine,
    OrganisationMonthSummary,
    PriceBook,
    ReportStatus,
    SlaMultiplier,
)
from gpucore.catalog import CatalogError
from gpucore.chargeback import TeamCharge
from gpucore.pricebook import PriceBookError, load_price_book_text

logger = logging.getLogger(__name__)

USAGE_HEADER = [
    "team",
    "request",
    "gpu_model",
    "strategy",
    "resource_name",
    "quantity",
    "time_slice_replicas",
    "start",
    "end",
    "avg_utilization_pct",
]
_MIG_RESOURCE = re.compile(r"^nvidia\.com/mig-\d+g\.\d+gb(\+me)?$")


def _catalog_names() -> dict[str, GpuModel]:
    names: dict[str, GpuModel] = {}
    for model in GpuModel.objects.prefetch_related("mig_profiles"):
        for key in (model.name, *(model.aliases or [])):
            names[str(key).casefold()] = model
    return names


def _last_closed_month() -> date | None:
    return MonthlyReport.objects.filter(status=ReportStatus.CLOSED).aggregate(last=Max("month"))["last"]


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
    catalog = _catalog_names()
    for price in spec.gpu_prices:
        if price.gpu_model.casefold() not in catalog:
            known = ", ".join(sorted({m.name for m in catalog.values()}))
            errors[f"gpu_models.{price.gpu_model}"] = [f"is not a catalog GPU model. Known models: {known}."]
    tiers = set(SlaTier.objects.values_list("slug", flat=True))
    for slug in spec.sla_multipliers:
        if slug not in tiers:
            errors[f"sla_multipliers.{slug}"] = [f"is not an SLA tier. Known tiers: {', '.join(sorted(tiers))}."]
    last_closed = _last_closed_month()
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


# --- usage import ----------------------------------------------------------------------------------------------


_WHOLE_NUMBER = re.compile(r"[0-9]{1,12}")  # ASCII digits only: str.isdigit() also accepts "\u0661" and "²"
MAX_USAGE_QUANTITY = 100_000  # GPUs or slices in one row: far beyond any cluster, well inside the column
MAX_TIME_SLICE_REPLICAS = 1_000


def _parse_time(value: str, column: str, problems: list[str]) -> datetime | None:
    try:
        parsed = datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
    except ValueError:
        problems.append(f"{column}: '{value}' is not an ISO 8601 time such as 2026-09-01T00:00:00Z.")
        return None
    if timezone.is_naive(parsed):
        problems.append(f"{column}: '{value}' has no UTC offset; write it as ...Z or +00:00.")
        return None
    return parsed.astimezone(UTC)


def _usage_row(row: dict[str, str], teams: dict[str, Team], catalog: dict[str, GpuModel]) -> tuple[dict, list[str]]:
    problems: list[str] = []
    value = {k: (row.get(k) or "").strip() for k in USAGE_HEADER}
    for column, text in value.items():
        if "\x00" in text:
            problems.append(f"{column}: contains a NUL character; remove it.")
            value[column] = text.replace("\x00", "")
    team = teams.get(value["team"])
    if team is None:
        problems.append(f"team: '{value['team']}' is not a team slug.")
    if not value["request"]:
        problems.append("request: is required (the request's name or id).")
    model = catalog.get(value["gpu_model"].casefold())
    if model is None:
        problems.append(f"gpu_model: '{value['gpu_model']}' is not a catalog GPU model.")
    strategy = value["strategy"]
    if strategy not in {"dedicated", "mig", "time-slicing"}:
        problems.append(f"strategy: '{strategy}' must be dedicated, mig or time-slicing.")
    resource = value["resource_name"]
    if strategy == "dedicated" and resource != "nvidia.com/gpu":
        problems.append("resource_name: a dedicated allocation uses nvidia.com/gpu.")
    if strategy == "time-slicing" and resource not in {"nvidia.com/gpu", "nvidia.com/gpu.shared"}:
        problems.append("resource_name: a time-sliced share uses nvidia.com/gpu or nvidia.com/gpu.shared.")
    if strategy == "mig":
        if not _MIG_RESOURCE.match(resource):
            problems.append("resource_name: a MIG slice uses nvidia.com/mig-<n>g.<m>gb, e.g. nvidia.com/mig-1g.5gb.")
        elif model is not None:
            # The catalog's profiles, never the digits of the name: 3g.99gb has 3 compute slices but no H100 has it.
            try:
                model.to_spec().profile(resource.removeprefix("nvidia.com/mig-"))
            except CatalogError as exc:
                problems.append(f"resource_name: {exc}")
    quantity = None
    if not _WHOLE_NUMBER.fullmatch(value["quantity"]) or not 1 <= int(value["quantity"]) <= MAX_USAGE_QUANTITY:
        problems.append(f"quantity: '{value['quantity']}' must be a whole number from 1 to {MAX_USAGE_QUANTITY}.")
    else:
        quantity = int(value["quantity"])
    replicas = None
    if strategy == "time-slicing":
        replicas_text = value["time_slice_replicas"]
        if not _WHOLE_NUMBER.fullmatch(replicas_text) or not 2 <= int(replicas_text) <= MAX_TIME_SLICE_REPLICAS:
            problems.append("time_slice_replicas: a time-sliced share needs the replicas per GPU (>= 2).")
        else:
            replicas = int(value["time_slice_replicas"])
    elif value["time_slice_replicas"]:
        problems.append("time_slice_replicas: only for strategy time-slicing; leave it empty.")
    start = _parse_time(value["start"], "start", problems)
    end = _parse_time(value["end"], "end", problems)
    if start and end and end <= start:
        problems.append("end: must be after start.")
    util = None
    if value["avg_utilization_pct"]:
        try:
            util = float(Decimal(value["avg_utilization_pct"]))
            if not 0 <= util <= 100:
                raise InvalidOperation
        except InvalidOperation:
            problems.append(f"avg_utilization_pct: '{value['avg_utilization_pct']}' must be a number from 0 to 100.")
            util = None
    fields = {
        "team": team,
        "request_label": value["request"][:100],
        "gpu_model": model.name if model else "",
        "strategy": strategy,
        "resource_name": resource,
        "quantity": quantity,
        "time_slice_replicas": replicas,
        "start": start,
        "end": end,
        "avg_utilization_pct": util,
    }
    return fields, problems


def usage_import(*, csv_text: str, source_name: str = "", acting_user: User | None = None) -> int:
    """Load historical allocations from CSV (DESIGN.md header), all or nothing; errors name line and column."""
    reader = csv.DictReader(io.StringIO(csv_text.lstrip("\ufeff")))
    header = [h.strip() for h in (reader.fieldnames or [])]
    if header != USAGE_HEADER:
        raise ValidationError({"header": [f"line 1: the header must be exactly {','.join(USAGE_HEADER)}."]})
    teams = {t.slug: t for t in Team.objects.all()}
    catalog = _catalog_names()
    last_closed = _last_closed_month()
    closed_until = month_bounds(last_closed)[1] if last_closed else None
    errors: list[str] = []
    rows: list[ImportedUsage] = []
    now = timezone.now()
    for row in reader:
        line = reader.line_num
        fields, problems = _usage_row(row, teams, catalog)
        if not problems and closed_until is not None and fields["start"] < closed_until:
            problems.append(f"start: {last_closed:%Y-%m} and earlier months are closed; their reports never change.")
        if not problems and fields["start"] > now:
            problems.append("start: is in the future; only usage that happened can be imported.")
        errors.extend(f"line {line}: {problem}" for problem in problems)
        if not problems:
            rows.append(ImportedUsage(**fields, source_file=source_name[:255], line_number=line, imported_at=now))
    errors.extend(_usage_overlaps(rows))
    if not rows and not errors:
        errors.append("line 2: the file has a header but no rows.")
    if errors:
        raise ValidationError({"rows": errors})
    with transaction.atomic():
        for obj in rows:
            obj.full_clean()
        ImportedUsage.objects.bulk_create(rows)
    logger.info("Imported %s usage rows from %s by %s", len(rows), source_name or "CSV", acting_user)
    return len(rows)


def _span(start: datetime, end: datetime) -> str:
    return f"{start:%Y-%m-%dT%H:%MZ}..{end:%Y-%m-%dT%H:%MZ}"


def _usage_overlaps(rows: list[ImportedUsage]) -> list[str]:
    """One error per row that overlaps another of the file or an earlier import for the same team, request and
    resource (one allocation billed twice), naming both lines; rows that only touch (end == next start) are fine."""
    if not rows:
        return []
    by_key: dict[tuple[int, str, str], list[tuple[datetime, datetime, str, int]]] = {}
    for obj in rows:
        key = (obj.team_id, obj.request_label, obj.resource_name)
        by_key.setdefault(key, []).append((obj.start, obj.end, "", obj.line_number))
    earlier = ImportedUsage.objects.filter(
        team_id__in={key[0] for key in by_key},
        request_label__in={key[1] for key in by_key},
        start__lt=max(obj.end for obj in rows),
        end__gt=min(obj.start for obj in rows),
    ).values_list("team_id", "request_label", "resource_name", "start", "end", "source_file", "line_number")
    for team_id, label, resource, start, end, source, line in earlier.iterator():
        if (team_id, label, resource) in by_key:
            by_key[(team_id, label, resource)].append((start, end, source or "an earlier file", line))
    errors: list[tuple[int, str]] = []
    for intervals in by_key.values():
        # Sorted by start, a row overlaps the one (of those before it) that ends last, if that ends after it starts.
        intervals.sort(key=lambda item: (item[0], item[2] == "", item[3]))
        latest: tuple[datetime, datetime, str, int] | None = None
        for interval in intervals:
            if latest is not None and interval[0] < latest[1]:
                # The file's row is named first; "" marks a row of this file, else the earlier import's file.
                mine, other = (interval, latest) if interval[2] == "" else (latest, interval)
                if mine[2] == "":
                    where = f"line {other[3]} of {other[2]}, already imported," if other[2] else f"line {other[3]}"
                    errors.append(
                        (
                            mine[3],
                            f"line {mine[3]}: request: {_span(mine[0], mine[1])} overlaps {where} "
                            f"({_span(other[0], other[1])}) for the same team, request and resource_name; "
                            "it would be billed twice.",
                        )
                    )
            if latest is None or interval[1] > latest[1]:
                latest = interval
    return [message for _, message in sorted(errors)]


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
        except Exception as exc:  # isolate per team (DESIGN.md "Tasks"): the others still close
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
    "CloseResult",
    "monthly_reports_close",
    "previous_month",
    "price_book_load",
    "usage_import",
]
