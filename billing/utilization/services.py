"""Writes on utilization alerts: acknowledge a GPU's alerts of one rule, or mute them for a while (audited).

A team's members act on their team's view of an alert (``team`` given); platform approvers on the fleet view
(``team`` None) and, like for every team page, on any team's. Refusals are ``PermissionDenied`` with the reason, bad
input a ``ValidationError`` naming the field.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from django.core.exceptions import PermissionDenied, ValidationError
from django.db import transaction
from django.utils import timezone

from allocations.models import Cluster, Team
from allocations.selectors import User, teams_of, user_is_approver
from audit.services import audit_record, audit_snapshot
from billing.models import AlertAcknowledgement
from gpucore.alerts import AlertKind

MAX_MUTE_HOURS = 24 * 30


def alert_action_refusal(*, user: User, team: Team | None) -> str | None:
    """Why ``user`` may not acknowledge or mute alerts in this scope (None: they may)."""
    if user_is_approver(user):
        return None
    if team is None:
        return "Only platform approvers can acknowledge or mute fleet alerts."
    if not teams_of(user).filter(pk=team.pk).exists():
        return "You can only acknowledge or mute alerts of your own teams."
    return None


def _locked_ack(*, team: Team | None, cluster: Cluster, device: str, kind: str) -> tuple[AlertAcknowledgement, bool]:
    return AlertAcknowledgement.objects.select_for_update().get_or_create(
        team=team, cluster=cluster, device=device, kind=kind
    )


def alert_acknowledgement_update(
    *,
    acting_user: User,
    team: Team | None,
    cluster: Cluster,
    device: str,
    kind: str,
    action: str,
    through: datetime | None = None,
    mute_hours: int | None = None,
    now: datetime | None = None,
) -> AlertAcknowledgement:
    """Acknowledge (through ``through``, the group's last seen), mute for ``mute_hours``, or unmute, and audit it."""
    refusal = alert_action_refusal(user=acting_user, team=team)
    if refusal:
        raise PermissionDenied(refusal)
    if kind not in {k.value for k in AlertKind}:
        raise ValidationError({"kind": f"Unknown alert rule {kind!r}."})
    if not device or len(device) > 100:
        raise ValidationError({"device": "Name the GPU (its UUID)."})
    now = now or timezone.now()
    with transaction.atomic():
        ack, created = _locked_ack(team=team, cluster=cluster, device=device, kind=kind)
        before = None if created else audit_snapshot(ack)
        if action == "acknowledge":
            if through is None:
                raise ValidationError({"through": "Say up to when the alerts were seen."})
            ack.acknowledged_through = max(through, ack.acknowledged_through or through)
            ack.acknowledged_by = acting_user
        elif action == "mute":
            if mute_hours is None or not 1 <= mute_hours <= MAX_MUTE_HOURS:
                raise ValidationError({"mute_hours": f"Mute for 1 to {MAX_MUTE_HOURS} hours."})
            ack.muted_until = now + timedelta(hours=mute_hours)
            ack.muted_by = acting_user
        elif action == "unmute":
            ack.muted_until = None
            ack.muted_by = None
        else:
            raise ValidationError({"action": "Choose acknowledge, mute or unmute."})
        ack.full_clean()
        ack.save()
        audit_record(actor=acting_user, obj=ack, before=before, comment=f"alert {action}")
    return ack
