"""Quotas hold under concurrency: many simultaneous submissions and approvals never take a team over its limit.

Each worker thread has its own PostgreSQL connection, so the team row lock in the services is what serializes them
(as with gunicorn workers); the requests go through the REST API, the way notebooks send them.
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
from django.db import connections
from django.db.models import Sum
from rest_framework.test import APIClient

from allocations.models import QUOTA_HOLDING_STATUSES, GpuRequest, RequestStatus
from allocations.requests.services import gpu_request_submit
from tests.factories import build_demo_org

pytestmark = [pytest.mark.integration, pytest.mark.postgres, pytest.mark.django_db(transaction=True)]

LIMIT = 5
# Enough threads to race, few enough to leave PostgreSQL's default 100 connections to the other test workers.
WORKERS = 24
PROFILE = {"workload_type": "training", "gpu_memory_gb": 40}


def _held_units() -> int:
    return int(
        GpuRequest.objects.filter(status__in=QUOTA_HOLDING_STATUSES).aggregate(total=Sum("resource_units"))["total"]
        or 0
    )


def _holding_count() -> int:
    # Approved, or already provisioning/active: provisioning may run (eagerly) right after the approval commits.
    return GpuRequest.objects.filter(status__in=QUOTA_HOLDING_STATUSES).count()


class HeldUnitsMonitor:
    """Polls the units held, from its own connection, while the workers run; records the most it ever saw."""

    def __init__(self) -> None:
        self.peak = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        try:
            while not self._stop.is_set():
                self.peak = max(self.peak, _held_units())
        finally:
            connections.close_all()

    def __enter__(self) -> HeldUnitsMonitor:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=30)
        self.peak = max(self.peak, _held_units())


def _run_concurrently(job: Callable[[int], Any], count: int) -> list[Any]:
    """Run ``job(i)`` for ``count`` indexes on ``WORKERS`` threads released together; each closes its connection."""
    barrier = threading.Barrier(min(count, WORKERS))

    def wrapped(index: int) -> Any:
        try:
            if index < WORKERS:
                barrier.wait(timeout=60)
            return job(index)
        finally:
            connections.close_all()

    with ThreadPoolExecutor(max_workers=WORKERS) as pool:
        return list(pool.map(wrapped, range(count)))


def _client(user: Any) -> APIClient:
    client = APIClient()
    client.force_authenticate(user)
    return client


@pytest.fixture
def provisioning_queued_not_run():
    """Approvals queue provisioning on the broker and no worker runs it, as in production before a worker picks it up.

    The test settings run tasks eagerly, inside the approving request; here that would make the outcome depend on
    provisioning (a failed one frees its quota) and have 50 threads write one GitOps tree. Quotas are what is tested.
    """
    from portal.celery import app

    eager = app.conf.task_always_eager
    app.conf.task_always_eager = False
    yield
    app.conf.task_always_eager = eager
    app.control.purge()


@pytest.fixture
def org(provisioning_queued_not_run):
    org = build_demo_org()
    org.team.quotas.update(limit=LIMIT)
    return org


def _outcome(response: Any) -> str:
    if response.status_code in (201, 202):
        return "ok"
    body = response.json()
    if response.status_code == 400 and "quota" in body:
        return "quota"
    return f"{response.status_code}: {body}"


def test_concurrent_approvals_never_exceed_the_quota(org):
    pending = [
        gpu_request_submit(
            command=["python", "main.py"], acting_user=org.member, team=org.team, name=f"job-{i}", profile_data=PROFILE
        )
        for i in range(WORKERS + 10)
    ]

    def approve(index: int) -> str:
        response = _client(org.approver).post(
            f"/api/v1/requests/{pending[index].pk}/approve/", {"comment": "race"}, format="json"
        )
        return _outcome(response)

    with HeldUnitsMonitor() as monitor:
        outcomes = Counter(_run_concurrently(approve, len(pending)))

    assert outcomes == {"ok": LIMIT, "quota": len(pending) - LIMIT}
    assert monitor.peak <= LIMIT
    assert _holding_count() == LIMIT
    assert GpuRequest.objects.filter(status=RequestStatus.PENDING_APPROVAL).count() == len(pending) - LIMIT
    assert _held_units() == LIMIT


def test_concurrent_submissions_and_approvals_never_exceed_the_quota(org):
    def submit_then_approve(index: int) -> str:
        submitted = _client(org.member).post(
            "/api/v1/requests/",
            {"team": "vision", "name": f"job-{index}", **PROFILE, "command": ["python", "main.py"]},
            format="json",
        )
        if submitted.status_code != 201:
            return f"submit {_outcome(submitted)}"
        approved = _client(org.approver).post(f"/api/v1/requests/{submitted.json()['id']}/approve/", {}, format="json")
        return f"approve {_outcome(approved)}"

    with HeldUnitsMonitor() as monitor:
        outcomes = Counter(_run_concurrently(submit_then_approve, WORKERS + 10))

    # Every refusal is a quota refusal, at submission or at approval; exactly the limit got through.
    assert outcomes["approve ok"] == LIMIT
    assert set(outcomes) <= {"approve ok", "approve quota", "submit quota"}, outcomes
    assert sum(outcomes.values()) == WORKERS + 10
    assert monitor.peak <= LIMIT
    assert _holding_count() == LIMIT
    assert _held_units() == LIMIT


def test_concurrent_auto_approved_submissions_never_exceed_the_quota(org):
    org.team.auto_approve_tiers.add(*org.team.auto_approve_tiers.model.objects.filter(slug="tier2_batch"))

    def submit(index: int) -> str:
        body = {
            "team": "vision",
            "name": f"auto-{index}",
            "sla_tier": "tier2_batch",
            **PROFILE,
            "command": ["python", "main.py"],
        }
        return _outcome(_client(org.member).post("/api/v1/requests/", body, format="json"))

    with HeldUnitsMonitor() as monitor:
        outcomes = Counter(_run_concurrently(submit, WORKERS + 10))

    assert outcomes == {"ok": LIMIT, "quota": WORKERS + 10 - LIMIT}
    assert monitor.peak <= LIMIT
    assert _holding_count() == LIMIT
