"""docker-compose.yml and the Kubernetes overlays agree with the settings: what production requires is set everywhere.

The required variables are read from ``REQUIRED_ENV`` in portal/settings/production.py (by parsing, so the test needs
no environment); the variables the settings read at all from the ``env_*`` calls in portal/settings/. Each app
container of compose and of both overlays must set every required variable, and set nothing the settings never read
(a misspelt name would silently fall back to a default). Finally each environment, with placeholders for the values
kept in Secrets, is handed to Django: the prod overlay passes ``check --deploy``.
"""

from __future__ import annotations

import ast
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.deploy.kustomize import OVERLAYS, ROOT, by_kind, containers, named, pod_templates, render

SETTINGS_DIR = ROOT / "portal" / "settings"
# Read by Django itself, not by our settings modules.
READ_BY_DJANGO = {"DJANGO_SETTINGS_MODULE"}
PLACEHOLDER_SECRETS = {
    "SECRET_KEY": "placeholder-secret-key-for-the-consistency-test-0123456789-abcdefghijklmnop",
    "DATABASE_URL": "postgres://portal:placeholder@db.internal:5432/gpu_portal",
    "CELERY_BROKER_URL": "redis://redis.internal:6379/0",
    "CACHE_URL": "redis://redis.internal:6379/1",
}


def required_env() -> set[str]:
    """``REQUIRED_ENV`` of the production settings."""
    tree = ast.parse((SETTINGS_DIR / "production.py").read_text())
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and any(getattr(t, "id", "") == "REQUIRED_ENV" for t in node.targets):
            return set(ast.literal_eval(node.value))
    raise AssertionError("portal/settings/production.py has no REQUIRED_ENV")


def variables_read_by_settings() -> set[str]:
    """Every variable name passed to env_str/env_bool/env_int/env_list/env_required (or os.environ.setdefault)."""
    names: set[str] = set()
    for path in SETTINGS_DIR.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if (
                isinstance(node, ast.Call)
                and getattr(node.func, "id", "").startswith("env_")
                and node.args
                and isinstance(node.args[0], ast.Constant)
            ):
                names.add(node.args[0].value)
            # os.environ.setdefault("DEBUG", "0") in production.py
            if (
                isinstance(node, ast.Call)
                and getattr(node.func, "attr", "") == "setdefault"
                and getattr(getattr(node.func, "value", None), "attr", "") == "environ"
            ):
                names.add(node.args[0].value)
    return names


def compose_app_environments() -> dict[str, dict[str, str]]:
    """The environment of each compose service built from this repository, ``${VAR:-default}`` resolved to default."""
    compose = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
    environments = {}
    for name, service in compose["services"].items():
        if service.get("build") != ".":
            continue
        env = service.get("environment") or {}
        environments[name] = {key: re.sub(r"\$\{[A-Z_]+:-([^}]*)\}", r"\1", str(value)) for key, value in env.items()}
    return environments


def container_environment(objects: list[dict[str, Any]], container: dict[str, Any]) -> dict[str, str]:
    """A container's variables: ConfigMap values resolved, Secret references as ``secret:<name>/<key>``."""
    env: dict[str, str] = {}
    for source in container.get("envFrom", []):
        if "configMapRef" in source:
            env.update(named(objects, "ConfigMap", source["configMapRef"]["name"])["data"])
    for item in container.get("env", []):
        if "value" in item:
            env[item["name"]] = item["value"]
        else:
            ref = item["valueFrom"]["secretKeyRef"]
            env[item["name"]] = f"secret:{ref['name']}/{ref['key']}"
    return env


def test_the_settings_module_lists_what_production_requires() -> None:
    assert required_env() >= {"SECRET_KEY", "ALLOWED_HOSTS", "DATABASE_URL", "CELERY_BROKER_URL", "CACHE_URL"}
    assert required_env() <= variables_read_by_settings()


def test_compose_sets_every_required_variable_and_only_known_ones() -> None:
    environments = compose_app_environments()
    assert {"migrate", "web", "worker", "beat"} <= environments.keys()
    known = variables_read_by_settings() | READ_BY_DJANGO
    for service, env in environments.items():
        assert env["DJANGO_SETTINGS_MODULE"] == "portal.settings.production", service
        missing = {name for name in required_env() if not env.get(name)}
        assert not missing, f"compose service {service} lacks {sorted(missing)}"
        assert set(env) <= known, f"compose service {service} sets variables no setting reads: {set(env) - known}"


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_every_portal_container_of_the_overlay_sets_every_required_variable(overlay: str) -> None:
    objects = render(overlay)
    known = variables_read_by_settings() | READ_BY_DJANGO
    templates = pod_templates(objects)
    assert set(templates) == {"web", "worker", "beat", "migrate"}
    for component, template in templates.items():
        for container in containers(template):
            env = container_environment(objects, container)
            where = f"{overlay}/{component}/{container['name']}"
            assert env.get("DJANGO_SETTINGS_MODULE") == "portal.settings.production", where
            missing = {name for name in required_env() if not env.get(name)}
            assert not missing, f"{where} lacks {sorted(missing)}"
            assert set(env) <= known, f"{where} sets variables no setting reads: {set(env) - known}"
    for configmap in by_kind(objects, "ConfigMap"):
        if configmap["metadata"]["name"].startswith("gpu-portal-") and configmap["metadata"]["name"] != (
            "gpu-portal-dcgm-scrape"
        ):
            assert set(configmap["data"]) <= known, configmap["metadata"]["name"]


def _django(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    inherited = r"(DJANGO_|DATABASE_URL|CELERY_|CACHE_URL|DEBUG|OIDC_)"
    clean = {k: v for k, v in os.environ.items() if not re.match(inherited, k)}
    return subprocess.run(
        [sys.executable, "manage.py", *args],
        cwd=ROOT,
        env={**clean, **env},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def _with_placeholders(env: dict[str, str], tmp_path: Path) -> dict[str, str]:
    """Secret references replaced by placeholder values; a file reference points at a placeholder file instead."""
    resolved = {}
    for name, value in env.items():
        if value.startswith("secret:"):
            resolved[name] = PLACEHOLDER_SECRETS[name]
        elif value.startswith("file:"):
            placeholder = tmp_path / Path(value.removeprefix("file:")).name
            placeholder.write_text("placeholder-client-secret\n")
            resolved[name] = f"file:{placeholder}"
        else:
            resolved[name] = value
    return resolved


def test_the_prod_web_environment_passes_check_deploy(tmp_path: Path) -> None:
    objects = render("prod")
    (web,) = pod_templates(objects)["web"]["spec"]["containers"]
    env = _with_placeholders(container_environment(objects, web), tmp_path)
    assert env["OIDC_ISSUER"].startswith("https://")
    result = _django(["check", "--deploy", "--fail-level", "WARNING"], env)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "no issues" in result.stdout
