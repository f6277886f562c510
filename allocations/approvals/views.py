"""Browser pages of the approval queue: pending requests and extensions, approved or rejected one by one or in bulk
(platform approvers)."""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied, ValidationError
from django.http import Http404, HttpRequest, HttpResponse, QueryDict
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST

from allocations.approvals.queue import approval_queue_page
from allocations.lifecycle import InvalidTransition
from allocations.models import GpuRequest, RequestStatus
from allocations.requests.forms import BulkReviewForm, ReviewForm
from allocations.requests.services import gpu_request_approve, gpu_request_reject
from allocations.selectors import gpu_requests_visible_to
from allocations.view_helpers import after_review, error_text, require_approver


@login_required
def approval_list(request: HttpRequest) -> HttpResponse:
    """Pending requests and extensions, oldest first, a page at a time and by team if asked, with quota headroom;
    approve or reject one by one or the ticked ones in bulk."""
    require_approver(request)
    context = approval_queue_page(user=request.user, params=request.GET)
    # Each section's page links keep the filter and the other section's page.
    context["requests_query"] = _without(request.GET, "page")
    context["extensions_query"] = _without(request.GET, "ext_page")
    return render(request, "allocations/approval_queue.html", context)


def _without(params: QueryDict, key: str) -> str:
    """The query string of ``params`` less ``key``."""
    query = params.copy()
    query.pop(key, None)
    return query.urlencode()


def _review(request: HttpRequest, gpu_request: GpuRequest, decision: str, comment: str) -> str | None:
    """Approve or reject through the services; returns the error to show, or None when it worked."""
    try:
        if decision == "approve":
            gpu_request_approve(request=gpu_request, acting_user=request.user, comment=comment)
        else:
            gpu_request_reject(request=gpu_request, acting_user=request.user, comment=comment)
    except (PermissionDenied, ValidationError, InvalidTransition) as exc:
        return f"#{gpu_request.pk} {gpu_request.name}: {error_text(exc)}"
    return None


def _pending(request: HttpRequest) -> Any:
    return gpu_requests_visible_to(user=request.user).filter(status=RequestStatus.PENDING_APPROVAL)


@login_required
@require_POST
def approval_review(request: HttpRequest, pk: int) -> HttpResponse:
    """Approve or reject one pending request with an optional comment (a rejection needs one)."""
    require_approver(request)
    try:
        gpu_request = gpu_requests_visible_to(user=request.user).get(pk=pk)
    except GpuRequest.DoesNotExist as exc:
        raise Http404("No such request.") from exc
    form = ReviewForm(request.POST)
    if not form.is_valid():
        messages.error(request, "Choose approve or reject.")
        return after_review(request)
    decision = form.cleaned_data["decision"]
    error = _review(request, gpu_request, decision, form.cleaned_data["comment"])
    if error:
        messages.error(request, error)
    else:
        verb = "approved" if decision == "approve" else "rejected"
        messages.success(request, f"Request #{gpu_request.pk} “{gpu_request.name}” was {verb}.")
    return after_review(request)


@login_required
@require_POST
def approval_bulk(request: HttpRequest) -> HttpResponse:
    """Approve or reject the ticked requests with one comment; each one goes through the service on its own."""
    require_approver(request)
    pending = _pending(request)
    form = BulkReviewForm(request.POST, pending_ids=list(pending.values_list("pk", flat=True)))
    if not form.is_valid():
        for errors in form.errors.values():
            for error in errors:
                messages.error(request, error)
        return redirect("allocations:approvals")
    decision, comment = form.cleaned_data["decision"], form.cleaned_data["comment"]
    done, failed = [], []
    for gpu_request in pending.filter(pk__in=form.cleaned_data["ids"]).order_by("submitted_at", "id"):
        error = _review(request, gpu_request, decision, comment)
        (failed if error else done).append(error or f"#{gpu_request.pk}")
    if done:
        verb = "Approved" if decision == "approve" else "Rejected"
        messages.success(request, f"{verb} {len(done)} request{'s' if len(done) != 1 else ''}: {', '.join(done)}.")
    for error in failed:
        messages.error(request, error)
    return redirect("allocations:approvals")
