"""Each past day's chargeback, priced once and stored, so the month in progress is read as sums. Exported by
``billing.models``; written by ``billing.costs.day_charges``."""

from __future__ import annotations

from django.db import models

from allocations.models import GpuRequest, NodePool, Team


def _money() -> models.DecimalField:
    # Unrounded like the chargeback's lines (money is rounded to the cent only when shown).
    return models.DecimalField(max_digits=28, decimal_places=12)


class PricedDay(models.Model):
    """A UTC day whose charges are stored in ``DayCharge``; a day without one is priced live.

    Removed when something the day was priced from changes (``billing.costs.day_charges``), so a stored day is
    never stale: the next pricing run stores it again.
    """

    day = models.DateField(unique=True)
    # Set when pricing starts; ``complete`` only if no change removed the row meanwhile (then the run stores nothing).
    token = models.UUIDField()
    complete = models.BooleanField(default=False)
    priced_at = models.DateTimeField(auto_now=True)

    def __str__(self) -> str:
        return f"{self.day:%Y-%m-%d} priced"


class DayCharge(models.Model):
    """One allocation's charge (a request, or an imported usage row) for one UTC day, as the chargeback priced it."""

    day = models.DateField()
    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="+")
    request = models.ForeignKey(GpuRequest, on_delete=models.CASCADE, null=True, related_name="+")
    imported = models.ForeignKey("billing.ImportedUsage", on_delete=models.CASCADE, null=True, related_name="+")
    name = models.CharField(max_length=200)
    strategy = models.CharField(max_length=20)
    gpu_model = models.CharField(max_length=100)
    sla_tier = models.CharField(max_length=50, blank=True)
    amount = _money()
    dedicated_amount = _money()
    base_amount = _money()
    allocated_gpu_hours = _money()

    class Meta:
        # Read by days, and a request's days looked up (the group its measured use belongs to).
        indexes = [models.Index(fields=["day", "team"]), models.Index(fields=["request", "day"])]

    def __str__(self) -> str:
        return f"{self.day:%Y-%m-%d} {self.team_id} {self.name}"


class DayChargeGroup(models.Model):
    """A stored day's charges summed per team and what the cost dashboards group by: the pool its requests ran on,
    GPU model, strategy and SLA tier. A few rows per team and day however many requests ran, so a month's sums read
    a few hundred rows; written with the day's ``DayCharge`` rows and replaced with them."""

    day = models.DateField()
    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="+")
    # The pool the requests ran on when the day was priced (moving a request reprices its days); none for imports.
    node_pool = models.ForeignKey(NodePool, on_delete=models.CASCADE, null=True, related_name="+")
    imported = models.BooleanField(default=False)
    strategy = models.CharField(max_length=20)
    gpu_model = models.CharField(max_length=100)
    sla_tier = models.CharField(max_length=50, blank=True)
    amount = _money()
    dedicated_amount = _money()
    base_amount = _money()
    allocated_gpu_hours = _money()

    class Meta:
        indexes = [models.Index(fields=["day", "team"])]

    def __str__(self) -> str:
        return f"{self.day:%Y-%m-%d} {self.team_id} {self.gpu_model} {self.strategy}"


class MonthRequestCharge(models.Model):
    """A month's run of stored days (from its first day up to ``through``) summed per team and request (imports per
    row), with what each was charged as: one row per request however many days, for the charts that rank or group
    requests. Summed again by the pricing task when the run grows; removed with the days it sums when they are
    forgotten, so a view whose run of stored days has no sums reads the days instead."""

    month = models.DateField()
    through = models.DateField(help_text="The day after the last day summed.")
    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="+")
    request = models.ForeignKey(GpuRequest, on_delete=models.CASCADE, null=True, related_name="+")
    imported = models.ForeignKey("billing.ImportedUsage", on_delete=models.CASCADE, null=True, related_name="+")
    node_pool = models.ForeignKey(NodePool, on_delete=models.CASCADE, null=True, related_name="+")
    name = models.CharField(max_length=200)
    strategy = models.CharField(max_length=20)
    gpu_model = models.CharField(max_length=100)
    sla_tier = models.CharField(max_length=50, blank=True)
    amount = _money()
    dedicated_amount = _money()
    allocated_gpu_hours = _money()

    class Meta:
        # A run's sums are read whole, and looked up a request at a time (the group its measured use belongs to).
        indexes = [models.Index(fields=["month", "through", "request"])]

    def __str__(self) -> str:
        return f"{self.month:%Y-%m} to {self.through:%m-%d} {self.team_id} {self.name}"
