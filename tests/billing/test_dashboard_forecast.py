"""The capacity forecast on the cost dashboards: for approvers and finance (platform-wide data), with its CSV."""

import csv
import io

import pytest
from django.contrib.auth.models import User
from django.core.management import call_command
from django.test import override_settings
from django.urls import reverse

from allocations.models import GpuRequest

pytestmark = pytest.mark.django_db


@pytest.fixture
def demo(db) -> None:
    with override_settings(DEBUG=True):
        call_command("seed_demo", verbosity=0)


def test_approver_sees_the_forecast_panel_with_data(client, demo) -> None:
    client.force_login(User.objects.get(username="carol"))
    response = client.get(reverse("billing:dashboard"))
    assert response.status_code == 200
    body = response.content.decode()
    assert 'id="panel-capacity-forecast"' in body
    assert 'id="chart-capacity-forecast"' in body  # a chart, not the empty state
    assert "demo/h100-dedicated" in body


def test_forecast_csv_has_a_row_per_pool_resource(client, demo) -> None:
    client.force_login(User.objects.get(username="carol"))
    response = client.get(reverse("billing:dashboard-csv", args=["capacity-forecast"]))
    assert response.status_code == 200
    rows = list(csv.DictReader(io.StringIO(response.content.decode())))
    pools = {(r["pool"], r["resource"]) for r in rows}
    assert ("demo/h100-dedicated", "nvidia.com/gpu") in pools
    assert ("demo/a100-mig", "nvidia.com/mig-2g.10gb") in pools
    h100 = next(r for r in rows if r["pool"] == "demo/h100-dedicated")
    running = GpuRequest.objects.filter(status="active", node_pool__name="h100-dedicated")
    assert int(h100["capacity"]) == 16 and int(h100["allocated now"]) == sum(r.resource_units for r in running) > 0


def test_members_get_no_platform_forecast(client, demo) -> None:
    client.force_login(User.objects.get(username="alice"))
    assert b"panel-capacity-forecast" not in client.get(reverse("billing:dashboard")).content
    assert client.get(reverse("billing:dashboard-csv", args=["capacity-forecast"])).status_code == 404
