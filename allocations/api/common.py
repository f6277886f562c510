"""What every allocations API view shares: the base permission and the error answers the OpenAPI schema names."""

from __future__ import annotations

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiExample, OpenApiResponse, inline_serializer
from rest_framework import serializers

from allocations.api.permissions import IsActivePortalUser


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
