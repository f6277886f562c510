"""What every allocations API view shares: the base permission and the error answers the OpenAPI schema names."""

from __future__ import annotations

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiExample, OpenApiResponse, inline_serializer
from rest_framework import mixins, serializers, viewsets
from rest_framework.request import Request

from allocations.api.permissions import IsActivePortalUser
from infra.scoping import ScopedViewMixin


class ServiceApiMixin:
    """Base of every allocations API view: active signed-in users only (service errors: portal.api_errors)."""

    permission_classes = [IsActivePortalUser]


ERROR = inline_serializer("Error", fields={"detail": serializers.CharField()})
FIELD_ERRORS = OpenApiResponse(
    OpenApiTypes.OBJECT,
    description='Invalid input: `{"field": ["message", ...]}` naming each bad field.',
)
AUTH_ERRORS = {401: ERROR, 403: ERROR}
COMMENT_BODY = OpenApiExample("Comment", value={"comment": "Fits the quota; go ahead."}, request_only=True)


class DecisionSerializer(serializers.Serializer):
    """The body of an approver's decision on an ask (a quota increase, a reservation): an optional comment."""

    comment = serializers.CharField(required=False, allow_blank=True, max_length=2000, default="")


class AskViewSet(
    ScopedViewMixin,
    ServiceApiMixin,
    mixins.ListModelMixin,
    mixins.RetrieveModelMixin,
    mixins.CreateModelMixin,
    viewsets.GenericViewSet,
):
    """Base of the asks an approver decides (quota increases, reservations): list, read and ask, by status."""

    filterset_fields = ["status"]
    lookup_value_regex = r"[^/]+"

    def decision_comment(self, request: Request) -> str:
        """The decision's comment from the body, validated (400 naming ``comment``)."""
        body = DecisionSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        return body.validated_data["comment"]
