"""Utilization alerts grouped by GPU and rule, with their acknowledgement or mute in one scope (a team, or the fleet).

The grouping is pure (``gpucore.alerts.group_alerts``); this module reads the acknowledgements
(``billing.models.AlertAcknowledgement``, written by ``billing.utilization.services``).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from django.utils import timezone

from allocations.models import Team
from billing.models import AlertAcknowledgement
from gpucore import alerts as alert_rules


def alert_group_rows(
    *, alerts: list[alert_rules.Alert], team: Team | None, now: datetime | None = None
) -> list[dict[str, Any]]:
    """Alerts grouped by GPU and rule (``gpucore.alerts.group_alerts``) with their acknowledgement in this scope
    (``team``, or None for the fleet): those needing action first. One query for every group's state."""
    groups = alert_rules.group_alerts(alerts)
    if not groups:
        return []
    now = now or timezone.now()
    # team=None is "IS NULL": the fleet's own acknowledgements.
    found = AlertAcknowledgement.objects.filter(
        team=team, device__in=sorted({g.device for g in groups}), kind__in=sorted({g.kind.value for g in groups})
    ).values("cluster__name", "device", "kind", "acknowledged_through", "acknowledged_by__username", "muted_until")
    acks = {(row["cluster__name"], row["device"], row["kind"]): row for row in found}
    rows = []
    for group in groups:
        ack = acks.get((group.cluster, group.device, group.kind.value)) or {}
        through = ack.get("acknowledged_through")
        muted_until = ack.get("muted_until")
        acknowledged = through is not None and through >= group.last_seen
        muted = muted_until is not None and muted_until > now
        rows.append(
            {
                "group": group,
                "acknowledged": acknowledged,
                "acknowledged_by": ack.get("acknowledged_by__username") if acknowledged else None,
                "muted_until": muted_until if muted else None,
                "needs_action": not acknowledged and not muted,
                "scope": team.slug if team else "",
            }
        )
    rows.sort(key=lambda row: not row["needs_action"])  # stable: the groups' severity and recency order stays
    return rows
