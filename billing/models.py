"""Billing models: hourly GPU utilization rollups pulled from Prometheus, and what has been ingested per cluster.

Units: utilization in percent (0-100), GPU memory in MiB (as DCGM reports ``DCGM_FI_DEV_FB_USED``; reads convert
to GB as MiB / 1024, NVIDIA's "GB" in profile names such as ``1g.10gb``), energy in kWh. Every aggregate is a
``FloatField``: double precision in PostgreSQL, never ``real``. Hours are aware UTC datetimes on the hour.
"""

from __future__ import annotations

from datetime import datetime
from decimal import Decimal
from typing import Any

from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.validators import MinValueValidator
from django.db import models

from allocations.models import Cluster, GpuRequest, Team
from gpucore.pricing import price_book_starts


class UtilizationRollup(models.Model):
    """One device's (GPU or MIG instance) use by one pod, or by nobody, during one UTC hour on one cluster.

    Measured at one-minute points: ``sample_count`` is the number of minutes the device reported a utilization
    with this owner, so GPU-hours are ``sample_count / 60``. ``team`` null means "unallocated/other".
    """

    cluster = models.ForeignKey(Cluster, on_delete=models.CASCADE, related_name="utilization_rollups")
    hour = models.DateTimeField(help_text="Start of the UTC hour.")
    gpu_uuid = models.CharField(max_length=64)
    mig_instance = models.CharField(max_length=16, blank=True, help_text="DCGM GPU_I_ID; empty for a whole GPU.")
    # The workload as the series named it (empty when the device was idle); team and request are derived from them,
    # and survive as text when a team or request row is later deleted.
    namespace = models.CharField(max_length=63, blank=True)
    pod = models.CharField(max_length=253, blank=True)
    team = models.ForeignKey(Team, on_delete=models.SET_NULL, null=True, blank=True, related_name="utilization_rollups")
    request = models.ForeignKey(
        GpuRequest, on_delete=models.SET_NULL, null=True, blank=True, related_name="utilization_rollups"
    )
    gpu_model_name = models.CharField(max_length=100, blank=True, help_text="DCGM modelName label.")
    mig_profile = models.CharField(max_length=32, blank=True)
    hostname = models.CharField(max_length=253, blank=True)
    gpu_index = models.PositiveSmallIntegerField(null=True, blank=True)

    sample_count = models.PositiveSmallIntegerField(default=0, help_text="One-minute points with a utilization.")
    avg_utilization_pct = models.FloatField(null=True, blank=True)
    peak_utilization_pct = models.FloatField(null=True, blank=True)
    avg_memory_used_mib = models.FloatField(null=True, blank=True)
    peak_memory_used_mib = models.FloatField(null=True, blank=True)
    energy_kwh = models.FloatField(
        null=True, blank=True, help_text="From DCGM_FI_DEV_POWER_USAGE; null for MIG instances (no per-instance power)."
    )
    # Alert inputs (guide Part 3.3): the hottest minute, and minutes at which framebuffer use had been above 85 %
    # for two consecutive one-minute points. Null when not read (rows pulled before they existed, MIG temperature).
    max_temperature_c = models.FloatField(null=True, blank=True, help_text="Hottest DCGM_FI_DEV_GPU_TEMP minute.")
    memory_pressure_minutes = models.PositiveSmallIntegerField(
        null=True, blank=True, help_text="Minutes with FB_USED / (FB_USED + FB_FREE) > 0.85 at it and the one before."
    )
    is_complete = models.BooleanField(
        default=True,
        help_text="False while the hour had not ended when read, or when the device missed a minute of scrapes.",
    )
    pulled_at = models.DateTimeField()

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["cluster", "hour", "gpu_uuid", "mig_instance", "namespace", "pod"],
                name="unique_rollup_device_owner_hour",
            )
        ]
        indexes = [
            models.Index(fields=["team", "hour"]),
            models.Index(fields=["request", "hour"]),
            models.Index(fields=["cluster", "hour"]),
        ]
        ordering = ["hour", "gpu_uuid", "mig_instance", "namespace", "pod"]

    def __str__(self) -> str:
        device = f"{self.gpu_uuid}/{self.mig_instance}" if self.mig_instance else self.gpu_uuid
        return f"{self.cluster_id} {self.hour:%Y-%m-%d %H:00} {device} {self.namespace}/{self.pod}"


class UsageTotals(models.Model):
    """The rollups of one cluster, summed over a day or a month per team, request, GPU model and MIG-or-not.

    Kept by ``billing.metering.aggregates.refresh_usage_aggregates`` after every write of rollups, so the dashboards
    and the chargeback read a few rows per request and month instead of one per device-hour. Team and request are
    plain ids without a database constraint: they are copied from the rollups, which keep them as they were read.
    """

    cluster = models.ForeignKey(Cluster, on_delete=models.CASCADE, related_name="+")
    team = models.ForeignKey(Team, on_delete=models.DO_NOTHING, db_constraint=False, null=True, related_name="+")
    request = models.ForeignKey(
        GpuRequest, on_delete=models.DO_NOTHING, db_constraint=False, null=True, related_name="+"
    )
    gpu_model_name = models.CharField(max_length=100, blank=True)
    is_mig = models.BooleanField(default=False)
    sample_count = models.BigIntegerField(default=0, help_text="Minutes measured (GPU-hours x 60).")
    util_weighted = models.FloatField(null=True, help_text="Sum of utilization % x minutes.")
    util_samples = models.BigIntegerField(default=0, help_text="Minutes that measured a utilization.")
    energy_kwh = models.FloatField(null=True)
    peak_memory_mib = models.FloatField(null=True, help_text="The largest hourly peak of GPU memory used (MiB).")
    last_hour = models.DateTimeField(help_text="The latest rollup hour summed.")

    class Meta:
        abstract = True


class DailyUsage(UsageTotals):
    day = models.DateField(help_text="UTC day.")

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["cluster", "day", "team", "request", "gpu_model_name", "is_mig"],
                name="unique_daily_usage",
                nulls_distinct=False,
            )
        ]
        indexes = [models.Index(fields=["day", "team"])]
        verbose_name_plural = "daily usage"

    def __str__(self) -> str:
        return f"{self.cluster_id} {self.day:%Y-%m-%d} team {self.team_id} request {self.request_id}"


class MonthlyUsage(UsageTotals):
    month = models.DateField(help_text="First day of the UTC month.")

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["cluster", "month", "team", "request", "gpu_model_name", "is_mig"],
                name="unique_monthly_usage",
                nulls_distinct=False,
            )
        ]
        indexes = [models.Index(fields=["month", "team"])]
        verbose_name_plural = "monthly usage"

    def __str__(self) -> str:
        return f"{self.cluster_id} {self.month:%Y-%m} team {self.team_id} request {self.request_id}"


class IngestStatus(models.TextChoices):
    COMPLETE = "complete", "Complete"
    # Read, but some device was not scraped at every minute (Prometheus or an exporter down): incomplete.
    PARTIAL = "partial", "Scrapes missing"
    NO_DATA = "no_data", "No DCGM series"
    FAILED = "failed", "Could not be read"


class UtilizationIngestHour(models.Model):
    """What happened when one cluster's hour was pulled: complete, partly scraped, empty, or unreadable (the last
    three shown as incomplete)."""

    cluster = models.ForeignKey(Cluster, on_delete=models.CASCADE, related_name="utilization_ingest_hours")
    hour = models.DateTimeField(help_text="Start of the UTC hour.")
    status = models.CharField(max_length=10, choices=IngestStatus.choices)
    rows = models.PositiveIntegerField(default=0)
    attempts = models.PositiveIntegerField(default=0)
    error = models.TextField(blank=True)
    updated_at = models.DateTimeField()

    class Meta:
        constraints = [models.UniqueConstraint(fields=["cluster", "hour"], name="unique_ingest_cluster_hour")]
        ordering = ["cluster_id", "hour"]
        verbose_name = "utilization ingest hour"

    def __str__(self) -> str:
        return f"{self.cluster_id} {self.hour:%Y-%m-%d %H:00} {self.status}"


class UtilizationWatermark(models.Model):
    """The last hour of a cluster through which every hour has been read (complete or empty), with no gap."""

    cluster = models.OneToOneField(Cluster, on_delete=models.CASCADE, related_name="utilization_watermark")
    last_complete_hour = models.DateTimeField(help_text="Start of the last UTC hour ingested without a gap before it.")
    updated_at = models.DateTimeField()

    def __str__(self) -> str:
        return f"{self.cluster_id} through {self.last_complete_hour:%Y-%m-%d %H:00}"


class GpuHealthHour(models.Model):
    """One GPU's error signals during one UTC hour on one cluster: the XID codes DCGM reported and its driver.

    Read from ``DCGM_FI_DEV_XID_ERRORS`` (a gauge holding the last XID code, 0 for none) at one-minute points; the
    driver version is the exporter's ``DCGM_FI_DRIVER_VERSION`` label. One row per GPU that reported in the hour,
    also without an XID, so "no XID" is evidence and a driver mismatch between nodes can be seen.
    """

    cluster = models.ForeignKey(Cluster, on_delete=models.CASCADE, related_name="gpu_health_hours")
    hour = models.DateTimeField(help_text="Start of the UTC hour.")
    gpu_uuid = models.CharField(max_length=64)
    hostname = models.CharField(max_length=253, blank=True)
    gpu_index = models.PositiveSmallIntegerField(null=True, blank=True)
    gpu_model_name = models.CharField(max_length=100, blank=True)
    driver_version = models.CharField(max_length=32, blank=True)
    reported_minutes = models.PositiveSmallIntegerField(default=0, help_text="Minutes the GPU reported the field.")
    xid_minutes = models.PositiveSmallIntegerField(default=0, help_text="Minutes showing a non-zero XID code.")
    xid_events = models.PositiveSmallIntegerField(default=0, help_text="Minutes whose code differed from the last.")
    # A JSON list, not a PostgreSQL array: the model works on every database Django supports.
    xid_codes = models.JSONField(default=list, blank=True, help_text="Codes (integers), first seen first.")
    last_xid = models.PositiveIntegerField(null=True, blank=True, help_text="The last non-zero code of the hour.")
    pulled_at = models.DateTimeField()

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["cluster", "hour", "gpu_uuid"], name="unique_gpu_health_hour"),
        ]
        indexes = [models.Index(fields=["cluster", "hour"])]
        ordering = ["hour", "gpu_uuid"]

    def __str__(self) -> str:
        return f"{self.cluster_id} {self.hour:%Y-%m-%d %H:00} {self.gpu_uuid} xid={self.last_xid or 0}"


# --- Cost: price books, imported usage and monthly chargeback reports ------------------------------------------

MONEY = {"max_digits": 20, "decimal_places": 10}  # unrounded amounts; rounded half-up to the cent at presentation
_NON_NEGATIVE = [MinValueValidator(Decimal("0"))]


class PriceBook(models.Model):
    """One version of the price book: GPU prices and SLA multipliers in effect from a date (00:00 UTC) onwards."""

    version = models.PositiveIntegerField(unique=True)
    currency = models.CharField(max_length=3)
    effective_from = models.DateField(unique=True, help_text="Prices apply to hours from 00:00 UTC of this date.")
    source = models.TextField(blank=True, help_text="The YAML the price book was loaded from.")
    notes = models.TextField(blank=True)
    loaded_at = models.DateTimeField()
    loaded_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )

    class Meta:
        ordering = ["-effective_from"]

    def __str__(self) -> str:
        return f"Price book v{self.version} from {self.effective_from:%Y-%m-%d} ({self.currency})"

    @property
    def starts(self) -> datetime:
        """When its prices start to apply (``gpucore.pricing.book_in_effect`` picks by it)."""
        return price_book_starts(self.effective_from)


class GpuPrice(models.Model):
    """One GPU model's price in a price book: a list price per GPU-hour, or TCO inputs and the rate they give."""

    price_book = models.ForeignKey(PriceBook, on_delete=models.CASCADE, related_name="gpu_prices")
    gpu_model = models.CharField(max_length=40, help_text="Catalog name, e.g. H100-80GB.")
    hourly_rate = models.DecimalField(**MONEY, validators=_NON_NEGATIVE, help_text="Price of one whole GPU-hour.")
    list_hourly = models.DecimalField(**MONEY, null=True, blank=True, validators=_NON_NEGATIVE)
    purchase_price = models.DecimalField(max_digits=14, decimal_places=2, null=True, blank=True)
    amortization_months = models.PositiveIntegerField(null=True, blank=True)
    tdp_watts = models.DecimalField(max_digits=8, decimal_places=2, null=True, blank=True)
    pue = models.DecimalField(max_digits=6, decimal_places=3, null=True, blank=True)
    kwh_price = models.DecimalField(max_digits=10, decimal_places=5, null=True, blank=True)
    ops_overhead_pct_per_year = models.DecimalField(max_digits=6, decimal_places=2, null=True, blank=True)
    opportunity_cost_per_hour = models.DecimalField(max_digits=12, decimal_places=6, null=True, blank=True)
    power_scale = models.DecimalField(max_digits=6, decimal_places=4, null=True, blank=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["price_book", "gpu_model"], name="unique_price_per_book_model")]
        ordering = ["price_book", "gpu_model"]
        verbose_name = "GPU price"

    def __str__(self) -> str:
        return f"{self.gpu_model}: {self.hourly_rate}/h (v{self.price_book.version})"


class SlaMultiplier(models.Model):
    """An SLA tier's price multiplier in a price book (overrides the tier's own multiplier while in effect)."""

    price_book = models.ForeignKey(PriceBook, on_delete=models.CASCADE, related_name="sla_multipliers")
    tier_slug = models.SlugField(max_length=40)
    multiplier = models.DecimalField(max_digits=6, decimal_places=3, validators=_NON_NEGATIVE)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["price_book", "tier_slug"], name="unique_multiplier_per_tier")]
        ordering = ["price_book", "tier_slug"]
        verbose_name = "SLA multiplier"

    def __str__(self) -> str:
        return f"{self.tier_slug} x{self.multiplier}"


class ImportedUsage(models.Model):
    """A historical allocation loaded from CSV (``import_usage``): charged like a request, without SLA multiplier."""

    team = models.ForeignKey(Team, on_delete=models.PROTECT, related_name="imported_usage")
    request_label = models.CharField(max_length=100, help_text="The request's name or id in the source system.")
    gpu_model = models.CharField(max_length=40)
    strategy = models.CharField(max_length=20)
    resource_name = models.CharField(max_length=63)
    quantity = models.PositiveIntegerField()
    time_slice_replicas = models.PositiveSmallIntegerField(null=True, blank=True)
    start = models.DateTimeField()
    end = models.DateTimeField()
    avg_utilization_pct = models.FloatField(null=True, blank=True)
    source_file = models.CharField(max_length=255, blank=True)
    line_number = models.PositiveIntegerField(default=0)
    imported_at = models.DateTimeField()

    class Meta:
        indexes = [models.Index(fields=["team", "start"]), models.Index(fields=["start", "end"])]
        ordering = ["start", "id"]
        verbose_name = "imported usage"
        verbose_name_plural = "imported usage"

    def __str__(self) -> str:
        return f"{self.team_id} {self.request_label} {self.start:%Y-%m-%d}..{self.end:%Y-%m-%d}"


class ReportStatus(models.TextChoices):
    OPEN = "open", "Open (estimate)"
    CLOSED = "closed", "Closed"


class ClosedReportError(ValidationError):
    """Raised on any attempt to change or delete a closed report or its lines."""


class MonthlyReport(models.Model):
    """A team's chargeback for one calendar month; once closed, it and its lines never change."""

    team = models.ForeignKey(Team, on_delete=models.PROTECT, related_name="monthly_reports")
    month = models.DateField(help_text="First day of the month (UTC).")
    status = models.CharField(max_length=10, choices=ReportStatus.choices, default=ReportStatus.OPEN)
    currency = models.CharField(max_length=3)
    amount = models.DecimalField(**MONEY, default=Decimal(0), help_text="Sum of the lines.")
    idle_share = models.DecimalField(**MONEY, default=Decimal(0), help_text="The team's weighted share of idle cost.")
    total = models.DecimalField(**MONEY, default=Decimal(0))
    dedicated_baseline = models.DecimalField(**MONEY, default=Decimal(0))
    saving_vs_dedicated = models.DecimalField(**MONEY, default=Decimal(0))
    allocated_gpu_hours = models.DecimalField(**MONEY, default=Decimal(0))
    measured_gpu_hours = models.FloatField(null=True, blank=True)
    avg_utilization_pct = models.FloatField(null=True, blank=True)
    energy_kwh = models.FloatField(null=True, blank=True)
    price_book_versions = models.JSONField(default=list, blank=True)
    warnings = models.JSONField(default=list, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    closed_at = models.DateTimeField(null=True, blank=True)
    emailed_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["team", "month"], name="unique_report_team_month")]
        indexes = [models.Index(fields=["month", "team"])]
        ordering = ["-month", "team__name"]
        permissions = [("view_all_costs", "Can view every team's costs, idle cost and reports")]

    def __str__(self) -> str:
        return f"{self.team} {self.month:%Y-%m} ({self.status})"

    def save(self, *args: Any, **kwargs: Any) -> None:
        if self._stored_status() == ReportStatus.CLOSED:
            raise ClosedReportError("A closed monthly report never changes.")
        super().save(*args, **kwargs)

    def delete(self, *args: Any, **kwargs: Any) -> tuple[int, dict[str, int]]:
        if self._stored_status() == ReportStatus.CLOSED:
            raise ClosedReportError("A closed monthly report cannot be deleted.")
        return super().delete(*args, **kwargs)

    def _stored_status(self) -> str | None:
        if self.pk is None:
            return None
        return MonthlyReport.objects.filter(pk=self.pk).values_list("status", flat=True).first()


class ReportLineQuerySet(models.QuerySet):
    """Bulk writes refuse to touch the lines of closed reports (save() and delete() are not called by them)."""

    def _touches_closed(self) -> bool:
        return self.filter(report__status=ReportStatus.CLOSED).exists()

    def update(self, **kwargs: Any) -> int:
        if self._touches_closed():
            raise ClosedReportError("The lines of a closed monthly report never change.")
        return super().update(**kwargs)

    def delete(self) -> tuple[int, dict[str, int]]:
        if self._touches_closed():
            raise ClosedReportError("The lines of a closed monthly report cannot be deleted.")
        return super().delete()

    def bulk_create(self, objs: Any, *args: Any, **kwargs: Any) -> list[Any]:
        objs = list(objs)
        report_ids = {obj.report_id for obj in objs}
        if MonthlyReport.objects.filter(pk__in=report_ids, status=ReportStatus.CLOSED).exists():
            raise ClosedReportError("A closed monthly report takes no new lines.")
        return super().bulk_create(objs, *args, **kwargs)


class MonthlyReportLine(models.Model):
    """One allocation's charge in a monthly report, for the hours one price book was in effect."""

    report = models.ForeignKey(MonthlyReport, on_delete=models.PROTECT, related_name="lines")
    # Plain ids, not foreign keys: a closed line must survive, unchanged, whatever happens to its source row.
    request_ref = models.PositiveIntegerField(null=True, blank=True, help_text="GpuRequest id.")
    imported_ref = models.PositiveIntegerField(null=True, blank=True, help_text="ImportedUsage id.")
    name = models.CharField(max_length=100)
    gpu_model = models.CharField(max_length=40)
    strategy = models.CharField(max_length=20)
    resource_name = models.CharField(max_length=63)
    quantity = models.PositiveIntegerField(help_text="Units held: quantity per replica x replicas.")
    sla_tier = models.CharField(max_length=40, blank=True)
    period_start = models.DateTimeField()
    period_end = models.DateTimeField()
    hours = models.DecimalField(**MONEY)
    unit_share = models.DecimalField(**MONEY)
    allocated_gpu_hours = models.DecimalField(**MONEY)
    gpu_rate = models.DecimalField(**MONEY)
    sla_multiplier = models.DecimalField(max_digits=6, decimal_places=3)
    rate = models.DecimalField(**MONEY, help_text="Per whole-GPU-equivalent hour, SLA multiplier included.")
    amount = models.DecimalField(**MONEY)
    dedicated_amount = models.DecimalField(**MONEY)
    rate_source = models.CharField(max_length=20)
    price_book_version = models.PositiveIntegerField(null=True, blank=True)
    avg_utilization_pct = models.FloatField(null=True, blank=True)
    energy_kwh = models.FloatField(null=True, blank=True)

    objects = ReportLineQuerySet.as_manager()

    class Meta:
        ordering = ["report", "request_ref", "imported_ref", "period_start"]
        # The dashboards look a request's closed charges up by it (the group its measured use belongs to).
        indexes = [models.Index(fields=["request_ref", "report"])]

    def __str__(self) -> str:
        return f"{self.report} {self.name} {self.amount}"

    def save(self, *args: Any, **kwargs: Any) -> None:
        if self._report_closed():
            raise ClosedReportError("The lines of a closed monthly report never change.")
        super().save(*args, **kwargs)

    def delete(self, *args: Any, **kwargs: Any) -> tuple[int, dict[str, int]]:
        if self._report_closed():
            raise ClosedReportError("The lines of a closed monthly report cannot be deleted.")
        return super().delete(*args, **kwargs)

    def _report_closed(self) -> bool:
        return MonthlyReport.objects.filter(pk=self.report_id, status=ReportStatus.CLOSED).exists()


class OrganisationMonthSummary(models.Model):
    """The organisation's chargeback for one closed month: capacity, allocated and idle cost, saving, by model."""

    month = models.DateField(unique=True, help_text="First day of the month (UTC).")
    currency = models.CharField(max_length=3)
    capacity_cost = models.DecimalField(**MONEY, default=Decimal(0))
    allocated_cost = models.DecimalField(**MONEY, default=Decimal(0))
    idle_cost = models.DecimalField(**MONEY, default=Decimal(0))
    idle_shared = models.BooleanField(default=False)
    total = models.DecimalField(**MONEY, default=Decimal(0), help_text="Allocated cost + idle cost.")
    saving_vs_dedicated = models.DecimalField(**MONEY, default=Decimal(0))
    by_model = models.JSONField(default=dict, blank=True, help_text="Per GPU model: capacity, allocated, idle.")
    closed_at = models.DateTimeField()

    class Meta:
        ordering = ["-month"]
        verbose_name = "organisation month summary"
        verbose_name_plural = "organisation month summaries"

    def __str__(self) -> str:
        return f"Organisation {self.month:%Y-%m}"

    def save(self, *args: Any, **kwargs: Any) -> None:
        if self.pk is not None and OrganisationMonthSummary.objects.filter(pk=self.pk).exists():
            raise ClosedReportError("A closed organisation summary never changes.")
        super().save(*args, **kwargs)

    def delete(self, *args: Any, **kwargs: Any) -> tuple[int, dict[str, int]]:
        raise ClosedReportError("A closed organisation summary cannot be deleted.")


# Budgets and alert handling live in their own module (this one stays readable); exported here for Django and callers.
from billing.budget_models import (  # noqa: E402, F401
    AlertAcknowledgement,
    BudgetNotice,
    TeamBudget,
    default_thresholds_pct,
    validate_thresholds_pct,
)
from billing.charge_models import DayCharge, DayChargeGroup, MonthRequestCharge, PricedDay  # noqa: E402, F401
from billing.forecast_models import StoredPoolForecast  # noqa: E402, F401
from billing.retention_models import HourlyRetention  # noqa: E402, F401
