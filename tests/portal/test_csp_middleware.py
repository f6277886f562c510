"""The portal's Content-Security-Policy middleware sends exactly django-csp's headers (it only keeps the settings'
policy built between responses)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from csp.constants import HEADER, HEADER_REPORT_ONLY
from csp.exceptions import CSPNonceError
from csp.middleware import CSPMiddleware
from django.http import HttpRequest, HttpResponse
from django.test import RequestFactory, override_settings

from portal.middleware import ContentSecurityPolicyMiddleware

REPORT_ONLY = {"DIRECTIVES": {"default-src": ["'none'"], "report-uri": "/csp-report"}, "EXCLUDE_URL_PREFIXES": ["/x"]}


def _headers(middleware_class: type[CSPMiddleware], path: str, touch: Callable[[HttpRequest, HttpResponse], Any]):
    request = RequestFactory().get(path)
    response = HttpResponse("ok")
    middleware = middleware_class(lambda _: response)
    middleware.process_request(request)
    touch(request, response)
    middleware.process_response(request, response)
    return {name: response.get(name) for name in (HEADER, HEADER_REPORT_ONLY)}


def _nothing(request: HttpRequest, response: HttpResponse) -> None:
    return None


def _nonce(request: HttpRequest, response: HttpResponse) -> None:
    str(request.csp_nonce)  # type: ignore[attr-defined]


def _update(request: HttpRequest, response: HttpResponse) -> None:
    response._csp_update = {"img-src": ["https://example.com"]}  # type: ignore[attr-defined]


def _exempt(request: HttpRequest, response: HttpResponse) -> None:
    response._csp_exempt = True  # type: ignore[attr-defined]


def _preset(request: HttpRequest, response: HttpResponse) -> None:
    response[HEADER] = "default-src 'self'"


@pytest.mark.parametrize("touch", [_nothing, _nonce, _update, _exempt, _preset])
@pytest.mark.parametrize("path", ["/api/v1/recommendations/", "/", "/x/y"])
@pytest.mark.parametrize("report_only", [None, REPORT_ONLY])
def test_same_headers_as_django_csp(touch, path, report_only) -> None:
    with override_settings(CONTENT_SECURITY_POLICY_REPORT_ONLY=report_only):
        ours = _headers(ContentSecurityPolicyMiddleware, path, touch)
        theirs = _headers(CSPMiddleware, path, touch)
    assert ours == theirs
    assert bool(ours[HEADER]) is (touch is not _exempt)


def test_a_changed_policy_is_sent_at_once() -> None:
    before = _headers(ContentSecurityPolicyMiddleware, "/", _nothing)[HEADER]
    with override_settings(CONTENT_SECURITY_POLICY={"DIRECTIVES": {"default-src": ["'none'"]}}):
        assert _headers(ContentSecurityPolicyMiddleware, "/", _nothing)[HEADER] == "default-src 'none'"
    assert _headers(ContentSecurityPolicyMiddleware, "/", _nothing)[HEADER] == before


def test_a_nonce_drawn_after_the_header_is_an_error() -> None:
    request = RequestFactory().get("/")
    middleware = ContentSecurityPolicyMiddleware(lambda _: HttpResponse())
    middleware.process_request(request)
    middleware.process_response(request, HttpResponse())
    with pytest.raises(CSPNonceError):
        str(request.csp_nonce)  # type: ignore[attr-defined]


def test_it_is_the_portals_middleware(settings) -> None:
    assert "portal.middleware.ContentSecurityPolicyMiddleware" in settings.MIDDLEWARE
    assert "csp.middleware.CSPMiddleware" not in settings.MIDDLEWARE
