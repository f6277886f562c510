"""The portal's own middleware: NUL characters refused once, and django-csp's header built once per process.

Input with a NUL character is refused once, here, before any view, form, serializer or filter reads it. PostgreSQL
text cannot hold NUL (a query carrying one fails: a 500), and nothing the portal stores contains one. So a query
parameter, form field or JSON body value with a NUL is answered 400 naming the field (DRF's shape under ``/api/``,
the 400 page elsewhere), and a path with one names no object: 404.
"""

from __future__ import annotations

import http.client
import json
from collections.abc import Callable, Iterable
from typing import Any

from csp.constants import HEADER, HEADER_REPORT_ONLY
from csp.middleware import CheckableLazyObject, CSPMiddleware
from csp.utils import build_policy
from django.conf import settings
from django.core.exceptions import BadRequest
from django.core.signals import setting_changed
from django.dispatch import receiver
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseBase, JsonResponse, QueryDict
from rest_framework.settings import api_settings

NUL = "\x00"
NUL_MESSAGE = "Null characters are not allowed."
API_PREFIX = "/api/"


def _has_nul(value: object) -> bool:
    if isinstance(value, str):
        return NUL in value
    if isinstance(value, dict):
        return any(_has_nul(key) or _has_nul(item) for key, item in value.items())
    if isinstance(value, list):
        return any(_has_nul(item) for item in value)
    return False


def _bad_keys(pairs: Iterable[tuple[str, object]]) -> set[str]:
    return {key for key, value in pairs if NUL in key or _has_nul(value)}


def nul_fields(request: HttpRequest) -> list[str]:
    """The names of the query parameters and body fields that carry a NUL (in the name or the value), NUL removed."""
    bad = _bad_keys(request.GET.lists())
    content_type = request.content_type or ""
    if content_type == "application/json" or content_type.endswith("+json"):
        try:
            body = json.loads(request.body or b"null")
        except ValueError:
            body = None  # the parser answers 400 for a malformed body
        if isinstance(body, dict):
            bad |= _bad_keys(body.items())
        elif _has_nul(body):
            bad.add(api_settings.NON_FIELD_ERRORS_KEY)
    elif content_type == "application/x-www-form-urlencoded":
        form = request.POST if request.method == "POST" else QueryDict(request.body)
        bad |= _bad_keys(form.lists())
    elif content_type == "multipart/form-data" and request.method == "POST":
        bad |= _bad_keys(request.POST.lists())
    return sorted(key.replace(NUL, "") for key in bad)


class RejectNulCharactersMiddleware:
    """400 naming each field that carries a NUL; 404 for a path with one."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        api = request.path_info.startswith(API_PREFIX)
        if NUL in request.path_info:
            if api:
                return JsonResponse({"detail": "Not found."}, status=404)
            raise Http404("No page has a null character in its address.")
        fields = nul_fields(request)
        if fields:
            if api:
                return JsonResponse({field: [NUL_MESSAGE] for field in fields}, status=400)
            raise BadRequest(f"{', '.join(fields)}: {NUL_MESSAGE}")
        return self.get_response(request)


# What a view can set on its response to change the policy (django-csp's decorators); none of the portal's views do.
_PER_RESPONSE_POLICY = (
    "_csp_config",
    "_csp_update",
    "_csp_replace",
    "_csp_config_ro",
    "_csp_update_ro",
    "_csp_replace_ro",
)
_CSP_SETTINGS = ("CONTENT_SECURITY_POLICY", "CONTENT_SECURITY_POLICY_REPORT_ONLY")
_settings_policies: dict[str, str] = {}


@receiver(setting_changed)
def _forget_csp_policies(*, setting: str, **_: Any) -> None:
    if setting in _CSP_SETTINGS:
        _settings_policies.clear()


def _settings_policy(setting: str) -> str:
    """django-csp's header for the settings alone (no per-view policy, no nonce), built once per process."""
    policy = _settings_policies.get(setting)
    if policy is None:
        policy = _settings_policies[setting] = build_policy(report_only=setting != "CONTENT_SECURITY_POLICY")
    return policy


class ContentSecurityPolicyMiddleware(CSPMiddleware):
    """django-csp's middleware, with the policy that comes from the settings alone built once per process.

    django-csp builds both headers from the settings on every response, a noticeable part of a small API call. A
    response that carries no per-view policy, to a request that drew no nonce, gets exactly the settings' policy, so
    that one is kept (and rebuilt when a test changes the settings); anything else is django-csp's own code.
    """

    def process_response(self, request: HttpRequest, response: HttpResponseBase) -> HttpResponseBase:
        if getattr(request, "_csp_nonce", None) is not None or any(
            getattr(response, name, None) is not None for name in _PER_RESPONSE_POLICY
        ):
            return super().process_response(request, response)
        debug_codes = (http.client.INTERNAL_SERVER_ERROR, http.client.NOT_FOUND)
        if response.status_code in debug_codes and settings.DEBUG:
            return response
        for setting, header, exempt in (
            ("CONTENT_SECURITY_POLICY", HEADER, "_csp_exempt"),
            ("CONTENT_SECURITY_POLICY_REPORT_ONLY", HEADER_REPORT_ONLY, "_csp_exempt_ro"),
        ):
            policy = _settings_policy(setting)
            if not policy or header in response or getattr(response, exempt, False) is not False:
                continue
            prefixes = (getattr(settings, setting, None) or {}).get("EXCLUDE_URL_PREFIXES", None) or ()
            if not request.path_info.startswith(tuple(prefixes)):
                response[header] = policy
        # As django-csp does: a nonce drawn after the header is written could not be in it, so it is an error.
        request.csp_nonce = CheckableLazyObject(self._csp_nonce_post_response)  # type: ignore[attr-defined]
        return response
