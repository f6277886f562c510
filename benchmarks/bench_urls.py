"""The portal's URLs plus two baselines: ``/bench/bare`` (a Django view that does nothing, the load benchmark's) and
``/bench/drf-floor`` (a DRF view that parses a JSON body and answers, the recommendation benchmark's)."""

from django.http import HttpRequest, HttpResponse
from django.urls import include, path
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView


def bare(request: HttpRequest) -> HttpResponse:
    """No database, no auth, no serializer: what Django itself costs per request."""
    return HttpResponse("ok", content_type="text/plain")


class DrfFloor(APIView):
    """What any DRF endpoint pays before its own work, with the portal's authentication, permission and throttle
    classes: the middleware, DRF's dispatch, parsing the body and rendering a small answer."""

    def post(self, request: Request) -> Response:
        return Response({"fields": len(request.data)})


urlpatterns = [
    path("bench/bare", bare),
    path("bench/drf-floor", DrfFloor.as_view()),
    path("", include("portal.urls")),
]
