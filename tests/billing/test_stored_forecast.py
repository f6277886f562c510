"""The capacity forecast is stored by an hourly task and the cost dashboards read it: a re-run of the task stores the
same rows, the page shows what was stored (not a week of spans read again), and before the first run, or once the
stored one is stale, the page computes and stores it itself."""

from __future__ import annotations

import csv
import io
from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone

from billing.models import StoredPoolForecast
from billing.tasks import store_capacity_forecast
from billing.utilization.stored_forecast import STALE_AFTER
from portal.celery import app
from tests.billing.cost_helpers import held_request

pytestmark = pytest.mark.django_db


@pytest.fixture
def running(demo_org):
    """Two GPUs of the demo pool held since three days ago."""
    held_request(team=demo_org.team, start=timezone.now() - timedelta(days=3), end=None, quantity=2,
                 node_pool=demo_org.pool)  # fmt: skip
    return demo_org


def _stored() -> list[tuple]:
    return list(
        StoredPoolForecast.objects.values_list(
            "pool_id", "resource_name", "position", "capacity", "allocated_now", "allocation", "utilization", "as_of"
        )
    )


def _forecast_csv(client) -> dict[str, str]:
    response = client.get(reverse("billing:dashboard-csv", args=["capacity-forecast"]))
    assert response.status_code == 200
    rows = list(csv.DictReader(io.StringIO(response.content.decode())))
    return next(row for row in rows if row["pool"] == "demo/h100")


def test_the_hourly_task_stores_the_forecast_once_per_run(running) -> None:
    assert store_capacity_forecast() == {"pool_resources": 1}
    first = _stored()
    assert len(first) == 1 and first[0][4] == 2  # two GPUs allocated now
    assert store_capacity_forecast() == {"pool_resources": 1}
    assert _stored() == first  # the same hour: the same rows, not a second set
    schedule = app.conf.beat_schedule["store-capacity-forecast"]
    assert schedule["task"] == "billing.store_capacity_forecast"


def test_the_dashboards_read_the_stored_forecast(running, client) -> None:
    store_capacity_forecast()
    # A request placed after the run is not on the page until the next run: the page reads what was stored.
    held_request(team=running.team, start=timezone.now() - timedelta(hours=1), end=None, node_pool=running.pool)
    client.force_login(running.platform_admin)
    assert _forecast_csv(client)["allocated now"] == "2"
    page = client.get(reverse("billing:dashboard"))
    assert b'id="chart-capacity-forecast"' in page.content
    store_capacity_forecast()
    assert _forecast_csv(client)["allocated now"] == "3"


def test_before_the_first_run_or_when_stale_the_page_computes_and_stores_it(running, client) -> None:
    client.force_login(running.platform_admin)
    assert not StoredPoolForecast.objects.exists()
    assert _forecast_csv(client)["allocated now"] == "2"
    assert StoredPoolForecast.objects.count() == 1
    held_request(team=running.team, start=timezone.now() - timedelta(hours=1), end=None, node_pool=running.pool)
    StoredPoolForecast.objects.update(as_of=timezone.now() - STALE_AFTER - timedelta(minutes=1))
    assert _forecast_csv(client)["allocated now"] == "3"
    assert StoredPoolForecast.objects.get().as_of > timezone.now()  # stored again, as of the current hour's end
