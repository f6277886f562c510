"""Browser page of platform utilization: every cluster and pool, unallocated use, alerts and the capacity forecast.

Thin: everything comes from ``billing.utilization_selectors``; only platform approvers may see it (others: 403).
"""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from billing.utilization_selectors import platform_utilization


@login_required
def platform_utilization_view(request: HttpRequest) -> HttpResponse:
    """The platform utilization page (approvers only)."""
    try:
        context = platform_utilization(user=request.user)
    except PermissionError as exc:
        raise PermissionDenied(str(exc)) from exc
    return render(request, "billing/utilization_platform.html", context)
