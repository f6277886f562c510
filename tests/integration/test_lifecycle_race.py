"""Approve, cancel and release racing on one request: one outcome, every loser a 409, one event per change.

Three threads (each its own PostgreSQL connection, as gunicorn workers would have) post approve, cancel and release
on the same pending request at the same moment, 40 times. Provisioning is queued on the real Redis broker and not run,
so the broker's queue shows how many provisionings each request got.
"""

from __future__ import annotations

import json
import threading
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
from django.db import connections
from rest_framework.test import APIClient

from allocations.models import GpuRequest, RequestEvent, RequestStatus
from allocations.requests.services import gpu_request_submit
from tests.factories import build_demo_org

pytestmark = [pytest.mark.integration, pytest.mark.postgres, pytest.mark.django_db(transaction=True)]

TRIALS = 40
PROFILE = {"workload_type": "training", "gpu_memory_gb": 40}


@pytest.fixture
def org():
    from portal.celery import app

    eager = app.conf.task_always_eager
    app.conf.task_always_eager = False
    app.control.purge()
    yield build_demo_org()
    app.conf.task_always_eager = eager
    app.control.purge()


def _queued_provisionings() -> Counter[str]:
    """Provisioning tasks waiting on the broker, by request id (read from Redis, where the approvals queued them)."""
    from portal.celery import app

    with app.connection_for_write() as conn:
        client = conn.default_channel.client
        messages = client.lrange("celery", 0, -1)
    queued: Counter[str] = Counter()
    for raw in messages:
        headers = json.loads(raw)["headers"]
        if headers["task"].endswith("provision_request"):
            queued[headers["argsrepr"]] += 1
    return queued


def _race(org: Any, pk: int) -> dict[str, int]:
    actions = {"approve": org.approver, "cancel": org.member, "release": org.member}
    barrier = threading.Barrier(len(actions))

    def post(action: str) -> tuple[str, int]:
        client = APIClient()
        client.force_authenticate(actions[action])
        try:
            barrier.wait(timeout=30)
            return action, client.post(f"/api/v1/requests/{pk}/{action}/", {}, format="json").status_code
        finally:
            connections.close_all()

    with ThreadPoolExecutor(max_workers=len(actions)) as pool:
        return dict(pool.map(post, actions))


def test_approve_cancel_and_release_racing_on_one_request(org, record_property):
    outcomes: Counter[str] = Counter()
    problems: list[str] = []
    for trial in range(TRIALS):
        request = gpu_request_submit(
            command=["python", "main.py"],
            acting_user=org.member,
            team=org.team,
            name=f"race-{trial}",
            profile_data=PROFILE,
        )
        codes = _race(org, request.pk)
        winners = sorted(action for action, code in codes.items() if code in (200, 202))
        losers = {action: code for action, code in codes.items() if code not in (200, 202)}
        outcomes[" then ".join(winners) or "none"] += 1
        events = list(RequestEvent.objects.filter(request=request).order_by("pk").values_list("to_status", flat=True))
        final = GpuRequest.objects.get(pk=request.pk).status
        if "approve" in winners and "cancel" in winners:
            problems.append(f"trial {trial}: approve and cancel both won; events {events}")
        if any(code != 409 for code in losers.values()):
            problems.append(f"trial {trial}: a loser did not get 409: {losers}")
        # One event for the submission, then exactly one per winning action.
        if len(events) != 1 + len(winners):
            problems.append(f"trial {trial}: {len(winners)} winners {winners} but events {events}")
        if "approve" not in winners and final != RequestStatus.RELEASED:
            problems.append(f"trial {trial}: cancelled but {final}")
    queued = _queued_provisionings()
    approvals = RequestEvent.objects.filter(to_status=RequestStatus.APPROVED).count()
    double_provisioning = sum(1 for count in queued.values() if count > 1)
    figure = (
        f"{TRIALS} trials of approve/cancel/release at once: outcomes {dict(outcomes)}; "
        f"{len(problems)} double wins or stray events; {approvals} approvals, {sum(queued.values())} provisionings "
        f"queued, {double_provisioning} requests provisioned twice"
    )
    print(f"\n{figure}")
    record_property("figure", figure)
    assert not problems, "\n".join(problems)
    assert sum(queued.values()) == approvals
    assert double_provisioning == 0
    assert outcomes["none"] == 0
