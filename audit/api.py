"""``GET /api/v1/audit-events/`` (docs/security.md): platform admins read the trail, filtered, paged, or as CSV."""

from __future__ import annotations

from typing import Any

from django.http import StreamingHttpResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema, extend_schema_view
from rest_framework import exceptions, mixins, serializers, viewsets
from rest_framework.renderers import BaseRenderer, BrowsableAPIRenderer, JSONRenderer
from rest_framework.request import Request
from rest_framework.response import Response

from audit.filtersets import AuditEventFilterSet
from audit.models import AuditEvent
from audit.selectors import CSV_HEADER, audit_csv_rows, user_can_read_audit
from gpucore.exports import csv_lines
from infra.api_pagination import StrictPageParameters
from infra.filtering import FilterBackend
from infra.scoping import ScopedViewMixin

ONLY_ADMINS = "Only platform admins can read the audit trail."


class AuditCsvRenderer(BaseRenderer):
    """Lets ``?format=csv`` through content negotiation; the view writes the CSV itself."""

    media_type = "text/csv"
    format = "csv"
    charset = "utf-8"

    def render(self, data: Any, accepted_media_type: str | None = None, renderer_context: Any = None) -> bytes:
        return data if isinstance(data, bytes) else str(data).encode()


class AuditEventPagination(StrictPageParameters):
    page_size = 50
    page_size_query_param = "page_size"
    max_page_size = 500


class AuditEventSerializer(serializers.ModelSerializer):
    actor = serializers.CharField(source="actor_label", help_text="The username then, or the system part that acted.")
    object = serializers.CharField(source="object_repr")
    before = serializers.JSONField(help_text="Changed fields' old values; every field of a deleted object.")
    after = serializers.JSONField(help_text="Changed fields' new values; every field of a created object.")

    class Meta:
        model = AuditEvent
        fields = ["id", *CSV_HEADER]  # the API and the CSV carry the same columns
        read_only_fields = fields


@extend_schema_view(
    list=extend_schema(
        summary="The audit trail (platform admins), newest first",
        parameters=[
            OpenApiParameter("format", str, enum=["json", "csv"], description="`csv`: every matching event as CSV")
        ],
        responses={
            200: AuditEventSerializer(many=True),
            (200, "text/csv"): OpenApiResponse(OpenApiTypes.STR, description="CSV, formulas neutralised"),
            400: OpenApiResponse(description='A bad filter: `{"since": ["Enter a valid date/time."]}`'),
            403: OpenApiResponse(description="Not a platform admin"),
            404: OpenApiResponse(description="An unknown `format` (DRF's answer to one it cannot render)"),
        },
    )
)
@extend_schema(tags=["audit"])
class AuditEventViewSet(ScopedViewMixin, mixins.ListModelMixin, viewsets.GenericViewSet):
    """Who changed what, from where, with before/after values; filters ``actor``, ``object_type``, ``since``..."""

    serializer_class = AuditEventSerializer
    filter_backends = [FilterBackend]
    filterset_class = AuditEventFilterSet
    pagination_class = AuditEventPagination
    renderer_classes = [JSONRenderer, BrowsableAPIRenderer, AuditCsvRenderer]
    scoped_model = AuditEvent

    def initial(self, request: Request, *args: Any, **kwargs: Any) -> None:
        super().initial(request, *args, **kwargs)
        if not user_can_read_audit(request.user):
            raise exceptions.PermissionDenied(ONLY_ADMINS)

    def list(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        events = self.filter_queryset(self.get_queryset())
        if request.accepted_renderer.format == "csv":
            # Streamed: the trail may hold millions of events; each line is written as its row is read.
            response = StreamingHttpResponse(
                csv_lines(CSV_HEADER, audit_csv_rows(events)), content_type="text/csv; charset=utf-8"
            )
            response["Content-Disposition"] = 'attachment; filename="audit-events.csv"'
            return response
        return super().list(request, *args, **kwargs)
