"""Security headers and session rules as production serves them, and the Content-Security-Policy in every page.

The production response is read in a fresh interpreter under ``portal.settings.production`` (settings are read once
per process); the page needs no database, so none is reached.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from django.urls import reverse

from tests.factories import UserFactory
from tests.portal.test_settings import PRODUCTION_ENV, SSO_ENV, _run

ROOT = Path(__file__).resolve().parents[2]
PROBE = """
import json, django
django.setup()
from django.conf import settings
from django.test import Client, override_settings
client = Client()
# Only the static files' storage differs: production's manifest needs collectstatic, which a test does not run.
plain = "django.contrib.staticfiles.storage.StaticFilesStorage"
plain_static = {**settings.STORAGES, "staticfiles": {"BACKEND": plain}}
with override_settings(STORAGES=plain_static):
    page = client.get("/accounts/login/", secure=True, HTTP_HOST="gpu-portal.example.com")
    plain = client.get("/accounts/login/", HTTP_HOST="gpu-portal.example.com")
csrf = page.cookies["csrftoken"]
print(json.dumps({
    "status": page.status_code,
    "headers": dict(page.headers.items()),
    "plain": [plain.status_code, plain.headers.get("Location")],
    "csrf_cookie": {"secure": bool(csrf["secure"]), "samesite": csrf["samesite"]},
    "session": {"age": settings.SESSION_COOKIE_AGE, "secure": settings.SESSION_COOKIE_SECURE,
                "httponly": settings.SESSION_COOKIE_HTTPONLY, "samesite": settings.SESSION_COOKIE_SAMESITE},
}))
"""


def _directives(policy: str) -> dict[str, list[str]]:
    return {part.split()[0]: part.split()[1:] for part in (p.strip() for p in policy.split(";")) if part}


def test_production_response_carries_the_security_headers() -> None:
    result = _run(["-c", PROBE], PRODUCTION_ENV)
    assert result.returncode == 0, result.stderr
    probe = json.loads(result.stdout.strip().splitlines()[-1])
    headers = probe["headers"]
    print("\nproduction headers:", json.dumps({k: v for k, v in headers.items() if k != "Set-Cookie"}, indent=1))
    assert probe["status"] == 200
    assert headers["Strict-Transport-Security"] == "max-age=31536000; includeSubDomains; preload"
    assert headers["X-Content-Type-Options"] == "nosniff"
    assert headers["Referrer-Policy"] == "same-origin"
    assert headers["X-Frame-Options"] == "DENY"
    assert headers["Cross-Origin-Opener-Policy"] == "same-origin"
    csp = _directives(headers["Content-Security-Policy"])
    assert csp["script-src"] == ["'self'"]  # no inline script, no eval, no other origin
    assert csp["default-src"] == ["'self'"] and csp["object-src"] == ["'none'"]
    assert csp["frame-ancestors"] == ["'none'"] and csp["base-uri"] == ["'self'"]
    assert csp["form-action"] == ["'self'"]  # no form posts anywhere else (no single sign-on configured here)
    # Plain HTTP is sent to HTTPS; cookies only travel over HTTPS and not to other sites' requests.
    assert probe["plain"] == [301, "https://gpu-portal.example.com/accounts/login/"]
    assert probe["csrf_cookie"] == {"secure": True, "samesite": "Lax"}
    assert probe["session"] == {"age": 8 * 3600, "secure": True, "httponly": True, "samesite": "Lax"}


@pytest.mark.django_db
def test_signing_in_rotates_the_session_key_and_the_csrf_token(client) -> None:
    UserFactory(username="alice")
    client.get(reverse("login"))
    session = client.session
    session["probe"] = "before"
    session.save()
    before_key, before_csrf = session.session_key, client.cookies["csrftoken"].value
    assert client.post(reverse("login"), {"username": "alice", "password": "demo"}).status_code == 302
    assert client.session.session_key != before_key  # a fixated session id is useless after sign-in
    assert client.cookies["csrftoken"].value != before_csrf
    assert client.cookies["sessionid"]["max-age"] == 8 * 3600


SCRIPT_TAG = re.compile(r"<script\b([^>]*)>(.*?)</script>", re.S | re.I)
INLINE_HANDLER = re.compile(r"\son[a-z]+\s*=", re.I)


def test_no_template_has_inline_script_or_handlers() -> None:
    """Every executable script is a file from our static files: the policy allows nothing else."""
    offenders = []
    for path in sorted((ROOT / "templates").rglob("*.html")):
        text = path.read_text()
        for attrs, body in SCRIPT_TAG.findall(text):
            executable = "application/json" not in attrs
            if executable and ("src=" not in attrs or body.strip()):
                offenders.append(f"{path.relative_to(ROOT)}: inline <script{attrs}>")
        offenders += [f"{path.relative_to(ROOT)}: inline handler" for _ in INLINE_HANDLER.finditer(text)]
        offenders += [f"{path.relative_to(ROOT)}: javascript: URL" for _ in re.finditer("javascript:", text, re.I)]
    assert offenders == []


@pytest.mark.django_db
def test_pages_and_api_docs_send_the_policy(client, demo_org) -> None:
    client.force_login(demo_org.member)
    for url in (reverse("home"), reverse("billing:report-list"), reverse("api-docs")):
        response = client.get(url)
        assert response.status_code == 200, url
        assert _directives(response["Content-Security-Policy"])["script-src"] == ["'self'"], url
    # Swagger UI's start-up script is a same-origin file, not inline, so the policy lets it run.
    docs = client.get(reverse("api-docs")).content.decode()
    assert not [body for attrs, body in SCRIPT_TAG.findall(docs) if body.strip()]
    script = client.get(reverse("api-docs"), {"script": ""})
    assert script.status_code == 200 and script["Content-Type"].startswith("application/javascript")


def test_form_action_admits_the_single_sign_on_providers_origin_only() -> None:
    probe = (
        "import json, django; from django.conf import settings; django.setup(); "
        "print(json.dumps(settings.CONTENT_SECURITY_POLICY['DIRECTIVES']['form-action']))"
    )
    result = _run(["-c", probe], {**PRODUCTION_ENV, **SSO_ENV})
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout.strip().splitlines()[-1]) == ["'self'", "https://id.example.com"]
