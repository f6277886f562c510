"""What the portal answers while its database cannot be reached: 503 with ``Retry-After``, never a 500.

During a PostgreSQL restart or failover a query fails with the driver's ``OperationalError`` (connection refused,
terminated by the administrator, server closed the connection) or ``InterfaceError`` (the connection is already
closed). A change either committed whole or not at all (each is one transaction); a retry of a submission that sends
the same ``Idempotency-Key`` is never applied twice (``allocations.requests.idempotency``). The API
answers JSON 503 ``{"detail", "code": "database_unavailable"}`` and pages the branded 503 page, both with
``Retry-After: DATABASE_RETRY_AFTER_SECONDS``. Django closes the broken connection at the end of the request, so the
next request reconnects.

Three places catch it: the API's exception handler (DRF views), ``DatabaseUnavailableMiddleware.process_exception``
(any other view), and ``server_error`` (handler500), for a failure in a middleware, such as saving the session.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Callable

from django.conf import settings
from django.db import InterfaceError, OperationalError
from django.http import HttpRequest, HttpResponse, HttpResponseBase, JsonResponse
from django.template import loader
from django.views.decorators.csrf import requires_csrf_token
from django.views.defaults import server_error as django_server_error

logger = logging.getLogger(__name__)

API_PREFIX = "/api/"
DATABASE_ERRORS = (OperationalError, InterfaceError)
UNAVAILABLE_DETAIL = (
    "The portal's database cannot be reached right now; try again shortly. A POST sent with an Idempotency-Key "
    "can be sent again with the same key: it is not applied twice."
)
UNAVAILABLE_CODE = "database_unavailable"


# SQLite raises OperationalError for a schema without its migrations too: a fault to see (a 500 with its
# traceback), not an outage to wait out.
SCHEMA_NOT_MIGRATED = ("no such table", "no such column")


def is_database_unavailable(exc: BaseException | None) -> bool:
    """Whether an error means the database could not be reached (rather than a bug or bad input)."""
    return isinstance(exc, DATABASE_ERRORS) and not str(exc).startswith(SCHEMA_NOT_MIGRATED)


def retry_after() -> str:
    """The ``Retry-After`` value, in seconds."""
    return str(settings.DATABASE_RETRY_AFTER_SECONDS)


def log_unavailable(exc: BaseException, request: HttpRequest) -> None:
    # A warning, not an error with a traceback: the readiness probe already reports the database, and the driver's
    # text (host, port) stays in the log.
    logger.warning("Database unavailable during %s %s: %s: %s", request.method, request.path, type(exc).__name__, exc)


def unavailable_response(request: HttpRequest) -> HttpResponse:
    """JSON 503 under ``/api/``, the branded 503 page elsewhere; both say when to retry and are never cached."""
    response: HttpResponse
    if request.path_info.startswith(API_PREFIX):
        response = JsonResponse({"detail": UNAVAILABLE_DETAIL, "code": UNAVAILABLE_CODE}, status=503)
    else:
        # Rendered without the request: context processors read the user and the session, from the database.
        response = HttpResponse(loader.render_to_string("503.html", {"retry_after": retry_after()}), status=503)
    response["Retry-After"] = retry_after()
    response["Cache-Control"] = "no-store"
    return response


class DatabaseUnavailableMiddleware:
    """A view that fails because the database cannot be reached answers 503 (see the module's docstring)."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponseBase]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponseBase:
        return self.get_response(request)

    def process_exception(self, request: HttpRequest, exception: Exception) -> HttpResponse | None:
        if not is_database_unavailable(exception):
            return None
        log_unavailable(exception, request)
        return unavailable_response(request)


@requires_csrf_token
def server_error(request: HttpRequest) -> HttpResponse:
    """handler500: the 503 answer when the uncaught error is the database's (raised outside a view), else the 500
    page."""
    exc = sys.exc_info()[1]
    if is_database_unavailable(exc):
        return unavailable_response(request)
    response: HttpResponse = django_server_error(request)
    return response
