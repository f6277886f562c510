"""Settings come from the environment: DATABASE_URL, the broker, and a production profile that passes check --deploy.

Each case runs in a fresh interpreter, since settings are read once per process.
"""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PRODUCTION_ENV = {
    "DJANGO_SETTINGS_MODULE": "portal.settings.production",
    "SECRET_KEY": "k8s-gpu-portal-production-secret-key-for-tests-0123456789-abcdefghij",
    "ALLOWED_HOSTS": "gpu-portal.example.com",
    "CSRF_TRUSTED_ORIGINS": "https://gpu-portal.example.com",
    "DATABASE_URL": "postgres://portal:secret@db.internal:5432/portal",
    "CELERY_BROKER_URL": "redis://redis.internal:6379/0",
    "CACHE_URL": "redis://redis.internal:6379/1",
}
PROBE = (
    "import json, django; from django.conf import settings; django.setup(); "
    "db = settings.DATABASES['default']; "
    "print(json.dumps({'engine': db['ENGINE'], 'name': str(db['NAME']), 'host': db.get('HOST'), "
    "'port': db.get('PORT'), 'user': db.get('USER'), 'eager': settings.CELERY_TASK_ALWAYS_EAGER, "
    "'debug': settings.DEBUG, 'tz': settings.TIME_ZONE, 'hosts': settings.ALLOWED_HOSTS}))"
)


def _run(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    unset = {"DATABASE_URL", "CELERY_BROKER_URL", "CACHE_URL", "DEBUG", "DJANGO_ALLOW_ASYNC_UNSAFE"}
    clean = {k: v for k, v in os.environ.items() if k not in unset}
    clean.setdefault("DJANGO_SETTINGS_MODULE", "portal.settings.base")
    clean.update(env)
    return subprocess.run(
        [sys.executable, *args], cwd=ROOT, env=clean, capture_output=True, text=True, timeout=120, check=False
    )


def _probe(env: dict[str, str]) -> dict[str, object]:
    result = _run(["-c", PROBE], {"DJANGO_SETTINGS_MODULE": "portal.settings.base", **env})
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout.strip().splitlines()[-1])


def test_database_url_is_parsed() -> None:
    probe = _probe({"DATABASE_URL": "postgres://alice:pw@db.example.com:6543/gpu_portal"})
    assert probe["engine"] == "django.db.backends.postgresql"
    assert (probe["host"], probe["port"], probe["name"], probe["user"]) == (
        "db.example.com",
        6543,
        "gpu_portal",
        "alice",
    )


def test_default_database_is_sqlite_under_var() -> None:
    probe = _probe({})
    assert probe["engine"] == "django.db.backends.sqlite3"
    assert probe["name"].endswith("var/portal.sqlite3")


def test_without_a_broker_tasks_run_eagerly() -> None:
    assert _probe({})["eager"] is True
    assert _probe({"CELERY_BROKER_URL": "redis://127.0.0.1:6379/0"})["eager"] is False


def test_time_zone_and_hosts_from_environment() -> None:
    probe = _probe({"TIME_ZONE": "Europe/Paris", "ALLOWED_HOSTS": "a.example, b.example"})
    assert probe["tz"] == "Europe/Paris"
    assert probe["hosts"] == ["a.example", "b.example"]


def test_a_bad_boolean_is_a_clear_error() -> None:
    result = _run(["-c", PROBE], {"DEBUG": "maybe"})
    assert result.returncode != 0
    assert "DEBUG='maybe' is not a boolean" in result.stderr


def test_debug_off_without_secret_key_refuses_to_start() -> None:
    result = _run(["-c", PROBE], {"DEBUG": "0"})
    assert result.returncode != 0
    assert "SECRET_KEY must be set" in result.stderr


def test_check_deploy_passes_under_production_settings() -> None:
    result = _run(["manage.py", "check", "--deploy", "--fail-level", "WARNING"], PRODUCTION_ENV)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "no issues" in result.stdout


@pytest.mark.parametrize("missing", ["SECRET_KEY", "ALLOWED_HOSTS", "DATABASE_URL", "CACHE_URL"])
def test_production_names_the_missing_variable(missing: str) -> None:
    env = {k: v for k, v in PRODUCTION_ENV.items() if k != missing}
    env[missing] = ""
    result = _run(["manage.py", "check"], env)
    assert result.returncode != 0
    assert missing in result.stderr


def test_production_refuses_sqlite() -> None:
    result = _run(["manage.py", "check"], {**PRODUCTION_ENV, "DATABASE_URL": "sqlite:///tmp/x.sqlite3"})
    assert result.returncode != 0
    assert "PostgreSQL" in result.stderr
