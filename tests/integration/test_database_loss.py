"""A real PostgreSQL connection loss: JSON 503 with Retry-After, then service again; Idempotency-Key under retries.

In process, the Django connection's backend is terminated with ``pg_terminate_backend`` (what a restart does to
every session). Over HTTP, gunicorn reaches PostgreSQL through a loopback forwarder the test cuts and restores,
with persistent connections, so the workers lose connections they hold and cannot open new ones.
"""

from __future__ import annotations

import time
import uuid
from concurrent.futures import ThreadPoolExecutor

import psycopg
import pytest
import requests
from django.db import close_old_connections, connection
from django.test import Client
from rest_framework.test import APIClient

from allocations.models import GpuRequest, IdempotencyKey
from portal.tokens.services import api_token_create
from tests.factories import build_demo_org
from tests.integration.gunicorn import gunicorn
from tests.integration.tcp_proxy import TcpProxy

pytestmark = [pytest.mark.integration, pytest.mark.postgres, pytest.mark.django_db(transaction=True)]
NEW = {
    "team": "vision",
    "name": "through-a-restart",
    "workload_type": "training",
    "gpu_memory_gb": 40,
    "command": ["python", "main.py"],
}


def _terminate_django_backend() -> None:
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        pid = cursor.fetchone()[0]
    params = connection.get_connection_params()
    params.pop("cursor_factory", None)
    params.pop("context", None)
    params.pop("prepare_threshold", None)
    with psycopg.connect(
        **{k: v for k, v in params.items() if k in ("dbname", "user", "password", "host", "port")}
    ) as admin:
        admin.execute("SELECT pg_terminate_backend(%s)", [pid])


def _request_finished() -> None:
    # What a WSGI server's request_finished does and Django's test client leaves out: drop an unusable connection.
    close_old_connections()


def test_a_terminated_connection_is_a_503_and_the_next_request_reconnects() -> None:
    org = build_demo_org()
    api = APIClient(raise_request_exception=False)
    api.credentials(
        HTTP_AUTHORIZATION=f"Token {api_token_create(acting_user=org.member, name='nb', expires_in_days=7).key}"
    )
    browser = Client(raise_request_exception=False)
    browser.force_login(org.member)

    _terminate_django_backend()
    lost = api.get("/api/v1/requests/")
    assert lost.status_code == 503, lost.content[:300]
    assert lost["Retry-After"] == "5" and lost.json()["code"] == "database_unavailable"
    _request_finished()
    assert api.get("/api/v1/requests/").status_code == 200

    _terminate_django_backend()
    page = browser.get("/requests/")
    assert page.status_code == 503 and page["Retry-After"] == "5"
    assert "back in a moment" in page.content.decode()
    _request_finished()
    assert browser.get("/requests/").status_code == 200


def _post(url: str, key: str, token: str) -> requests.Response:
    return requests.post(
        f"{url}/api/v1/requests/",
        json=NEW,
        headers={"Authorization": f"Token {token}", "Idempotency-Key": key},
        timeout=60,
    )


def _post_until_served(url: str, key: str, token: str, *, attempts: int = 10) -> requests.Response:
    """Post with one key until an answer other than 503 comes, a second apart, as a client honouring Retry-After."""
    for _ in range(attempts - 1):
        answer = _post(url, key, token)
        if answer.status_code != 503:
            return answer
        time.sleep(1)
    return _post(url, key, token)


def test_gunicorn_answers_503_while_postgres_is_away_and_a_keyed_retry_creates_one_request() -> None:
    org = build_demo_org()
    token = api_token_create(acting_user=org.member, name="nb", expires_in_days=7).key
    auth = {"Authorization": f"Token {token}"}
    db = connection.settings_dict
    proxy = TcpProxy(db.get("HOST") or "127.0.0.1", int(db.get("PORT") or 5432)).start()
    env = {"DATABASE_URL": f"postgres://{db['USER']}@127.0.0.1:{proxy.port}/{db['NAME']}", "DB_CONN_MAX_AGE": "60"}
    try:
        with gunicorn(workers=2, env=env) as server:
            assert requests.get(f"{server.url}/api/v1/requests/", headers=auth, timeout=30).status_code == 200

            proxy.cut()
            key = str(uuid.uuid4())
            answers = [requests.get(f"{server.url}/api/v1/requests/", headers=auth, timeout=30) for _ in range(4)]
            answers.append(_post(server.url, key, token))
            for answer in answers:
                assert answer.status_code == 503, answer.text[:300]
                assert answer.headers["Content-Type"].startswith("application/json")
                assert answer.headers["Retry-After"] == "5"
            assert requests.get(f"{server.url}/healthz", timeout=30).status_code == 503
            assert not GpuRequest.objects.exists()

            proxy.restore()
            # A worker may still hold a connection the cut broke: its next request answers 503 once and
            # reconnects; the client retries with the same key, as Retry-After asks.
            first = _post_until_served(server.url, key, token)
            assert first.status_code == 201, first.text[:300]
            retry = _post(server.url, key, token)
            assert retry.status_code == 201 and retry.headers["Idempotent-Replayed"] == "true"
            assert retry.content == first.content

            # The same key sent by eight clients at once, on both workers: one request, every client its answer.
            key = str(uuid.uuid4())
            with ThreadPoolExecutor(8) as pool:
                racing = list(pool.map(lambda _: _post(server.url, key, token), range(8)))
            assert {answer.status_code for answer in racing} == {201}, [a.text[:200] for a in racing]
            assert len({answer.json()["id"] for answer in racing}) == 1
    finally:
        proxy.stop()
    assert GpuRequest.objects.count() == 2
    assert IdempotencyKey.objects.count() == 2
