"""Billing models: hourly GPU utilization rollups pulled from Prometheus, and what has been ingested per cluster.

Units: utilization in percent (0-100), GPU memory in MiB (as DCGM reports ``DCGM_FI_DEV_FB_USED``; reads convert
to GB as MiB / 1024, NVIDIA's "GB" in profile names such as ``1g.10gb``), energy in kWh. Every aggregate is a
``FloatField``: double precision in PostgreSQL, never ``real``. Hours are aware UTC datetimes on the hour.
"""

from __future__ import annotations

from django.db import models

from allocations.models import Cluster, GpuRequest, Team


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
    is_complete = models.BooleanField(default=True, help_text="False while the hour had not ended when it was read.")
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


class IngestStatus(models.TextChoices):
    COMPLETE = "complete", "Complete"
    NO_DATA = "no_data", "No DCGM series"
    FAILED = "failed", "Could not be read"


class UtilizationIngestHour(models.Model):
    """What happened when one cluster's hour was pulled: complete, empty, or unreadable (shown as incomplete)."""

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
