"""Browser actions on allocation extensions: asking for more hours on a request, and an approver's decision."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied, ValidationError
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.views.decorators.http import require_POST

from allocations.lifecycle import InvalidTransition
from allocations.models import AllocationExtension
from allocations.requests.extension_services import (
    allocation_extension_decide,
    allocation_extension_request,
    hours_text,
)
from allocations.requests.forms import ExtensionRequestForm, ReviewForm
from allocations.selectors import allocation_extensions_visible_to
from allocations.view_helpers import after_review, error_text, require_approver, visible_request


@login_required
@require_POST
def request_extend(request: HttpRequest, pk: int) -> HttpResponse:
    """Ask for more hours on an approved or running allocation (requester, team lead, approver); approvers are told."""
    gpu_request = visible_request(request, pk)
    form = ExtensionRequestForm(request.POST)
    if not form.is_valid():
        for field, errors in form.errors.items():
            for error in errors:
                messages.error(request, f"{form[field].label}: {error}")
        return redirect("allocations:request-detail", pk=pk)
    try:
        extension = allocation_extension_request(request=gpu_request, acting_user=request.user, **form.cleaned_data)
    except PermissionDenied:
        raise
    except (ValidationError, InvalidTransition) as exc:
        messages.error(request, error_text(exc))
    else:
        messages.success(
            request,
            f"Extension of {hours_text(extension.hours)} h asked for request #{gpu_request.pk}: "
            "a platform approver decides it.",
        )
    return redirect("allocations:request-detail", pk=pk)


@login_required
@require_POST
def extension_review(request: HttpRequest, pk: int) -> HttpResponse:
    """Approve or reject one pending extension with an optional comment (a rejection needs one)."""
    require_approver(request)
    try:
        extension = allocation_extensions_visible_to(user=request.user).get(pk=pk)
    except AllocationExtension.DoesNotExist as exc:
        raise Http404("No such extension.") from exc
    form = ReviewForm(request.POST)
    if not form.is_valid():
        messages.error(request, "Choose approve or reject.")
        return after_review(request)
    approve = form.cleaned_data["decision"] == "approve"
    label = f"Extension of {hours_text(extension.hours)} h of request #{extension.request_id}"
    try:
        allocation_extension_decide(
            extension=extension, acting_user=request.user, approve=approve, comment=form.cleaned_data["comment"]
        )
    except (PermissionDenied, ValidationError, InvalidTransition) as exc:
        messages.error(request, f"{label}: {error_text(exc)}")
    else:
        messages.success(request, f"{label} was {'approved' if approve else 'rejected'}.")
    return after_review(request)
