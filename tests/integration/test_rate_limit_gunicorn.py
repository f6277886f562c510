"""The API rate limit holds across gunicorn workers: the counters live in Redis (the shared cache), not in each
worker's memory. Over real HTTP, 2 workers, 90 requests against a limit of 30: exactly 30 are served."""

from __future__ import annotations

from collections import Counter
from concurrent.futures import ThreadPoolExecutor

import pytest
import requests

from tests.factories import api_key_for, build_demo_org
from tests.integration.gunicorn import gunicorn

pytestmark = [pytest.mark.integration, pytest.mark.postgres, pytest.mark.redis, pytest.mark.django_db(transaction=True)]

LIMIT, SENT = 30, 90


def test_rate_limit_is_shared_by_gunicorn_workers(record_property) -> None:
    org = build_demo_org()
    token = api_key_for(user=org.member).key
    # Per hour, so a minute boundary in the middle of the run cannot reset the window.
    with gunicorn(workers=2, env={"API_THROTTLE_USER": f"{LIMIT}/hour"}) as server:
        session_headers = {"Authorization": f"Token {token}"}

        def call(_: int) -> int:
            return requests.get(f"{server.url}/api/v1/teams/", headers=session_headers, timeout=30).status_code

        with ThreadPoolExecutor(max_workers=6) as pool:
            codes = Counter(pool.map(call, range(SENT)))
        workers = server.worker_pids()
    figure = (
        f"rate limit {LIMIT}/hour, {SENT} requests over 2 gunicorn workers ({len(workers)} answered): {dict(codes)}"
    )
    print(f"\n{figure}")
    record_property("figure", figure)
    assert len(workers) == 2, "both workers must have answered for the test to mean anything"
    assert codes == {200: LIMIT, 429: SENT - LIMIT}
