"""Utilization alerts grouped by GPU and rule, with their acknowledgement or mute in one scope (a team, or the fleet).

The grouping is pure (``gpucore.alerts.group_alerts``); this module reads the acknowledgements
(``billing.models.AlertAcknowledgement``, written by ``billing.utilization.services``).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from django.db.models import QuerySet
from django.utils import timezone

from allocations.compiled_reads import ID_STAND_IN, OTHER_TEXTS_STAND_IN, TEXTS_STAND_IN, CompiledRead, text_in
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
    devices, kinds = sorted({g.device for g in groups}), sorted({g.kind.value for g in groups})
    if team is None:
        found = _FLEET_ACKNOWLEDGEMENTS.values(devices=devices, kinds=kinds)
    else:
        found = _TEAM_ACKNOWLEDGEMENTS.values(team=team.pk, devices=devices, kinds=kinds)
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


def _acknowledgements(*, team: int | None, devices: list[str], kinds: list[str]) -> QuerySet:
    """The acknowledgements and mutes of these GPUs and rules in one scope (a team's id, None for the fleet)."""
    # team_id=None is "IS NULL": the fleet's own acknowledgements.
    return AlertAcknowledgement.objects.filter(text_in("device", devices), text_in("kind", kinds), team_id=team).values(
        "cluster__name", "device", "kind", "acknowledged_through", "acknowledged_by__username", "muted_until"
    )


# Read on every view of the approver's home and the utilization pages, through SQL compiled once per process: the
# ORM built and compiled this read for more than PostgreSQL takes to run it (issue #15).
_LISTS = {"devices": TEXTS_STAND_IN, "kinds": OTHER_TEXTS_STAND_IN}
_FLEET_ACKNOWLEDGEMENTS = CompiledRead(
    AlertAcknowledgement,
    lambda devices, kinds: _acknowledgements(team=None, devices=devices, kinds=kinds),
    stand_ins=_LISTS,
)
_TEAM_ACKNOWLEDGEMENTS = CompiledRead(
    AlertAcknowledgement,
    lambda team, devices, kinds: _acknowledgements(team=team, devices=devices, kinds=kinds),
    stand_ins={"team": ID_STAND_IN, **_LISTS},
)
