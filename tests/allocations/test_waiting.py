"""Where a request waits, read from the database: the approval queue, its pool's capacity, Kueue; in the API
(``waiting``), on the request page and on the approval queue."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.test import Client
from django.utils import timezone

from allocations.models import RequestStatus
from allocations.requests.waiting import request_waiting, waiting_by_request
from tests.factories import GpuRequestFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def client_as(demo_org):
    """A client signed in as one role of the demo organisation (pages and API)."""

    def signed_in(role: str) -> Client:
        client = Client()
        client.force_login(demo_org.user(role))
        return client

    return signed_in


def _pending(org, *, units: int, minutes_ago: int, team=None, pool=None):
    return GpuRequestFactory(
        team=team or org.team,
        requester=org.member,
        cluster=org.cluster,
        node_pool=pool if pool is not None else org.pool,
        resource_units=units,
        status=RequestStatus.PENDING_APPROVAL,
        submitted_at=timezone.now() - timedelta(minutes=minutes_ago),
    )


def _holding(org, *, units: int, expires_in_hours: float | None, status=RequestStatus.ACTIVE):
    expires = timezone.now() + timedelta(hours=expires_in_hours) if expires_in_hours is not None else None
    return GpuRequestFactory(
        team=org.other_team,
        requester=org.outsider,
        cluster=org.cluster,
        node_pool=org.pool,
        resource_units=units,
        status=status,
        expires_at=expires,
    )


def test_pending_requests_have_their_place_in_the_queue_and_the_units_ahead_on_their_pool(demo_org):
    first = _pending(demo_org, units=2, minutes_ago=30)
    second = _pending(demo_org, units=3, minutes_ago=20, team=demo_org.other_team)
    third = _pending(demo_org, units=1, minutes_ago=10)

    waiting = waiting_by_request([third, first, second])

    assert [(waiting[r.pk].stage, waiting[r.pk].position) for r in (first, second, third)] == [
        ("approval", 1),
        ("approval", 2),
        ("approval", 3),
    ]
    assert [waiting[r.pk].ahead_gpu_units for r in (first, second, third)] == [0, 2, 5]


def test_a_pending_request_its_pool_cannot_host_waits_for_capacity_until_enough_expires(demo_org):
    # The pool has 16 GPUs: 10 held until +2 h, 4 until +5 h, 2 with no end.
    _holding(demo_org, units=10, expires_in_hours=2)
    _holding(demo_org, units=4, expires_in_hours=5)
    _holding(demo_org, units=2, expires_in_hours=None)
    ahead = _pending(demo_org, units=8, minutes_ago=30)
    late = _pending(demo_org, units=4, minutes_ago=10)

    waiting = waiting_by_request([ahead, late])

    assert waiting[ahead.pk].stage == "capacity" and waiting[ahead.pk].ahead_gpu_units == 0
    # 8 needed: +2 h frees 10 (none free before).
    assert abs((waiting[ahead.pk].eta - (timezone.now() + timedelta(hours=2))).total_seconds()) < 60
    # 4 of its own after 8 ahead: 12 needed, only at +5 h.
    assert waiting[late.pk].stage == "capacity" and waiting[late.pk].ahead_gpu_units == 8
    assert abs((waiting[late.pk].eta - (timezone.now() + timedelta(hours=5))).total_seconds()) < 60


def test_a_provisioning_request_does_not_count_its_own_units_against_its_pool(demo_org):
    _holding(demo_org, units=15, expires_in_hours=3)
    mine = _holding(demo_org, units=1, expires_in_hours=None, status=RequestStatus.PROVISIONING)
    mine.observed_phase = "Pending"
    mine.status_detail = "Pending: 0/2 nodes are available: 2 Insufficient nvidia.com/gpu."
    mine.save()

    waiting = request_waiting(mine)

    # Its own unit is not "held by others": 15 of 16 held, 1 free, it fits now (the scheduler will place it).
    assert waiting is not None and waiting.stage == "capacity" and waiting.eta is not None
    assert "15 held, 1 free" in waiting.reasons[1]


def test_a_workload_kueue_has_not_admitted_waits_in_kueue(demo_org):
    message = "couldn't assign flavors to pod set main: insufficient unused quota for nvidia.com/gpu in flavor h100"
    request = _holding(demo_org, units=1, expires_in_hours=None, status=RequestStatus.PROVISIONING)
    request.queue_conditions = [{"type": "QuotaReserved", "status": "False", "reason": "Pending", "message": message}]
    request.save()

    waiting = request_waiting(request)

    assert waiting is not None and waiting.stage == "kueue" and message in waiting.reasons[0]


def test_a_running_request_does_not_wait(demo_org):
    assert request_waiting(_holding(demo_org, units=1, expires_in_hours=1)) is None


def test_the_api_detail_carries_waiting_and_the_list_does_not(client_as, demo_org):
    _pending(demo_org, units=2, minutes_ago=30)
    second = _pending(demo_org, units=1, minutes_ago=10)
    client = client_as("member")

    detail = client.get(f"/api/v1/requests/{second.pk}/").json()
    listed = client.get("/api/v1/requests/").json()["results"]

    assert detail["waiting"]["stage"] == "approval"
    assert (detail["waiting"]["position"], detail["waiting"]["ahead_gpu_units"], detail["waiting"]["eta"]) == (
        2,
        2,
        None,
    )
    assert all("waiting" not in row for row in listed)
    assert client.get(f"/api/v1/requests/{second.pk}/?fields=id,waiting").json() == {
        "id": second.pk,
        "waiting": detail["waiting"],
    }
    assert "waiting" not in client.get(f"/api/v1/requests/{second.pk}/?omit=waiting").json()


def test_the_api_detail_of_a_capacity_wait_has_an_iso_eta(client_as, demo_org):
    _holding(demo_org, units=16, expires_in_hours=4)
    pending = _pending(demo_org, units=2, minutes_ago=5)

    waiting = client_as("member").get(f"/api/v1/requests/{pending.pk}/").json()["waiting"]

    assert waiting["stage"] == "capacity" and waiting["eta"].endswith("+00:00")


def test_the_request_page_and_the_approval_queue_show_where_it_waits(client_as, demo_org):
    _holding(demo_org, units=16, expires_in_hours=4)
    first = _pending(demo_org, units=2, minutes_ago=30)
    second = _pending(demo_org, units=1, minutes_ago=10)

    page = client_as("member").get(f"/requests/{second.pk}/").content.decode()
    queue = client_as("approver").get("/approvals/").content.decode()

    assert 'id="waiting" data-stage="capacity"' in page
    assert 'id="waiting-position">2<' in page and 'id="waiting-ahead">2<' in page
    assert "Expected start" in page
    assert "#1 in the queue" in queue and "#2 in the queue, 2 units ahead on its pool" in queue
    assert queue.count("No room on its pool") == 2
    assert f"pending-{first.pk}" in queue
