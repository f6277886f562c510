"""Probes: /healthz checks the database and the cache, /healthz/live only the process; both answer a probe by pod IP.

A kubelet probes http://<pod IP>:8000/healthz with that IP as the Host header and without X-Forwarded-Proto; under
production settings Django would answer 400 (host not allowed) or 301 (HTTPS redirect, which a probe counts as
success), so the check must come before both.
"""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.test import override_settings

pytestmark = pytest.mark.django_db
ROOT = Path(__file__).resolve().parents[2]
UNREACHABLE_REDIS = {
    "default": {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": "redis://127.0.0.1:1/0"}
}


@override_settings(ALLOWED_HOSTS=["gpu-portal.example.com"], SECURE_SSL_REDIRECT=True)
@pytest.mark.parametrize("path", ["/healthz", "/healthz/live"])
def test_a_probe_by_pod_ip_over_http_gets_the_check_not_a_redirect(client, path: str) -> None:
    response = client.get(path, HTTP_HOST="10.244.1.17:8000")
    assert response.status_code == 200
    assert response.json()["status"] == "ok"
    # Everything else still gets the host check and the redirect.
    assert client.get("/accounts/login/", HTTP_HOST="gpu-portal.example.com").status_code == 301
    assert client.get("/accounts/login/", HTTP_HOST="10.244.1.17:8000").status_code == 400


@override_settings(CACHES=UNREACHABLE_REDIS)
def test_an_unreachable_cache_reports_the_pod_degraded_but_ready(client) -> None:
    response = client.get("/healthz")
    assert response.status_code == 200
    body = response.json()
    assert body["status"] == "degraded" and body["database"] == "ok"
    assert body["cache"].startswith("error:") and "127.0.0.1" not in body["cache"]  # no driver text to anyone
    assert client.get("/healthz/live").status_code == 200


def test_an_unreachable_database_makes_the_pod_unready() -> None:
    env = {k: v for k, v in os.environ.items() if k not in {"DJANGO_ALLOW_ASYNC_UNSAFE"}}
    env.update(
        DJANGO_SETTINGS_MODULE="portal.settings.base",
        DATABASE_URL="postgres://portal@127.0.0.1:1/gpu_portal",
        DB_CONNECT_TIMEOUT="2",
    )
    probe = "import django, json; django.setup(); from portal.health import readiness; print(json.dumps(readiness()))"
    result = subprocess.run(
        [sys.executable, "-c", probe], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60, check=False
    )
    assert result.returncode == 0, result.stderr
    status, report = json.loads(result.stdout.strip().splitlines()[-1])
    assert status == 503
    assert report["status"] == "error" and report["cache"] == "ok"
    # The driver's text names the host and port: logged, never in the unauthenticated answer.
    assert report["database"] == "error: OperationalError"
