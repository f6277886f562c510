"""Quotas hold across gunicorn worker processes: 50 concurrent submit-and-approve sequences over real HTTP, 10 trials.

One gunicorn with several workers serves every trial, on the test database (PostgreSQL: the team row lock in the
services is what serializes the workers' transactions). Each trial, 50 clients released together each submit a
request as the member and approve it as the approver, through the REST API with token authentication, as notebooks
do; a monitor polls the GPUs held from its own connection the whole time. Over-commit: a trial in which more than the
quota was ever held. The server runs the production settings module with a broker configured, so approvals queue
provisioning on Redis (no worker takes it: quotas are what is tested) instead of provisioning inside the request.
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from functools import partial

import pytest
import requests
from django.db import connections
from django.db.models import Sum

from allocations.models import QUOTA_HOLDING_STATUSES, GpuRequest
from tests.factories import api_key_for, build_demo_org
from tests.integration.gunicorn import gunicorn

pytestmark = [pytest.mark.integration, pytest.mark.postgres, pytest.mark.redis, pytest.mark.django_db(transaction=True)]

TRIALS = 10
CLIENTS = 50
LIMIT = 5
WORKERS = 4
PROFILE = {"workload_type": "training", "gpu_memory_gb": 40}
ALLOWED_OUTCOMES = {"approve ok", "approve quota", "submit quota"}


def _held_units() -> int:
    held = GpuRequest.objects.filter(status__in=QUOTA_HOLDING_STATUSES).aggregate(total=Sum("resource_units"))
    return int(held["total"] or 0)


class HeldUnitsMonitor:
    """Polls the GPUs held, from its own connection, while a trial runs; records the most it ever saw."""

    def __init__(self) -> None:
        self.peak = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        try:
            while not self._stop.is_set():
                self.peak = max(self.peak, _held_units())
                time.sleep(0.02)
        finally:
            connections.close_all()

    def __enter__(self) -> HeldUnitsMonitor:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=30)
        self.peak = max(self.peak, _held_units())


def _outcome(step: str, response: requests.Response) -> str:
    if response.status_code in (201, 202):
        return f"{step} ok"
    if response.status_code == 400 and "quota" in response.json():
        return f"{step} quota"
    return f"{step} {response.status_code}: {response.text[:300]}"


def _purge_queued_provisioning() -> None:
    from portal.celery import app

    app.control.purge()


def test_concurrent_submit_and_approve_over_gunicorn_never_over_commits(record_property) -> None:
    org = build_demo_org()
    org.team.quotas.update(limit=LIMIT)
    member = {"Authorization": f"Token {api_key_for(user=org.member).key}"}
    approver = {"Authorization": f"Token {api_key_for(user=org.approver).key}"}
    env = {
        # Production settings: a broker is configured, so approvals queue provisioning rather than run it eagerly.
        "DJANGO_SETTINGS_MODULE": "portal.settings.base",
        "DEBUG": "1",
        "API_THROTTLE_USER": "100000/minute",
    }
    peaks, over_commits, problems = [], 0, []
    totals: Counter[str] = Counter()
    started = time.monotonic()
    _purge_queued_provisioning()
    with gunicorn(workers=WORKERS, env=env) as server:

        def submit_then_approve(trial: int, barrier: threading.Barrier, index: int) -> str:
            barrier.wait(timeout=180)
            body = {"team": org.team.slug, "name": f"t{trial}-job-{index}", **PROFILE, "command": ["python", "main.py"]}
            submitted = requests.post(f"{server.url}/api/v1/requests/", json=body, headers=member, timeout=180)
            if submitted.status_code != 201:
                return _outcome("submit", submitted)
            pk = submitted.json()["id"]
            approved = requests.post(
                f"{server.url}/api/v1/requests/{pk}/approve/", json={}, headers=approver, timeout=180
            )
            return _outcome("approve", approved)

        for trial in range(TRIALS):
            barrier = threading.Barrier(CLIENTS)
            with HeldUnitsMonitor() as monitor, ThreadPoolExecutor(max_workers=CLIENTS) as pool:
                outcomes = Counter(pool.map(partial(submit_then_approve, trial, barrier), range(CLIENTS)))
            held = _held_units()
            peaks.append(monitor.peak)
            totals.update(outcomes)
            if monitor.peak > LIMIT or held > LIMIT:
                over_commits += 1
            if outcomes["approve ok"] != LIMIT or not set(outcomes) <= ALLOWED_OUTCOMES or held != LIMIT:
                problems.append(f"trial {trial}: {dict(outcomes)}, {held} GPUs held at the end")
            # The next trial starts from an empty team: its requests (and their events) go, the queued work too.
            GpuRequest.objects.filter(team=org.team).delete()
            _purge_queued_provisioning()
        answered_by = server.worker_pids()
    figure = (
        f"quota {LIMIT} GPUs, {TRIALS} trials x {CLIENTS} concurrent submit+approve over HTTP on gunicorn "
        f"({len(answered_by)} of {WORKERS} workers answered): {over_commits} over-commits, peak GPUs held per trial "
        f"{peaks}, outcomes {dict(totals)}, {time.monotonic() - started:.1f} s"
    )
    print(f"\n{figure}")
    record_property("figure", figure)
    assert len(answered_by) >= 2, "more than one worker process must have answered for the test to mean anything"
    assert over_commits == 0
    assert not problems, "\n".join(problems)
