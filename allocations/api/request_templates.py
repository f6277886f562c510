"""The request templates API: the presets a user may start a request from (organisation-wide and their teams'),
and their management by platform admins and team leads."""

from __future__ import annotations

from typing import Any

from django.db.models import Q, QuerySet
from drf_spectacular.utils import OpenApiParameter, extend_schema, extend_schema_field, extend_schema_view
from rest_framework import serializers, status, viewsets
from rest_framework.exceptions import NotFound
from rest_framework.parsers import JSONParser
from rest_framework.request import Request
from rest_framework.response import Response

from allocations.api.common import AUTH_ERRORS, ERROR, FIELD_ERRORS, ServiceApiMixin
from allocations.api.serializers import ProfileInputSerializer, VisibleTeamField
from allocations.models import RequestTemplate, Team
from allocations.request_templates.services import request_template_delete, request_template_save
from infra.scoping import ScopedViewMixin


class TemplateProfileSerializer(ProfileInputSerializer):
    """A template's profile: the workload profile's fields (no cluster), as the template's ``clean`` checks them."""

    cluster = None


@extend_schema_field(TemplateProfileSerializer)
class _ProfileField(serializers.JSONField):
    """A workload profile, stored as JSON; the template's save checks it."""


class RequestTemplateSerializer(serializers.ModelSerializer):
    """A template: its name, scope (``team`` slug, null for every team) and the values it fills in."""

    team = VisibleTeamField(slug_field="slug", queryset=Team.objects.all(), allow_null=True, required=False)
    profile = _ProfileField(help_text="Workload profile fields, as POST /api/v1/requests/ takes them.")
    command = serializers.ListField(child=serializers.CharField(allow_blank=True), required=False)

    class Meta:
        model = RequestTemplate
        fields = ["id", "name", "description", "team", "profile", "purpose", "image", "command", "updated_at"]
        read_only_fields = ["id", "updated_at"]
        # The service checks the name is free in the scope (one message, with the field).
        validators: list[Any] = []


TEAM_PARAMETER = OpenApiParameter(
    "team", str, description="Only the templates offered to this team (its own and the organisation-wide ones)."
)


@extend_schema_view(
    list=extend_schema(
        summary="Templates you may start a request from",
        parameters=[TEAM_PARAMETER],
        responses={200: RequestTemplateSerializer(many=True), 404: ERROR, **AUTH_ERRORS},
    ),
    retrieve=extend_schema(
        summary="One template", responses={200: RequestTemplateSerializer, 404: ERROR, **AUTH_ERRORS}
    ),
    create=extend_schema(
        summary="Create a template (platform admins; team leads for their team)",
        responses={201: RequestTemplateSerializer, 400: FIELD_ERRORS, **AUTH_ERRORS},
    ),
    update=extend_schema(
        summary="Change a template",
        responses={200: RequestTemplateSerializer, 400: FIELD_ERRORS, 404: ERROR, **AUTH_ERRORS},
    ),
    partial_update=extend_schema(
        summary="Change some fields of a template",
        responses={200: RequestTemplateSerializer, 400: FIELD_ERRORS, 404: ERROR, **AUTH_ERRORS},
    ),
    destroy=extend_schema(summary="Delete a template", responses={204: None, 404: ERROR, **AUTH_ERRORS}),
)
@extend_schema(tags=["templates"])
class RequestTemplateViewSet(ScopedViewMixin, ServiceApiMixin, viewsets.ModelViewSet):
    """Organisation-wide templates and those of the teams the caller may see; another team's template is 404."""

    serializer_class = RequestTemplateSerializer
    scoped_model = RequestTemplate
    # A template's profile is a JSON object, which a form field cannot carry as the schema states it: JSON only.
    parser_classes = [JSONParser]
    lookup_value_regex = r"[^/]+"

    def get_queryset(self) -> QuerySet[RequestTemplate]:
        templates = super().get_queryset().order_by("name", "id")
        slug = self.request.query_params.get("team") if self.action == "list" else None
        if slug:
            team = self.visible(Team).filter(slug=slug).first()
            if team is None:
                raise NotFound(f"team: no team {slug!r} among yours.")
            templates = templates.filter(Q(team__isnull=True) | Q(team=team))
        return templates

    def create(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        body = self.get_serializer(data=request.data)
        body.is_valid(raise_exception=True)
        template = request_template_save(acting_user=request.user, **body.validated_data)
        return Response(self.get_serializer(template).data, status=status.HTTP_201_CREATED)

    def update(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        template = self.get_object()
        body = self.get_serializer(template, data=request.data, partial=kwargs.get("partial", False))
        body.is_valid(raise_exception=True)
        template = request_template_save(acting_user=request.user, template=template, **body.validated_data)
        return Response(self.get_serializer(template).data)

    def destroy(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        request_template_delete(acting_user=request.user, template=self.get_object())
        return Response(status=status.HTTP_204_NO_CONTENT)
