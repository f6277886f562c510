"""One FilterSet per model, shared by the browser lists and the API (netbox's pattern).

Values are made safe for PostgreSQL here, once, for both: a time's UTC offset beyond +/-15:59 is refused by the
database (``time zone displacement out of range``), so times are normalized to UTC. (A NUL character never gets
here: ``portal.middleware.RejectNulCharactersMiddleware`` answers 400 first.)
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from typing import Any

import django_filters
from django import forms
from django.db.models import Q, QuerySet
from django.db.models.fields.json import KT
from django.http import HttpRequest
from django_filters.fields import IsoDateTimeField

from allocations.models import GpuRequest, RequestStatus, SlaTier, Team, WorkloadType
from allocations.selectors import teams_visible_to

# A request's workload as kubectl shows it (``gpr-12``) or as the portal writes it (``#12``).
WORKLOAD_NUMBER = re.compile(r"(?:gpr-|#)?(\d{1,18})", re.IGNORECASE)


class UtcIsoDateTimeField(IsoDateTimeField):
    """An ISO 8601 date-time converted to UTC; one that falls outside the calendar in UTC is invalid."""

    def to_python(self, value: Any) -> datetime | None:
        result = super().to_python(value)
        if result is None:
            return None
        try:
            return result.astimezone(UTC)
        except OverflowError:
            raise forms.ValidationError(self.error_messages["invalid"], code="invalid") from None


class UtcIsoDateTimeFilter(django_filters.IsoDateTimeFilter):
    """``IsoDateTimeFilter`` whose value reaches the database in UTC."""

    field_class = UtcIsoDateTimeField


def teams_the_caller_sees(request: HttpRequest | None) -> QuerySet[Team]:
    """The team filter's choices: another team's slug is as unknown as one that does not exist, so the answer
    cannot tell whether a team the caller may not see exists."""
    if request is None:
        return Team.objects.none()
    return teams_visible_to(request.user)


class GpuRequestFilterSet(django_filters.FilterSet):
    """Filter requests by status, team, SLA tier, workload type, creation date, and search them (``search``)."""

    q = django_filters.CharFilter(method="search", label="Search")
    status = django_filters.MultipleChoiceFilter(choices=RequestStatus.choices)
    team = django_filters.ModelChoiceFilter(
        field_name="team", to_field_name="slug", queryset=teams_the_caller_sees, label="Team"
    )
    sla_tier = django_filters.ModelChoiceFilter(
        field_name="sla_tier", to_field_name="slug", queryset=SlaTier.objects.all(), label="SLA tier"
    )
    workload_type = django_filters.ChoiceFilter(choices=WorkloadType.choices)
    created_after = UtcIsoDateTimeFilter(field_name="created_at", lookup_expr="gte")
    created_before = UtcIsoDateTimeFilter(field_name="created_at", lookup_expr="lt")

    class Meta:
        model = GpuRequest
        fields = ["q", "status", "team", "sla_tier", "workload_type", "created_after", "created_before"]

    def search(self, queryset: QuerySet[GpuRequest], name: str, value: str) -> QuerySet[GpuRequest]:
        """Name or purpose, the workload's name on the cluster (``gpr-12``, or ``#12``), the GPU model placed or asked
        for, the pool or its cluster, the team's namespace, and the requester's username."""
        value = value.strip()
        if not value:
            return queryset
        matches = (
            Q(name__icontains=value)
            | Q(purpose__icontains=value)
            | Q(gpu_model_requested__icontains=value)
            | Q(spec_gpu_model__icontains=value)
            | Q(node_pool__name__icontains=value)
            | Q(cluster__name__icontains=value)
            | Q(team__namespace__icontains=value)
            | Q(requester__username__icontains=value)
        )
        if (number := WORKLOAD_NUMBER.fullmatch(value)) is not None:
            matches |= Q(pk=int(number.group(1)))
        return queryset.alias(spec_gpu_model=KT("spec__gpu_model")).filter(matches)
