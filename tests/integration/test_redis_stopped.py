"""The cache stopped mid-run: gunicorn keeps serving pages and the API from the database, /healthz says degraded.

gunicorn runs with a ``redis-server`` the test starts itself as its cache. Signed in (a browser session and an API
token) while Redis is up, the test stops Redis and goes on: pages, API reads, a submission through the API and the
form, and a new sign-in all succeed; ``/healthz`` answers 200 "degraded" (the pod stays in the Service). Redis
started again, the probe is "ok" again.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import requests

from allocations.models import GpuRequest
from portal.tokens.services import api_token_create
from tests.factories import build_demo_org
from tests.integration.gunicorn import gunicorn
from tests.integration.test_broker_restart import EphemeralRedis

pytestmark = [
    pytest.mark.integration,
    pytest.mark.postgres,  # gunicorn and the test share one database
    pytest.mark.redis_server,
    pytest.mark.django_db(transaction=True),
]
NEW = {"team": "vision", "workload_type": "training", "gpu_memory_gb": 40, "command": ["python", "main.py"]}


def _signed_in(url: str, username: str) -> requests.Session:
    browser = requests.Session()
    page = browser.get(f"{url}/accounts/login/", timeout=30).text
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page).group(1)
    answer = browser.post(
        f"{url}/accounts/login/",
        data={"csrfmiddlewaretoken": token, "username": username, "password": "demo"},
        headers={"Referer": f"{url}/accounts/login/"},
        timeout=30,
    )
    assert answer.status_code == 200 and "/accounts/login/" not in answer.url, answer.text[:300]
    return browser


def _submit_form(url: str, browser: requests.Session, name: str) -> requests.Response:
    page = browser.get(f"{url}/requests/new/", timeout=30).text
    fields = dict(re.findall(r'name="(csrfmiddlewaretoken|submission_token)" value="([^"]+)"', page))
    body = {**fields, **NEW, "name": name, "gpu_count": "1", "replicas": "1"}
    return browser.post(f"{url}/requests/new/", data=body, headers={"Referer": f"{url}/requests/new/"}, timeout=30)


def test_pages_and_the_api_are_served_while_redis_is_stopped(tmp_path: Path) -> None:
    org = build_demo_org()
    api = {"Authorization": f"Token {api_token_create(acting_user=org.member, name='nb', expires_in_days=7).key}"}
    cache = EphemeralRedis(tmp_path)
    cache.start()
    try:
        with gunicorn(workers=2, env={"CACHE_URL": cache.url}) as server:
            url = server.url
            assert requests.get(f"{url}/healthz", timeout=30).json()["status"] == "ok"
            browser = _signed_in(url, "member")
            assert browser.get(f"{url}/", timeout=30).status_code == 200
            assert requests.get(f"{url}/api/v1/requests/", headers=api, timeout=30).status_code == 200

            cache.stop()
            probe = requests.get(f"{url}/healthz", timeout=30)
            assert probe.status_code == 200 and probe.json()["status"] == "degraded", probe.text
            for path in ("/", "/requests/", "/teams/", "/account/tokens/"):
                page = browser.get(f"{url}{path}", timeout=30)
                assert page.status_code == 200, (path, page.status_code, page.text[:300])
            for _ in range(5):  # the throttles fail open: every call is served
                listed = requests.get(f"{url}/api/v1/requests/", headers=api, timeout=30)
                assert listed.status_code == 200, listed.text[:300]
            submitted = requests.post(f"{url}/api/v1/requests/", json={**NEW, "name": "api"}, headers=api, timeout=30)
            assert submitted.status_code == 201, submitted.text[:300]
            form = _submit_form(url, browser, "form")
            assert form.status_code == 200 and "/requests/" in form.url, form.text[:300]
            assert _signed_in(url, "lead").get(f"{url}/", timeout=30).status_code == 200
            assert set(GpuRequest.objects.values_list("name", flat=True)) == {"api", "form"}

            cache.start()
            assert requests.get(f"{url}/healthz", timeout=30).json()["status"] == "ok"
            assert browser.get(f"{url}/requests/", timeout=30).status_code == 200
    finally:
        cache.stop()
