"""The capacity forecast per pool resource, computed by a periodic task and read by the cost dashboards. Exported by
``billing.models``; written by ``billing.utilization.stored_forecast``."""

from __future__ import annotations

from django.db import models

from allocations.models import NodePool


class StoredPoolForecast(models.Model):
    """One pool resource's allocation and utilization forecasts (``gpucore.forecast.forecast_as_json``) as of an
    hour; the whole set is replaced at once, so every row of it has the same ``as_of``."""

    pool = models.ForeignKey(NodePool, on_delete=models.CASCADE, related_name="+")
    resource_name = models.CharField(max_length=63)
    position = models.PositiveIntegerField(help_text="Order on the page: the pools' order, then the resource's.")
    capacity = models.PositiveIntegerField()
    allocated_now = models.PositiveIntegerField()
    allocation = models.JSONField()
    utilization = models.JSONField()
    as_of = models.DateTimeField(help_text="The hour the forecasts run from (the end of their 7 days).")

    class Meta:
        ordering = ["position"]

    def __str__(self) -> str:
        return f"{self.pool_id} {self.resource_name} as of {self.as_of:%Y-%m-%d %H:%M}"
