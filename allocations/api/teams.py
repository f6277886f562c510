"""The teams API: the teams a user may see, their members and their quotas: used / nominal / borrowing."""

from __future__ import annotations

from typing import Any

from django.db.models import QuerySet
from drf_spectacular.utils import extend_schema, extend_schema_view
from rest_framework import viewsets
from rest_framework.filters import OrderingFilter, SearchFilter
from rest_framework.request import Request
from rest_framework.response import Response

from allocations.api.common import AUTH_ERRORS, ERROR, FIELD_ERRORS, ServiceApiMixin
from allocations.api.team_serializers import TeamSerializer
from allocations.models import Team
from allocations.selectors import with_members_and_quotas
from allocations.teams.quota_usage import quota_usage_by_quota
from infra.scoping import ScopedViewMixin


@extend_schema_view(
    list=extend_schema(
        summary="Teams you may see, with members and quota use",
        responses={200: TeamSerializer(many=True), 400: FIELD_ERRORS, 404: ERROR, **AUTH_ERRORS},
    ),
    retrieve=extend_schema(summary="One team", responses={200: TeamSerializer, 404: ERROR, **AUTH_ERRORS}),
)
@extend_schema(tags=["teams"])
class TeamViewSet(ScopedViewMixin, ServiceApiMixin, viewsets.ReadOnlyModelViewSet):
    """Teams the user belongs to (approvers: every team), their members and quotas (used / nominal / borrowing)."""

    serializer_class = TeamSerializer
    lookup_field = "slug"
    # Anything up to the next slash reaches the view, so a malformed slug is DRF's JSON 404, not Django's HTML one.
    lookup_value_regex = r"[^/]+"
    filter_backends = [SearchFilter, OrderingFilter]
    search_fields = ["slug", "name"]
    ordering_fields = ["slug", "name"]
    ordering = ["name"]
    scoped_model = Team

    def get_queryset(self) -> QuerySet[Team]:
        return with_members_and_quotas(super().get_queryset())

    def _serialize(self, teams: list[Team], *, many: bool) -> Any:
        quotas = [quota for team in teams for quota in team.quotas.all()]
        context = {**self.get_serializer_context(), "quota_usage": quota_usage_by_quota(quotas=quotas)}
        serializer = TeamSerializer(teams if many else teams[0], many=many, context=context)
        return serializer.data

    def list(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        """A page of visible teams; quota use is read in one query for the whole page."""
        queryset = self.filter_queryset(self.get_queryset())
        page = self.paginate_queryset(queryset)
        if page is not None:
            return self.get_paginated_response(self._serialize(list(page), many=True))
        return Response(self._serialize(list(queryset), many=True))

    def retrieve(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        """One visible team by slug."""
        return Response(self._serialize([self.get_object()], many=False))
