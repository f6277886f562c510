"""The one FilterSet of the audit trail, shared by the page and ``/api/v1/audit-events/``."""

from __future__ import annotations

import django_filters

from audit.models import AuditAction, AuditEvent, AuditSource


class AuditEventFilterSet(django_filters.FilterSet):
    actor = django_filters.CharFilter(field_name="actor_label", lookup_expr="iexact", label="Actor (username)")
    object_type = django_filters.CharFilter(lookup_expr="iexact", label="Object type, e.g. allocations.cluster")
    object_id = django_filters.CharFilter(label="Object id")
    source = django_filters.ChoiceFilter(choices=AuditSource.choices, empty_label="any")
    action = django_filters.ChoiceFilter(choices=AuditAction.choices, empty_label="any")
    since = django_filters.DateTimeFilter(field_name="at", lookup_expr="gte", label="Since (ISO 8601 date or time)")
    until = django_filters.DateTimeFilter(field_name="at", lookup_expr="lt", label="Until (ISO 8601 date or time)")

    class Meta:
        model = AuditEvent
        fields = ["actor", "object_type", "object_id", "source", "action", "since", "until"]
