"""The demo utilization generator: idempotent, realistic enough to raise every alert, and a rising forecast."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.core.management import call_command
from django.test import override_settings
from django.utils import timezone

from billing.metering.demo_usage import generate_demo_usage
from billing.models import UtilizationRollup
from billing.utilization.selectors import alerts_for, pool_forecasts

pytestmark = pytest.mark.django_db
# The demo requests are seeded now, so the month of usage ends now too.
NOW = timezone.now()


@pytest.fixture
def seeded(db) -> None:
    with override_settings(DEBUG=True):
        call_command("seed_demo", "--no-usage", verbosity=0)


def test_generates_once_and_is_idempotent(seeded: None) -> None:
    created = generate_demo_usage(days=3, now=NOW)
    assert created > 0 and UtilizationRollup.objects.count() == created
    snapshot = sorted(UtilizationRollup.objects.values_list("hour", "gpu_uuid", "mig_instance", "avg_utilization_pct"))
    assert generate_demo_usage(days=3, now=NOW) == 0
    again = sorted(UtilizationRollup.objects.values_list("hour", "gpu_uuid", "mig_instance", "avg_utilization_pct"))
    assert again == snapshot
    hours = list(UtilizationRollup.objects.order_by("hour").values_list("hour", flat=True).distinct())
    top = NOW.replace(minute=0, second=0, microsecond=0)
    assert max(hours) == top - timedelta(hours=1) and len(hours) == 72


def test_demo_month_raises_every_kind_of_alert_and_has_unallocated_devices(seeded: None) -> None:
    generate_demo_usage(days=3, now=NOW)
    kinds = {alert.kind.value for alert in alerts_for(UtilizationRollup.objects.all())}
    assert kinds == {"temperature", "memory_pressure", "idle"}
    assert UtilizationRollup.objects.filter(team__isnull=True, namespace="").exists()
    assert UtilizationRollup.objects.filter(request__isnull=False).exists()
    assert not UtilizationRollup.objects.filter(mig_instance__gt="", energy_kwh__isnull=False).exists()


def test_running_requests_get_a_history(seeded: None) -> None:
    generate_demo_usage(days=30, now=NOW)
    forecasts = [f for f in pool_forecasts(now=NOW) if f.allocated_now]
    assert forecasts and all(f.allocation.history for f in forecasts)


def test_a_running_request_was_requested_when_its_timeline_begins(seeded: None) -> None:
    from allocations.models import GpuRequest, RequestStatus

    generate_demo_usage(days=3, now=NOW)
    for request in GpuRequest.objects.filter(status=RequestStatus.ACTIVE, node_pool__isnull=False):
        first = request.events.order_by("at").values_list("at", flat=True).first()
        assert first is not None and abs(request.created_at - first) < timedelta(minutes=5), request.name
        assert NOW - request.created_at > timedelta(days=1)
