"""The API's one exception handler (``REST_FRAMEWORK["EXCEPTION_HANDLER"]``): every app's errors in DRF's shape.

Services and selectors raise plain Python and Django errors; no API view translates them by hand:

- Django ``ValidationError`` -> 400 ``{"field": ["message", ...]}`` (a message that names no field goes under
  ``non_field_errors``);
- Django ``PermissionDenied`` -> 403 with the service's reason;
- ``ObjectDoesNotExist`` (a selector found nothing the user may see) -> 404;
- ``allocations.lifecycle.InvalidTransition``, ``allocations.clusters.services.InUse``, a MIG plan's
  ``InvalidPlanTransition`` and the core's ``ManifestError`` (objects that cannot be rendered) -> 409 with the reason;
- ``allocations.clusters.gateways.base.GatewayError`` (a cluster that could not be read or written) -> 502 with the
  reason;
- ``allocations.requests.idempotency.IdempotencyKeyReused`` -> 422;
- DRF's ``ValidationError`` whose only complaint is a referenced object that does not exist (or is not the
  caller's: a team slug, quota id, cluster name), and the core's ``ProfileError`` raised when a well-formed profile
  is judged (an unknown GPU model or SLA tier, more GPUs than any node holds, nothing that fits) -> 422 in the same
  ``{"field": [...]}`` shape: the input is well formed, as the schema says, but cannot be served
  (``portal.api_schema`` documents it);
- the database's ``OperationalError``/``InterfaceError`` (it cannot be reached) -> 503 with ``Retry-After``
  (``portal.database_unavailable``).
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

from allocations.clusters.gateways.base import GatewayError
from allocations.clusters.services import InUse
from allocations.lifecycle import InvalidTransition
from allocations.mig_plans.events import InvalidPlanTransition
from allocations.requests.idempotency import IdempotencyKeyReused
from gpucore.decision import ProfileError
from gpucore.manifests.naming import ManifestError
from portal.database_unavailable import (
    UNAVAILABLE_CODE,
    UNAVAILABLE_DETAIL,
    is_database_unavailable,
    log_unavailable,
    retry_after,
)


class Conflict(exceptions.APIException):
    """409: the object's current state (a request's status, a cluster in use) does not allow the action."""

    status_code = status.HTTP_409_CONFLICT
    default_detail = "The request's status does not allow this action."
    default_code = "invalid_transition"


class ClusterUnreachable(exceptions.APIException):
    """502: the cluster's API server (or GitOps tree) could not be read or written; the message says why."""

    status_code = status.HTTP_502_BAD_GATEWAY
    default_detail = "The cluster could not be reached."
    default_code = "cluster_unreachable"


class DatabaseUnavailable(exceptions.APIException):
    """503: the database cannot be reached; nothing was changed and the client may retry after ``Retry-After``."""

    status_code = status.HTTP_503_SERVICE_UNAVAILABLE
    default_detail = UNAVAILABLE_DETAIL
    default_code = UNAVAILABLE_CODE


class Unprocessable(exceptions.ValidationError):
    """422: each field in error names an object that does not exist or is not the caller's, or asks for what no
    pool can serve; the input itself is well formed."""

    status_code = status.HTTP_422_UNPROCESSABLE_ENTITY


def _codes(codes: Any) -> list[str]:
    if isinstance(codes, dict):
        return [code for value in codes.values() for code in _codes(value)]
    if isinstance(codes, list):
        return [code for value in codes for code in _codes(value)]
    return [codes]


UNPROCESSABLE_CODES = frozenset({"does_not_exist", "unservable"})


def _only_unprocessable(exc: exceptions.ValidationError) -> bool:
    codes = _codes(exc.get_codes())
    return bool(codes) and all(code in UNPROCESSABLE_CODES for code in codes)


class UnprocessableEntity(exceptions.APIException):
    """422: a well-formed request the server will not apply (an Idempotency-Key reused with another body)."""

    status_code = status.HTTP_422_UNPROCESSABLE_ENTITY
    default_detail = "The request cannot be applied."
    default_code = "unprocessable"


def api_error(exc: Exception) -> Exception:
    """The DRF exception a domain error is answered with (the error itself when DRF already knows it)."""
    answer = _translated(exc)
    if type(answer) is exceptions.ValidationError and _only_unprocessable(answer):
        return Unprocessable(answer.detail)
    return answer


def _translated(exc: Exception) -> Exception:
    if isinstance(exc, (InvalidTransition, InUse, InvalidPlanTransition, ManifestError)):
        return Conflict(str(exc))
    if isinstance(exc, IdempotencyKeyReused):
        return UnprocessableEntity(str(exc), code="idempotency_key_reused")
    if isinstance(exc, GatewayError):
        return ClusterUnreachable(f"The cluster could not be read: {exc}")
    if isinstance(exc, ProfileError):
        # Field parsing answers its ProfileError in the serializer (a 400); one raised here came from judging a
        # well-formed profile against the catalog, tiers and pools.
        return Unprocessable(exc.errors)
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
    if is_database_unavailable(exc):
        log_unavailable(exc, context["request"])
        response = exception_handler(DatabaseUnavailable(), context)
        if response is not None:
            response.data = {"detail": UNAVAILABLE_DETAIL, "code": UNAVAILABLE_CODE}
            response["Retry-After"] = retry_after()
            response["Cache-Control"] = "no-store"
        return response
    return exception_handler(api_error(exc), context)
