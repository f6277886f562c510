"""Input with a NUL character is refused once, here, before any view, form, serializer or filter reads it.

PostgreSQL text cannot hold NUL (a query carrying one fails: a 500), and nothing the portal stores contains one. So a
query parameter, form field or JSON body value with a NUL is answered 400 naming the field (DRF's shape under
``/api/``, the 400 page elsewhere), and a path with one names no object: 404.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable

from django.core.exceptions import BadRequest
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse, QueryDict
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
