"""The request list's tools: its filtered rows (shared by the page and the export), the CSV export of what it shows,
the column chooser, and the requester's bulk release and cancel."""

from __future__ import annotations

import csv
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import BadRequest, PermissionDenied, ValidationError
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse, StreamingHttpResponse
from django.shortcuts import redirect
from django.utils import timezone
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.http import require_GET, require_POST

from allocations.lifecycle import InvalidTransition
from allocations.models import CANCELLABLE_STATUSES, RELEASABLE_STATUSES, GpuRequest
from allocations.requests.filtersets import GpuRequestFilterSet
from allocations.requests.list_columns import (
    DEFAULT_REQUEST_LIST_COLUMNS,
    attach_batch_values,
    chosen_columns,
    csv_cells,
    csv_header,
    save_columns,
    with_columns,
)
from allocations.requests.listing import REQUEST_LIST_DEFAULT_SORT, request_list_ordering, request_list_requests
from allocations.requests.services import gpu_request_cancel, gpu_request_release
from allocations.selectors import gpu_requests_visible_to, teams_visible_to
from allocations.view_helpers import error_text

# The export reads this many requests a statement while it streams.
EXPORT_CHUNK = 500
# The most requests one bulk action touches (a page of the list is 25).
BULK_LIMIT = 100


@dataclass
class RequestListRows:
    """The list's requests after its filters and sort, with the columns shown."""

    filterset: GpuRequestFilterSet
    rows: QuerySet[GpuRequest]
    shown: list[str]
    sort: str
    mine: bool
    teams: QuerySet[Any]
    valid: bool


def request_list_rows(request: HttpRequest) -> RequestListRows:
    """The requests the list (or its export) shows for the URL's filters and sort; BadRequest for an unknown sort."""
    user = request.user
    mine = request.GET.get("mine") == "1"
    sort = request.GET.get("sort") or REQUEST_LIST_DEFAULT_SORT
    try:
        ordering = request_list_ordering(sort)
    except ValueError as exc:
        raise BadRequest(str(exc)) from exc
    shown = chosen_columns(request)
    requests = with_columns(request_list_requests(user=user, mine=mine), shown)
    teams = teams_visible_to(user).only("slug", "name")
    filterset = GpuRequestFilterSet(request.GET, queryset=requests, request=request)
    filterset.filters["team"].queryset = teams
    valid = filterset.is_valid()
    # Invalid filters list nothing.
    rows = filterset.qs.order_by(*ordering) if valid else requests.none()
    return RequestListRows(filterset, rows, shown, sort, mine, teams, valid)


class _Echo:
    """A file-like object whose write returns the line, for csv.writer in a streamed answer."""

    def write(self, value: str) -> str:
        return value


@login_required
@require_GET
def request_list_export(request: HttpRequest) -> StreamingHttpResponse | HttpResponse:
    """Every request the list shows for these filters and sort (not only the page), in the shown columns, as CSV
    streamed in chunks. Invalid filters answer 400 naming them."""
    listed = request_list_rows(request)
    if not listed.valid:
        errors = "; ".join(f"{field}: {' '.join(msgs)}" for field, msgs in listed.filterset.errors.items())
        return HttpResponse(errors, status=400, content_type="text/plain; charset=utf-8")
    writer = csv.writer(_Echo())

    def lines() -> Iterator[str]:
        yield "\ufeff" + writer.writerow(csv_header(listed.shown))
        chunk: list[GpuRequest] = []
        for row in listed.rows.iterator(chunk_size=EXPORT_CHUNK):
            chunk.append(row)
            if len(chunk) == EXPORT_CHUNK:
                yield from _chunk_lines(writer, chunk, listed.shown)
                chunk = []
        yield from _chunk_lines(writer, chunk, listed.shown)

    response = StreamingHttpResponse(lines(), content_type="text/csv; charset=utf-8")
    stamp = timezone.now().strftime("%Y%m%d-%H%M")
    response["Content-Disposition"] = f'attachment; filename="requests-{stamp}.csv"'
    return response


def _chunk_lines(writer: Any, chunk: list[GpuRequest], shown: list[str]) -> Iterator[str]:
    attach_batch_values(chunk, shown)
    for row in chunk:
        yield writer.writerow(csv_cells(row, shown))


def _back_to_list(request: HttpRequest) -> HttpResponse:
    target = request.POST.get("next", "")
    if target and url_has_allowed_host_and_scheme(target, {request.get_host()}, require_https=request.is_secure()):
        return redirect(target)
    return redirect("allocations:request-list")


@login_required
@require_POST
def request_list_columns_save(request: HttpRequest) -> HttpResponse:
    """Keep the ticked columns as the user's choice for the list (``reset``: the defaults again)."""
    keys = DEFAULT_REQUEST_LIST_COLUMNS if "reset" in request.POST else request.POST.getlist("columns")
    try:
        save_columns(request, keys)
    except ValueError as exc:
        messages.error(request, str(exc).removeprefix("columns: "))
    return _back_to_list(request)


_BULK_ACTIONS = {
    "cancel": (gpu_request_cancel, CANCELLABLE_STATUSES, "Cancelled"),
    "release": (gpu_request_release, RELEASABLE_STATUSES, "Released"),
}


@login_required
@require_POST
def request_list_bulk(request: HttpRequest) -> HttpResponse:
    """Cancel or release the ticked requests: each through its service on its own (the requester's rules, the row
    lock), the list then says which were done and why any was not."""
    action = request.POST.get("action", "")
    if action not in _BULK_ACTIONS:
        messages.error(request, "Choose cancel or release.")
        return _back_to_list(request)
    try:
        ids = sorted({int(value) for value in request.POST.getlist("ids")})
    except ValueError:
        messages.error(request, "The ticked requests are not request numbers.")
        return _back_to_list(request)
    if not ids:
        messages.error(request, "Tick the requests to act on first.")
        return _back_to_list(request)
    if len(ids) > BULK_LIMIT:
        messages.error(request, f"Tick at most {BULK_LIMIT} requests at once.")
        return _back_to_list(request)
    service, statuses, verb = _BULK_ACTIONS[action]
    comment = request.POST.get("comment", "").strip()[:2000]
    visible = gpu_requests_visible_to(user=request.user).filter(pk__in=ids).order_by("id")
    found = {gpu_request.pk: gpu_request for gpu_request in visible}
    done: list[str] = []
    for pk in ids:
        gpu_request = found.get(pk)
        if gpu_request is None:
            messages.error(request, f"Request #{pk} was not found.")
            continue
        if gpu_request.status not in statuses:
            messages.error(
                request,
                f"#{pk} {gpu_request.name} is {gpu_request.get_status_display().lower()}: not {verb.lower()}.",
            )
            continue
        try:
            service(request=gpu_request, acting_user=request.user, comment=comment)
        except PermissionDenied as exc:
            messages.error(request, f"#{pk} {gpu_request.name}: {exc or 'only its requester or a lead may.'}")
        except (ValidationError, InvalidTransition) as exc:
            messages.error(request, f"#{pk} {gpu_request.name}: {error_text(exc)}")
        else:
            done.append(f"#{pk}")
    if done:
        plural = "s" if len(done) != 1 else ""
        messages.success(request, f"{verb} {len(done)} request{plural}: {', '.join(done)}.")
    return _back_to_list(request)
