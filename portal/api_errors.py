"""The API's one exception handler (``REST_FRAMEWORK["EXCEPTION_HANDLER"]``): every app's errors in DRF's shape.

Services and selectors raise plain Python and Django errors; no API view translates them by hand:

- Django ``ValidationError`` and the core's ``ProfileError`` -> 400 ``{"field": ["message", ...]}`` (a message that
  names no field goes under ``non_field_errors``);
- Django ``PermissionDenied`` -> 403 with the service's reason;
- ``ObjectDoesNotExist`` (a selector found nothing the user may see) -> 404;
- ``allocations.lifecycle.InvalidTransition`` and ``allocations.cluster_services.InUse`` -> 409 with the reason.
"""

from __future__ import annotations

from typing import Any

from django.core.exceptions import ObjectDoesNotExist
from django.core.exceptions import PermissionDenied as DjangoPermissionDenied
from django.core.exceptions import ValidationError as DjangoValidationError
from rest_framework import exceptions, status
from rest_framework.fields import get_error_detail
from rest_framework.response import Response
from rest_framework.settings import api_settings
from rest_framework.views import exception_handler

from allocations.cluster_services import InUse
from allocations.lifecycle import InvalidTransition
from gpucore.decision import ProfileError


class Conflict(exceptions.APIException):
    """409: the object's current state (a request's status, a cluster in use) does not allow the action."""

    status_code = status.HTTP_409_CONFLICT
    default_detail = "The request's status does not allow this action."
    default_code = "invalid_transition"


def api_error(exc: Exception) -> Exception:
    """The DRF exception a domain error is answered with (the error itself when DRF already knows it)."""
    if isinstance(exc, (InvalidTransition, InUse)):
        return Conflict(str(exc))
    if isinstance(exc, ProfileError):
        return exceptions.ValidationError(exc.errors)
    if isinstance(exc, DjangoValidationError):
        detail = get_error_detail(exc)
        if not isinstance(detail, dict):
            detail = {api_settings.NON_FIELD_ERRORS_KEY: detail}
        return exceptions.ValidationError(detail)
    if isinstance(exc, DjangoPermissionDenied):
        return exceptions.PermissionDenied(str(exc) or None)
    if isinstance(exc, ObjectDoesNotExist):
        return exceptions.NotFound()
    return exc


def api_exception_handler(exc: Exception, context: dict[str, Any]) -> Response | None:
    """DRF's handler, after translating the domain's errors (None: an unexpected error, a 500)."""
    return exception_handler(api_error(exc), context)
