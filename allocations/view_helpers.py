"""What the page views share: the platform-admin and approver gates, the request a user may see (else a 404), a
service error as one sentence, and the redirect back to where a form was posted from."""

from __future__ import annotations

from typing import Any

from django.core.exceptions import PermissionDenied, ValidationError
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect

from allocations.models import GpuRequest
from allocations.selectors import gpu_request_detail, gpu_requests_visible_to, user_is_approver


def require_platform_admin(request: HttpRequest) -> None:
    """PermissionDenied unless the user is a platform admin (approvers and staff)."""
    if not user_is_approver(request.user):
        raise PermissionDenied("Only platform admins (approvers and staff) can do that.")


def require_approver(request: HttpRequest) -> None:
    """PermissionDenied unless the user is a platform approver (the approval queue and its decisions)."""
    if not user_is_approver(request.user):
        raise PermissionDenied("Only platform approvers can see the approval queue.")


def redirect_next(request: HttpRequest, fallback: str, **kwargs: Any) -> HttpResponse:
    """Back to the posted ``next`` when it is a path on this site, else to ``fallback``."""
    target = request.POST.get("next", "")
    if target.startswith("/") and not target.startswith("//"):
        return redirect(target)
    return redirect(fallback, **kwargs)


def after_review(request: HttpRequest) -> HttpResponse:
    """Back to the approval queue (or the posted ``next``) after a decision on a request or an extension."""
    return redirect_next(request, "allocations:approvals")


def error_text(error: Exception) -> str:
    """One readable sentence from a service error (ValidationError lists, PermissionDenied, InvalidTransition)."""
    if isinstance(error, ValidationError):
        return " ".join(error.messages)
    return str(error) or "You are not allowed to do that."


def visible_request(request: HttpRequest, pk: int, *, with_events: bool = False) -> GpuRequest:
    """The request if the user may see it, else a 404 (other teams' requests do not exist for them); its events
    fetched too for the page (the status refresh, the download and the actions do not read them)."""
    try:
        if with_events:
            return gpu_request_detail(user=request.user, pk=pk)
        return gpu_requests_visible_to(user=request.user).get(pk=pk)
    except GpuRequest.DoesNotExist as exc:
        raise Http404("No such request in your teams.") from exc
