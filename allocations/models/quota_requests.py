"""Quota increase requests: a team asks for a larger nominal quota on a pool, cluster or everywhere; an approver
decides."""

from __future__ import annotations

from django.conf import settings
from django.core.validators import MinValueValidator
from django.db import models

from allocations.models.teams import Quota, Team


class QuotaRequestStatus(models.TextChoices):
    PENDING = "pending", "Pending"
    GRANTED = "granted", "Granted"
    DECLINED = "declined", "Declined"
    WITHDRAWN = "withdrawn", "Withdrawn"


class QuotaIncreaseRequest(models.Model):
    """A team's ask to raise one of its quotas to ``requested_limit`` units, with the reason; granted, the quota's
    nominal limit becomes that number."""

    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="quota_increase_requests")
    quota = models.ForeignKey(Quota, on_delete=models.CASCADE, related_name="increase_requests")
    limit_when_asked = models.PositiveIntegerField(help_text="The nominal quota when the request was made.")
    requested_limit = models.PositiveIntegerField(validators=[MinValueValidator(1)])
    reason = models.TextField()
    status = models.CharField(max_length=12, choices=QuotaRequestStatus.choices, default=QuotaRequestStatus.PENDING)
    requested_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+")
    decided_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, null=True, blank=True, related_name="+"
    )
    decided_at = models.DateTimeField(null=True, blank=True)
    decision_comment = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        constraints = [
            models.UniqueConstraint(
                fields=["quota"],
                condition=models.Q(status="pending"),
                name="one_pending_increase_per_quota",
            )
        ]

    def __str__(self) -> str:
        return f"{self.team}: {self.quota.resource_name} {self.limit_when_asked} -> {self.requested_limit}"

    @property
    def units_added(self) -> int:
        return max(self.requested_limit - self.limit_when_asked, 0)
