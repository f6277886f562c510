"""The portal's URLs plus ``/bench/bare``: a view that does nothing, the baseline of the load benchmark."""

from django.http import HttpRequest, HttpResponse
from django.urls import include, path


def bare(request: HttpRequest) -> HttpResponse:
    """No database, no auth, no serializer: what Django itself costs per request."""
    return HttpResponse("ok", content_type="text/plain")


urlpatterns = [path("bench/bare", bare), path("", include("portal.urls"))]
