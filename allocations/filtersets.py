"""One FilterSet per model, shared by the browser lists and the API (netbox's pattern)."""

from __future__ import annotations

import django_filters
from django.db.models import Q, QuerySet

from allocations.models import GpuRequest, RequestStatus, SlaTier, Team, WorkloadType


class GpuRequestFilterSet(django_filters.FilterSet):
    """Filter requests by status, team, SLA tier, workload type, creation date, and search by name or purpose."""

    q = django_filters.CharFilter(method="search", label="Search")
    status = django_filters.MultipleChoiceFilter(choices=RequestStatus.choices)
    team = django_filters.ModelChoiceFilter(
        field_name="team", to_field_name="slug", queryset=Team.objects.all(), label="Team"
    )
    sla_tier = django_filters.ModelChoiceFilter(
        field_name="sla_tier", to_field_name="slug", queryset=SlaTier.objects.all(), label="SLA tier"
    )
    workload_type = django_filters.ChoiceFilter(choices=WorkloadType.choices)
    created_after = django_filters.IsoDateTimeFilter(field_name="created_at", lookup_expr="gte")
    created_before = django_filters.IsoDateTimeFilter(field_name="created_at", lookup_expr="lt")

    class Meta:
        model = GpuRequest
        fields = ["q", "status", "team", "sla_tier", "workload_type", "created_after", "created_before"]

    def search(self, queryset: QuerySet[GpuRequest], name: str, value: str) -> QuerySet[GpuRequest]:
        value = value.strip()
        if not value:
            return queryset
        return queryset.filter(Q(name__icontains=value) | Q(purpose__icontains=value))
