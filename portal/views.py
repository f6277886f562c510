"""Project-level pages: the home overview and a health check for load balancers and compose."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.db import connection
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from allocations.selectors import home_overview


@login_required
def home(request: HttpRequest) -> HttpResponse:
    """The signed-in user's overview: their teams, quotas in use, and their latest requests."""
    return render(request, "home.html", home_overview(user=request.user))


@require_GET
def healthz(request: HttpRequest) -> JsonResponse:
    """Liveness and database readiness, for container healthchecks."""
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
    except Exception as exc:  # any database error means not ready
        return JsonResponse({"status": "error", "database": str(exc)}, status=503)
    return JsonResponse({"status": "ok", "database": "ok"})
