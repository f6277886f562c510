"""The audit page for platform admins: filters, pagination, each change as field: before -> after, and CSV."""

from __future__ import annotations

import json
from typing import Any

from django.conf import settings
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.core.paginator import Paginator
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from audit.filtersets import AuditEventFilterSet
from audit.models import AuditEvent
from audit.selectors import audit_events_visible_to, audit_object_types, user_can_read_audit

PAGE_SIZE = 50


def _text(value: Any) -> str:
    if value is None:
        return "—"
    return value if isinstance(value, str) else json.dumps(value, sort_keys=True)


def _changes(event: AuditEvent) -> list[tuple[str, str, str]]:
    """(field, before, after) for each field the event holds."""
    before, after = event.before or {}, event.after or {}
    names = sorted(before.keys() | after.keys())
    return [(name, _text(before.get(name)), _text(after.get(name))) for name in names]


@login_required
def audit_event_list(request: HttpRequest) -> HttpResponse:
    """Every audited write, newest first, filtered by actor, object type, source, action and time (platform admins)."""
    if not user_can_read_audit(request.user):
        raise PermissionDenied("Only platform admins can read the audit trail.")
    filterset = AuditEventFilterSet(request.GET, queryset=audit_events_visible_to(user=request.user))
    events = filterset.qs if filterset.is_valid() else AuditEvent.objects.none()
    page = Paginator(events.select_related(None), PAGE_SIZE).get_page(request.GET.get("page"))
    query = request.GET.copy()
    query.pop("page", None)
    context = {
        "filterset": filterset,
        "page": page,
        "rows": [(event, _changes(event)) for event in page.object_list],
        "object_types": audit_object_types(),
        "query": query.urlencode(),
        "retention_days": settings.AUDIT_RETENTION_DAYS,
        "csv_query": (query.urlencode() + "&" if query else "") + "format=csv",
    }
    return render(request, "audit/event_list.html", context, status=200 if filterset.is_valid() else 400)
