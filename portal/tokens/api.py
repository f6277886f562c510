"""``/api/v1/tokens/``: a user's own named tokens. List and revoke from anywhere; create only from a browser session,
so a leaked token cannot mint itself successors."""

from __future__ import annotations

from typing import Any

from django.core.exceptions import PermissionDenied as DjangoPermissionDenied
from django.core.exceptions import ValidationError as DjangoValidationError
from drf_spectacular.utils import OpenApiResponse, extend_schema, extend_schema_view
from rest_framework import exceptions, mixins, serializers, status, viewsets
from rest_framework.authentication import SessionAuthentication
from rest_framework.fields import get_error_detail
from rest_framework.request import Request
from rest_framework.response import Response

from infra.scoping import ScopedViewMixin
from portal.tokens.models import KEY_PREFIX, ApiToken
from portal.tokens.services import EXPIRY_DAYS, MAX_EXPIRY_DAYS, api_token_create, api_token_revoke


class ApiTokenSerializer(serializers.ModelSerializer):
    key_hint = serializers.SerializerMethodField(help_text="The key's public start, to tell tokens apart.")
    state = serializers.ChoiceField(["active", "expired", "revoked"], read_only=True)

    class Meta:
        model = ApiToken
        fields = ["id", "name", "key_hint", "state", "created_at", "expires_at", "last_used_at", "last_used_ip"]
        read_only_fields = fields

    def get_key_hint(self, token: ApiToken) -> str:
        return f"{KEY_PREFIX}{token.public_id}_…"


class ApiTokenCreateSerializer(serializers.Serializer):
    name = serializers.CharField(max_length=100)
    expires_in_days = serializers.IntegerField(
        min_value=1, max_value=MAX_EXPIRY_DAYS, default=90, help_text=f"Days it lives; the page offers {EXPIRY_DAYS}."
    )


class NewApiTokenSerializer(ApiTokenSerializer):
    key = serializers.CharField(help_text="The whole key: shown in this answer only, never again.")

    class Meta(ApiTokenSerializer.Meta):
        fields = [*ApiTokenSerializer.Meta.fields, "key"]
        read_only_fields = fields


@extend_schema_view(
    list=extend_schema(summary="Your API tokens (never their keys)"),
    create=extend_schema(
        summary="Create a named token (browser session only); the key is in this answer only",
        request=ApiTokenCreateSerializer,
        responses={
            201: NewApiTokenSerializer,
            400: OpenApiResponse(description='`{"field": ["message"]}` naming the bad field'),
            403: OpenApiResponse(description="Called with a token: create tokens from a signed-in browser"),
        },
    ),
    destroy=extend_schema(
        summary="Revoke one of your tokens at once",
        responses={
            204: None,
            403: OpenApiResponse(description="The token the call came with: a token cannot revoke itself"),
            404: OpenApiResponse(description="Not yours"),
        },
    ),
)
@extend_schema(tags=["tokens"])
class ApiTokenViewSet(ScopedViewMixin, mixins.ListModelMixin, mixins.DestroyModelMixin, viewsets.GenericViewSet):
    """The caller's own tokens: another user's token is a 404 by construction."""

    serializer_class = ApiTokenSerializer
    pagination_class = None
    scoped_model = ApiToken

    def create(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        if not isinstance(request.successful_authenticator, SessionAuthentication):
            raise exceptions.PermissionDenied("Create tokens from a signed-in browser session, not with a token.")
        data = ApiTokenCreateSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        try:
            new = api_token_create(acting_user=request.user, **data.validated_data)
        except DjangoValidationError as exc:
            raise exceptions.ValidationError(get_error_detail(exc)) from exc
        new.token.key = new.key  # for this one answer: the model has no such field
        return Response(NewApiTokenSerializer(new.token).data, status=status.HTTP_201_CREATED)

    def destroy(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        token = self.get_object()
        presented = request.auth if isinstance(request.auth, ApiToken) else None
        try:
            api_token_revoke(acting_user=request.user, token_id=token.pk, presented=presented)
        except DjangoPermissionDenied as exc:
            raise exceptions.PermissionDenied(str(exc)) from exc
        return Response(status=status.HTTP_204_NO_CONTENT)
