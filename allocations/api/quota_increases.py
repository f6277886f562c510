"""The quota increases API: a team's members ask for a larger nominal quota, platform approvers grant or decline;
scoped to the teams the caller may see (another team's ask is 404)."""

from __future__ import annotations

from typing import Any

from django.db.models import QuerySet
from drf_spectacular.utils import extend_schema, extend_schema_view
from rest_framework import serializers, status
from rest_framework.decorators import action
from rest_framework.request import Request
from rest_framework.response import Response

from allocations.api.common import AUTH_ERRORS, ERROR, FIELD_ERRORS, AskViewSet, DecisionSerializer
from allocations.models import Quota, QuotaIncreaseRequest
from allocations.quota_requests.selectors import quota_unit_monthly_price, quotas_visible_to
from allocations.quota_requests.services import quota_increase_decide, quota_increase_request_create


class VisibleQuotaField(serializers.PrimaryKeyRelatedField):
    """A quota id among the quotas of the teams the caller may see (others read as "does not exist")."""

    def get_queryset(self) -> QuerySet[Quota]:
        return quotas_visible_to(user=self.context["request"].user)


class QuotaIncreaseSerializer(serializers.ModelSerializer):
    """An ask: the quota (its team, resource and scope), the limit then and the limit asked, and the decision."""

    quota = VisibleQuotaField(queryset=Quota.objects.none())
    team = serializers.SlugRelatedField(slug_field="slug", read_only=True)
    resource_name = serializers.CharField(source="quota.resource_name", read_only=True)
    scope = serializers.CharField(source="quota.scope_label", read_only=True)
    requested_by = serializers.SlugRelatedField(slug_field="username", read_only=True)
    decided_by = serializers.SlugRelatedField(slug_field="username", read_only=True)
    monthly_cost_effect = serializers.SerializerMethodField(
        help_text="The added units held a whole month, priced on the pools the quota covers (low and high)."
    )

    class Meta:
        model = QuotaIncreaseRequest
        fields = [
            "id",
            "quota",
            "team",
            "resource_name",
            "scope",
            "limit_when_asked",
            "requested_limit",
            "reason",
            "status",
            "requested_by",
            "created_at",
            "decided_by",
            "decided_at",
            "decision_comment",
            "monthly_cost_effect",
        ]
        read_only_fields = ["limit_when_asked", "status", "created_at", "decided_at", "decision_comment"]

    def get_monthly_cost_effect(self, increase: QuotaIncreaseRequest) -> dict[str, str | None]:
        price = quota_unit_monthly_price(increase.quota).times(increase.units_added)
        return {
            "low": None if price.low is None else f"{price.low:.2f}",
            "high": None if price.high is None else f"{price.high:.2f}",
            "currency": price.currency,
        }


@extend_schema_view(
    list=extend_schema(
        summary="Quota increases of the teams you may see",
        responses={200: QuotaIncreaseSerializer(many=True), **AUTH_ERRORS},
    ),
    retrieve=extend_schema(summary="One quota increase", responses={200: QuotaIncreaseSerializer, 404: ERROR}),
    create=extend_schema(
        summary="Ask for a larger nominal quota (members of the quota's team)",
        responses={201: QuotaIncreaseSerializer, 400: FIELD_ERRORS, **AUTH_ERRORS},
    ),
)
@extend_schema(tags=["quotas"])
class QuotaIncreaseViewSet(AskViewSet):
    """Quota increases: a member of the quota's team asks for a larger nominal limit; an approver grants or declines
    it."""

    serializer_class = QuotaIncreaseSerializer
    scoped_model = QuotaIncreaseRequest

    def get_queryset(self) -> QuerySet[QuotaIncreaseRequest]:
        return super().get_queryset().order_by("-created_at", "-id")

    def create(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        body = self.get_serializer(data=request.data)
        body.is_valid(raise_exception=True)
        increase = quota_increase_request_create(
            acting_user=request.user,
            quota=body.validated_data["quota"],
            requested_limit=body.validated_data["requested_limit"],
            reason=body.validated_data["reason"],
        )
        return Response(self.get_serializer(increase).data, status=status.HTTP_201_CREATED)

    def _decide(self, request: Request, *, grant: bool) -> Response:
        decided = quota_increase_decide(
            acting_user=request.user, increase=self.get_object(), grant=grant, comment=self.decision_comment(request)
        )
        return Response(self.get_serializer(decided).data)

    @extend_schema(
        summary="Grant: the quota's nominal limit becomes the asked number (platform approvers, never their own ask)",
        request=DecisionSerializer,
        responses={200: QuotaIncreaseSerializer, 403: ERROR, 404: ERROR},
    )
    @action(detail=True, methods=["post"], filter_backends=[])
    def grant(self, request: Request, pk: str | None = None) -> Response:
        return self._decide(request, grant=True)

    @extend_schema(
        summary="Decline with a reason (platform approvers)",
        request=DecisionSerializer,
        responses={200: QuotaIncreaseSerializer, 400: FIELD_ERRORS, 403: ERROR, 404: ERROR},
    )
    @action(detail=True, methods=["post"], filter_backends=[])
    def decline(self, request: Request, pk: str | None = None) -> Response:
        return self._decide(request, grant=False)
