"""Health checks for load balancers, compose and Kubernetes probes: readiness (database and cache) and liveness.

They are answered by a middleware placed first, before host validation and the HTTPS redirect: the kubelet probes a
pod by its IP over plain HTTP, which ``ALLOWED_HOSTS`` and ``SECURE_SSL_REDIRECT`` would otherwise turn into a 400 or
a 301 (and a 301 counts as success to a probe, so it would check nothing).
"""

from __future__ import annotations

import logging
import secrets
from collections.abc import Callable

from django.core.cache import cache
from django.db import connection
from django.http import HttpRequest, HttpResponse, JsonResponse

logger = logging.getLogger(__name__)
READY_PATH = "/healthz"
LIVE_PATH = "/healthz/live"


def _database() -> str:
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1")
    return "ok"


def _cache() -> str:
    token = secrets.token_hex(4)
    cache.set("healthz", token, timeout=10)
    if cache.get("healthz") != token:
        return "error: a value written to the cache did not read back"
    return "ok"


def readiness() -> tuple[int, dict[str, str]]:
    """Whether this process can serve: one ``SELECT 1`` and one cache write and read.

    Only the database makes the pod unready (503): without the cache, pages and the API are served from the
    database and rate limits are not applied, so taking every pod out of the Service would turn a degraded portal
    into an outage. A cache failure answers 200 with the status ``degraded``. A failed check names only the error's
    class (the details are logged): anyone can read this answer.
    """
    report = {"status": "ok"}
    for name, check in (("database", _database), ("cache", _cache)):
        try:
            report[name] = check()
        except Exception as exc:  # any error of the dependency is reported; the probe shows which
            # The probe is unauthenticated: the driver's text (host, port, user) goes to the log, not the answer.
            logger.warning("Readiness: the %s check failed", name, exc_info=True)
            report[name] = f"error: {type(exc).__name__}"
    if report["database"] != "ok":
        report["status"] = "error"
        return 503, report
    if report["cache"] != "ok":
        report["status"] = "degraded"
    return 200, report


class HealthCheckMiddleware:
    """Answers ``GET /healthz`` (readiness) and ``GET /healthz/live`` (the process answers; no dependency)."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        if request.method in ("GET", "HEAD"):
            if request.path == READY_PATH:
                status, report = readiness()
                return JsonResponse(report, status=status)
            if request.path == LIVE_PATH:
                return JsonResponse({"status": "ok"})
        return self.get_response(request)
