"""Attributes each web request's audited writes to the browser, the API or the admin, with the client's address."""

from __future__ import annotations

from collections.abc import Callable

from django.http import HttpRequest, HttpResponse

from audit.context import audit_context
from audit.models import AuditSource
from infra.throttling import client_ip


def _source(path: str) -> str:
    if path.startswith("/api/"):
        return AuditSource.API
    if path.startswith("/admin/"):
        return AuditSource.ADMIN
    return AuditSource.BROWSER


class AuditContextMiddleware:
    """Sets the audit context (source, path, client IP) for the request; services read it when they record."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        with audit_context(_source(request.path), detail=f"{request.method} {request.path}", ip=client_ip(request)):
            return self.get_response(request)
