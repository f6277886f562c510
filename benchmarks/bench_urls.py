"""The portal's URLs plus two yardsticks the benchmarks measure against, never served by the portal itself:
``/bench/drf-floor`` (a DRF view that parses a JSON body and answers: the floor of any endpoint) and
``/bench/page-floor`` (a signed-in page with the portal's layout and nothing in it: the floor of any page)."""

from functools import cache
from typing import Any

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.template import engines
from django.urls import include, path
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView


@cache
def _empty_page() -> Any:  # the engine's template
    return engines["django"].from_string('{% extends "base.html" %}{% block content %}{% endblock %}')


@login_required
def page_floor(request: HttpRequest) -> HttpResponse:
    """What every signed-in page pays before its own reads: the session and user, the layout (navigation, the
    approver check) and the context processors, rendered with nothing in the page."""
    return HttpResponse(_empty_page().render({}, request))


class DrfFloor(APIView):
    """What any DRF endpoint pays before its own work, with the portal's authentication, permission and throttle
    classes: the middleware, DRF's dispatch, parsing the body and rendering a small answer."""

    def post(self, request: Request) -> Response:
        return Response({"fields": len(request.data)})


urlpatterns = [
    path("bench/drf-floor", DrfFloor.as_view()),
    path("bench/page-floor", page_floor),
    path("", include("portal.urls")),
]
