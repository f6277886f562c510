"""How far back the hourly rows (rollups, GPU health hours) are kept. Defined here, exported by ``billing.models``."""

from __future__ import annotations

from django.db import models


class HourlyRetention(models.Model):
    """One row: the first day whose hourly rows are kept. Written by the retention task when it drops older months.

    The daily and monthly totals of days before it are kept forever and are never recomputed (there is nothing
    left to recompute them from): ``refresh_usage_aggregates`` leaves them as they are.
    """

    kept_from = models.DateField(help_text="First day (UTC) whose hourly rows are kept; totals before it never change.")
    updated_at = models.DateTimeField(auto_now=True)

    def __str__(self) -> str:
        return f"Hourly rows kept from {self.kept_from:%Y-%m-%d}"
