"""The acknowledgements and mutes of alert groups, read through SQL compiled once per process
(billing.utilization.alert_groups), are the rows the ORM's filter finds, in the fleet's scope and in a team's."""

from __future__ import annotations

import itertools

import pytest
from django.utils import timezone

from billing.models import AlertAcknowledgement
from billing.utilization.alert_groups import _FLEET_ACKNOWLEDGEMENTS, _TEAM_ACKNOWLEDGEMENTS
from tests.factories import ClusterFactory, TeamFactory, UserFactory

pytestmark = pytest.mark.django_db

COLUMNS = ("cluster__name", "device", "kind", "acknowledged_through", "acknowledged_by__username", "muted_until")


def test_each_scope_reads_its_own_rows_of_the_devices_and_rules_asked(django_assert_num_queries) -> None:
    clusters, teams, user = [ClusterFactory(), ClusterFactory()], [TeamFactory(), TeamFactory()], UserFactory()
    now = timezone.now()
    devices, kinds = ["GPU-0", "GPU-1", "GPU-'2", "GPU-3"], ["temperature", "idle", "memory_pressure"]
    for n, (cluster, team, device, kind) in enumerate(itertools.product(clusters, [None, *teams], devices, kinds)):
        if n % 3:  # not every combination has a row
            AlertAcknowledgement.objects.create(
                cluster=cluster,
                team=team,
                device=device,
                kind=kind,
                acknowledged_through=now,
                acknowledged_by=user if n % 2 else None,
                muted_until=now if n % 5 == 0 else None,
            )
    for asked_devices, asked_kinds in [(devices[:3], kinds[:2]), (["GPU-3", "none"], ["idle"]), (["none"], kinds)]:
        for team in [None, *teams]:
            orm = AlertAcknowledgement.objects.filter(team=team, device__in=asked_devices, kind__in=asked_kinds)
            expected = sorted(orm.values(*COLUMNS), key=repr)
            with django_assert_num_queries(1):
                if team is None:
                    found = _FLEET_ACKNOWLEDGEMENTS.values(devices=asked_devices, kinds=asked_kinds)
                else:
                    found = _TEAM_ACKNOWLEDGEMENTS.values(team=team.pk, devices=asked_devices, kinds=asked_kinds)
            assert sorted(found, key=repr) == expected
            assert expected or asked_devices == ["none"]
