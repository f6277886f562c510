"""REST API for allocation extensions: list, read, and an approver's decision."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from drf_spectacular.utils import (
    extend_schema,
    extend_schema_view,
)
from rest_framework import mixins, viewsets
from rest_framework.decorators import action
from rest_framework.filters import OrderingFilter
from rest_framework.request import Request
from rest_framework.response import Response

from allocations.api.common import AUTH_ERRORS, COMMENT_BODY, ERROR, FIELD_ERRORS, ServiceApiMixin
from allocations.api.extension_serializers import AllocationExtensionSerializer
from allocations.api.serializers import CommentSerializer
from allocations.models import AllocationExtension
from allocations.requests import extension_services
from infra.filtering import FilterBackend
from infra.scoping import ScopedViewMixin


def _extension_decision_schema(summary: str) -> Callable[[Any], Any]:
    responses = {
        200: AllocationExtensionSerializer,
        400: FIELD_ERRORS,
        404: ERROR,
        409: ERROR,
        **AUTH_ERRORS,
    }
    return extend_schema(summary=summary, request=CommentSerializer, responses=responses, examples=[COMMENT_BODY])


@extend_schema_view(
    list=extend_schema(
        summary="Extensions of the requests you may see (approvers: all), newest first",
        description="`?status=pending` lists what waits for a decision.",
        responses={
            200: AllocationExtensionSerializer(many=True),
            400: FIELD_ERRORS,
            404: ERROR,
            **AUTH_ERRORS,
        },
    ),
    retrieve=extend_schema(
        summary="One extension",
        responses={200: AllocationExtensionSerializer, 404: ERROR, **AUTH_ERRORS},
    ),
)
@extend_schema(tags=["extensions"])
class AllocationExtensionViewSet(
    ScopedViewMixin, ServiceApiMixin, mixins.ListModelMixin, mixins.RetrieveModelMixin, viewsets.GenericViewSet
):
    """Extensions of allocations: list, read, and an approver's decision (approve, reject)."""

    serializer_class = AllocationExtensionSerializer
    filter_backends = [FilterBackend, OrderingFilter]
    filterset_fields = ["status"]
    lookup_value_regex = r"[^/]+"  # a malformed id is a JSON 404 from get_object
    ordering_fields = ["id", "created_at", "decided_at"]
    ordering = ["-created_at", "-id"]
    scoped_model = AllocationExtension

    def _decide(self, request: Request, *, approve: bool) -> Response:
        extension = self.get_object()
        body = CommentSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        extension_services.allocation_extension_decide(
            extension=extension, acting_user=request.user, approve=approve, comment=body.validated_data["comment"]
        )
        fresh = self.get_queryset().get(pk=extension.pk)
        return Response(AllocationExtensionSerializer(fresh, context=self.get_serializer_context()).data)

    @_extension_decision_schema("Approve a pending extension (platform approvers; never of your own request)")
    @action(detail=True, methods=["post"], filter_backends=[])
    def approve(self, request: Request, pk: str | None = None) -> Response:
        """Approve: the hours are added to the request's expiry (or duration) and its owner is told."""
        return self._decide(request, approve=True)

    @_extension_decision_schema("Reject a pending extension with a reason (platform approvers)")
    @action(detail=True, methods=["post"], filter_backends=[])
    def reject(self, request: Request, pk: str | None = None) -> Response:
        """Reject; the comment is the reason the requester sees."""
        return self._decide(request, approve=False)
