"""Alert groups carry the acknowledgement and mute of their own scope (a team's, or the fleet's) and of their own
cluster, GPU and rule, all read in one query (billing.utilization.alert_groups.alert_group_rows)."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from billing.models import AlertAcknowledgement
from billing.utilization.alert_groups import alert_group_rows
from gpucore.alerts import Alert, AlertKind
from tests.factories import ClusterFactory, TeamFactory, UserFactory

pytestmark = pytest.mark.django_db


def _alert(cluster: str, device: str, kind: AlertKind, last_hour) -> Alert:
    return Alert(
        kind=kind, cluster=cluster, device=device, first_hour=last_hour, last_hour=last_hour, hours=1, worst=90.0
    )


def test_each_group_shows_the_acknowledgement_of_its_scope_gpu_and_rule(django_assert_num_queries) -> None:
    clusters, teams, user = [ClusterFactory(), ClusterFactory()], [TeamFactory(), TeamFactory()], UserFactory()
    now = timezone.now()
    hour = now - timedelta(hours=2)
    seen_until = hour + timedelta(hours=1)
    alerts = [
        _alert(cluster.name, device, kind, hour)
        for cluster in clusters
        for device in ["GPU-0", "GPU-'1"]
        for kind in [AlertKind.TEMPERATURE, AlertKind.IDLE]
    ]
    acknowledged_by = {}  # (scope, cluster, device, kind) -> who acknowledged it
    for n, (scope, alert) in enumerate((scope, alert) for scope in [None, *teams] for alert in alerts):
        if n % 3 == 0:
            continue  # not every group has a row
        by = UserFactory(username=f"ack-{n}") if n % 2 else user
        AlertAcknowledgement.objects.create(
            cluster=next(c for c in clusters if c.name == alert.cluster),
            team=scope,
            device=alert.device,
            kind=alert.kind.value,
            acknowledged_through=seen_until if n % 5 else hour,  # too early: the group needs action again
            acknowledged_by=by,
            muted_until=now + timedelta(hours=1) if n % 7 == 0 else None,
        )
        acknowledged_by[(scope, alert.cluster, alert.device, alert.kind.value)] = (by.username, n % 5 != 0, n % 7 == 0)

    for scope in [None, *teams]:
        with django_assert_num_queries(1):
            rows = alert_group_rows(alerts=alerts, team=scope, now=now)
        assert len(rows) == len(alerts)
        for row in rows:
            group = row["group"]
            found = acknowledged_by.get((scope, group.cluster, group.device, group.kind.value))
            username, current, muted = found or (None, False, False)
            assert row["acknowledged"] is current
            assert row["acknowledged_by"] == (username if current else None)
            assert (row["muted_until"] is not None) is muted
            assert row["needs_action"] is (not current and not muted)
            assert row["scope"] == (scope.slug if scope else "")
        # Groups needing action come first.
        assert [row["needs_action"] for row in rows] == sorted((row["needs_action"] for row in rows), reverse=True)
