"""Reservations: a team holds units of one node pool's resource for a time window, once an approver agrees."""

from __future__ import annotations

from datetime import datetime

from django.conf import settings
from django.core.validators import MinValueValidator
from django.db import models
from django.db.models import F, Q

from allocations.models.clusters import Cluster, NodePool
from allocations.models.teams import Team
from allocations.models.validators import resource_name_validator


class ReservationStatus(models.TextChoices):
    PENDING = "pending", "Pending"
    APPROVED = "approved", "Approved"
    DECLINED = "declined", "Declined"
    CANCELLED = "cancelled", "Cancelled"


class Reservation(models.Model):
    """``quantity`` units of ``resource_name`` on a node pool held for a team from ``start`` to ``end``: approved,
    other teams' requests that would overlap it do not get them, and the team's own requests in the window draw on
    them (its nominal quota rises to the reservation where it is smaller)."""

    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="reservations")
    node_pool = models.ForeignKey(NodePool, on_delete=models.CASCADE, related_name="reservations")
    resource_name = models.CharField(max_length=63, validators=[resource_name_validator])
    quantity = models.PositiveIntegerField(validators=[MinValueValidator(1)])
    start = models.DateTimeField()
    end = models.DateTimeField()
    reason = models.TextField(blank=True)
    status = models.CharField(max_length=12, choices=ReservationStatus.choices, default=ReservationStatus.PENDING)
    requested_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+")
    decided_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, null=True, blank=True, related_name="+"
    )
    decided_at = models.DateTimeField(null=True, blank=True)
    decision_comment = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    # Whether the cluster's queues carry the window's quota now (Kueue clusters; the reconcile task keeps it true).
    quota_applied = models.BooleanField(default=False)

    class Meta:
        ordering = ["start", "id"]
        indexes = [models.Index(fields=["node_pool", "status", "start", "end"], name="reservation_pool_window")]
        constraints = [
            models.CheckConstraint(condition=Q(end__gt=F("start")), name="reservation_ends_after_start"),
            models.CheckConstraint(condition=Q(quantity__gte=1), name="reservation_quantity_positive"),
        ]

    def __str__(self) -> str:
        return f"{self.team}: {self.quantity} {self.resource_name} on {self.node_pool}, {self.start:%Y-%m-%d %H:%M}"

    @property
    def cluster(self) -> Cluster:
        return self.node_pool.cluster

    def covers(self, moment: datetime) -> bool:
        """Whether ``moment`` lies inside the window."""
        return self.start <= moment < self.end
