"""Branded 404 and 500 pages while DEBUG is on (``make run``): Django answers those with its technical pages then,
which show settings and code to whoever tries the demo. ``PORTAL_DEBUG_ERROR_PAGES=1`` brings them back for a
developer; the traceback of a 500 is in the server's log either way (Django logs it before any middleware sees it).
"""

from __future__ import annotations

from collections.abc import Callable

from django.conf import settings
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseBase
from django.views.defaults import server_error

from portal.views import page_not_found

API_PREFIX = "/api/"


class BrandedErrorPagesMiddleware:
    """Under DEBUG, a browser's 404 or 500 page (HTML, not the API's JSON) becomes the portal's own."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponseBase]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponseBase:
        response = self.get_response(request)
        if not settings.DEBUG or settings.PORTAL_DEBUG_ERROR_PAGES:
            return response  # without DEBUG, handler404 and handler500 already answer
        if response.status_code not in (404, 500) or request.path.startswith(API_PREFIX):
            return response
        if not response.get("Content-Type", "").startswith("text/html"):
            return response
        if response.status_code == 404:
            return page_not_found(request, Http404())
        branded: HttpResponse = server_error(request)
        return branded
