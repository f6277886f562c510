"""Models of budgets and alert handling: a team's money budget, the threshold notices sent, and the
acknowledgements and mutes of utilization alerts. Defined here, exported by ``billing.models``."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.validators import MinValueValidator
from django.db import models

from allocations.models import Cluster, Team

_NON_NEGATIVE = [MinValueValidator(Decimal("0"))]


# --- Budgets in money, and the threshold notices sent -----------------------------------------------------------


def validate_thresholds_pct(value: Any) -> None:
    """Thresholds are a non-empty list of whole percentages from 1 to 1000 (e.g. [50, 80, 100])."""
    if not isinstance(value, list) or not value:
        raise ValidationError("Give the thresholds as a list of percentages, e.g. [50, 80, 100].")
    for pct in value:
        if isinstance(pct, bool) or not isinstance(pct, int) or not 1 <= pct <= 1000:
            raise ValidationError(f"{pct!r} is not a whole percentage from 1 to 1000.")
    if len(set(value)) != len(value):
        raise ValidationError("Each threshold once.")


def default_thresholds_pct() -> list[int]:
    return [50, 80, 100]


class TeamBudget(models.Model):
    """A team's spending budget per calendar month, in the portal's currency, and who hears when it is crossed.

    Each threshold (a percentage of the amount) notifies the team's leads by email and, with a chat URL, Slack or
    Teams through apprise, once per month (``BudgetNotice``).
    """

    team = models.OneToOneField(Team, on_delete=models.CASCADE, related_name="budget")
    monthly_amount = models.DecimalField(
        max_digits=14, decimal_places=2, validators=_NON_NEGATIVE, help_text="Spend allowed per calendar month."
    )
    currency = models.CharField(max_length=3, blank=True, editable=False, help_text="PORTAL_CURRENCY when saved.")
    thresholds_pct = models.JSONField(
        default=default_thresholds_pct,
        validators=[validate_thresholds_pct],
        help_text="Percentages of the amount that notify, each once a month, e.g. [50, 80, 100].",
    )
    chat_webhook_url = models.CharField(
        max_length=500,
        blank=True,
        help_text="An apprise URL: slack://..., msteams://..., workflows://... (blank: email only).",
    )
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["team__name"]

    def __str__(self) -> str:
        return f"{self.team_id}: {self.monthly_amount} {self.currency}/month"

    def save(self, *args: Any, **kwargs: Any) -> None:
        # The amount is in the currency every other amount is in; a default in the field would freeze it in a migration.
        self.currency = self.currency or settings.PORTAL_CURRENCY
        super().save(*args, **kwargs)


class BudgetNotice(models.Model):
    """One threshold of one team's budget crossed in one month: made once, then delivered by email and chat.

    The unique key makes the check idempotent: a retried or concurrent run finds the row and only finishes what was
    not delivered (``emailed_at``, ``chat_sent_at``).
    """

    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="budget_notices")
    month = models.DateField(help_text="First day of the month (UTC).")
    threshold_pct = models.PositiveSmallIntegerField()
    spent = models.DecimalField(max_digits=14, decimal_places=2)
    budget = models.DecimalField(max_digits=14, decimal_places=2)
    projected = models.DecimalField(max_digits=14, decimal_places=2)
    currency = models.CharField(max_length=3)
    crossed_at = models.DateTimeField()
    emailed_at = models.DateTimeField(null=True, blank=True)
    chat_sent_at = models.DateTimeField(null=True, blank=True)
    last_error = models.TextField(blank=True)
    expired_at = models.DateTimeField(
        null=True,
        blank=True,
        help_text="Given up undelivered: too long after its month closed, or its team's budget was removed "
        "(last_error says why).",
    )

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["team", "month", "threshold_pct"], name="unique_budget_notice_per_month")
        ]
        ordering = ["-month", "team_id", "threshold_pct"]

    def __str__(self) -> str:
        return f"{self.team_id} {self.month:%Y-%m} {self.threshold_pct} %"


class AlertAcknowledgement(models.Model):
    """Someone has seen a GPU's alerts of one rule (through ``acknowledged_through``) or muted them for a while.

    Scoped like the pages that show alerts: ``team`` set for a team's view (its members act on it), null for the
    fleet view (platform approvers). A run after ``acknowledged_through`` needs action again.
    """

    team = models.ForeignKey(Team, on_delete=models.CASCADE, null=True, blank=True, related_name="+")
    cluster = models.ForeignKey(Cluster, on_delete=models.CASCADE, related_name="+")
    device = models.CharField(max_length=100, help_text="GPU UUID, or UUID/GPU_I_ID for a MIG instance.")
    kind = models.CharField(max_length=32, help_text="The rule: temperature, memory_pressure or idle.")
    acknowledged_through = models.DateTimeField(null=True, blank=True)
    acknowledged_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    muted_until = models.DateTimeField(null=True, blank=True)
    muted_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [
            # Two conditional constraints: a plain one would let several fleet rows through (NULLs are distinct).
            models.UniqueConstraint(
                fields=["team", "cluster", "device", "kind"],
                condition=models.Q(team__isnull=False),
                name="unique_alert_ack_per_team",
            ),
            models.UniqueConstraint(
                fields=["cluster", "device", "kind"],
                condition=models.Q(team__isnull=True),
                name="unique_alert_ack_fleet",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.team_id or 'fleet'} {self.cluster_id} {self.device} {self.kind}"
