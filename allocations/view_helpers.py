"""What the page views share: the platform-admin gate and the redirect back to where a form was posted from."""

from __future__ import annotations

from typing import Any

from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect

from allocations.selectors import user_is_approver


def require_platform_admin(request: HttpRequest) -> None:
    """PermissionDenied unless the user is a platform admin (approvers and staff)."""
    if not user_is_approver(request.user):
        raise PermissionDenied("Only platform admins (approvers and staff) can do that.")


def redirect_next(request: HttpRequest, fallback: str, **kwargs: Any) -> HttpResponse:
    """Back to the posted ``next`` when it is a path on this site, else to ``fallback``."""
    target = request.POST.get("next", "")
    if target.startswith("/") and not target.startswith("//"):
        return redirect(target)
    return redirect(fallback, **kwargs)
