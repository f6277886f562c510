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


SSO_ENV = {
    "OIDC_ISSUER": "https://id.example.com/realms/acme",
    "OIDC_CLIENT_ID": "gpu-portal",
    "OIDC_CLIENT_SECRET_REF": "env:OIDC_CLIENT_SECRET",
    "OIDC_CLIENT_SECRET": "a-client-secret-from-the-secret-store",
}
SSO_PROBE = (
    "import json, django; from django.conf import settings; django.setup(); "
    "from portal.sso.backends import password_login; "
    "print(json.dumps({'issuer': settings.OIDC_ISSUER, 'scopes': settings.OIDC_SCOPES, "
    "'password_login': password_login()}))"
)


def test_check_deploy_passes_with_single_sign_on_configured() -> None:
    result = _run(["manage.py", "check", "--deploy", "--fail-level", "WARNING"], {**PRODUCTION_ENV, **SSO_ENV})
    assert result.returncode == 0, result.stdout + result.stderr


def test_single_sign_on_settings_come_from_the_environment(tmp_path: Path) -> None:
    secret = tmp_path / "client-secret"
    secret.write_text("from-a-mounted-secret\n")
    env = {**SSO_ENV, "OIDC_CLIENT_SECRET_REF": f"file:{secret}", "OIDC_SCOPES": "openid,profile,email,groups"}
    result = _run(["-c", SSO_PROBE], env)
    assert result.returncode == 0, result.stderr
    probe = json.loads(result.stdout.strip().splitlines()[-1])
    assert probe == {
        "issuer": "https://id.example.com/realms/acme",
        "scopes": ["openid", "profile", "email", "groups"],
        "password_login": "admins",  # with single sign-on, passwords are for break-glass administrators by default
    }


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"OIDC_ISSUER": "http://id.example.com"}, "OIDC_ISSUER must be an https:// URL"),
        ({"OIDC_CLIENT_SECRET_REF": ""}, "OIDC_CLIENT_SECRET_REF must be set"),
        ({"OIDC_CLIENT_SECRET": ""}, "environment variable OIDC_CLIENT_SECRET, which is not set"),
        ({"PASSWORD_LOGIN": "sometimes"}, "PASSWORD_LOGIN='sometimes': use on, admins or off"),
    ],
)
def test_production_refuses_an_incomplete_single_sign_on(change: dict[str, str], message: str) -> None:
    result = _run(["manage.py", "check"], {**PRODUCTION_ENV, **SSO_ENV, **change})
    assert result.returncode != 0
    assert message in result.stderr


def test_production_requires_a_broker() -> None:
    result = _run(["manage.py", "check"], {**PRODUCTION_ENV, "CELERY_BROKER_URL": ""})
    assert result.returncode != 0
    assert "CELERY_BROKER_URL" in result.stderr


def test_secret_references_resolve_from_env_or_file_and_never_take_a_value(tmp_path: Path, monkeypatch) -> None:
    from django.core.exceptions import ImproperlyConfigured

    from portal.settings.env import secret_from_ref

    monkeypatch.setenv("SOME_SECRET", " s3cret ")
    assert secret_from_ref("env:SOME_SECRET", what="X") == "s3cret"
    path = tmp_path / "secret"
    path.write_text("from-a-file\n")
    assert secret_from_ref(f"file:{path}", what="X") == "from-a-file"
    for ref, message in [
        ("hunter2", "X must be a reference, 'env:VARIABLE' or 'file:/path'"),
        ("env:NOT_SET_HERE", "X points at the environment variable NOT_SET_HERE, which is not set"),
        ("file:/nonexistent/secret", "X points at /nonexistent/secret, which cannot be read"),
    ]:
        with pytest.raises(ImproperlyConfigured, match=message.replace("(", r"\(")):
            secret_from_ref(ref, what="X")


@pytest.mark.parametrize(("value", "expected"), [(None, 5), ("0", 0), ("20", 20), ("off", None), ("OFF", None)])
def test_prepared_statements_threshold_comes_from_the_environment(value: str | None, expected: int | None) -> None:
    env = {"DATABASE_URL": "postgres://alice:pw@db.example.com:6543/gpu_portal"}
    if value is not None:
        env["DB_PREPARE_THRESHOLD"] = value
    probe = "from django.conf import settings; print(settings.DATABASES['default']['OPTIONS']['prepare_threshold'])"
    result = _run(["-c", probe], {"DJANGO_SETTINGS_MODULE": "portal.settings.base", **env})
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip().splitlines()[-1] == str(expected)


@pytest.mark.parametrize(
    ("env", "expected"),
    [
        ({}, "True None"),
        ({"DB_PREPARE_THRESHOLD": "off"}, "False None"),
        ({"DB_SERVER_SIDE_BINDING": "0"}, "False None"),
        ({"DB_PREPARE_THRESHOLD": "off", "DB_SERVER_SIDE_BINDING": "1"}, "True None"),
        ({"DB_CONN_MAX_AGE": "60"}, "True None"),
    ],
)
def test_server_side_binding_follows_prepared_statements_unless_set(env: dict[str, str], expected: str) -> None:
    """PostgreSQL binds the parameters when statements may be prepared; Django's connection pool stays off."""
    env = {"DATABASE_URL": "postgres://alice:pw@db.example.com:6543/gpu_portal", **env}
    probe = (
        "from django.conf import settings; options = settings.DATABASES['default']['OPTIONS']; "
        "print(options['server_side_binding'], options.get('pool'))"
    )
    result = _run(["-c", probe], {"DJANGO_SETTINGS_MODULE": "portal.settings.base", **env})
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip().splitlines()[-1] == expected


def test_a_prepared_statements_threshold_that_is_no_number_names_the_variable() -> None:
    env = {"DATABASE_URL": "postgres://alice:pw@db.example.com:6543/gpu_portal", "DB_PREPARE_THRESHOLD": "often"}
    result = _run(["-c", "import django; django.setup()"], {"DJANGO_SETTINGS_MODULE": "portal.settings.base", **env})
    assert result.returncode != 0
    assert "DB_PREPARE_THRESHOLD='often' is not an integer" in result.stderr
