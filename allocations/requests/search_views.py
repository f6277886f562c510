"""The header's search box."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from allocations.requests.search_pages import global_search


@login_required
@require_GET
def search(request: HttpRequest) -> HttpResponse:
    """The header's search box: requests, teams and clusters the user may see, by name (requests also by id)."""
    return render(request, "allocations/search.html", global_search(user=request.user, query=request.GET.get("q", "")))
