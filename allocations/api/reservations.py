"""The reservations API: team leads reserve units of a pool for a window, platform approvers approve or decline, the
asker or a lead cancels; scoped to the teams the caller may see (another team's reservation is 404)."""

from __future__ import annotations

from typing import Any

from django.db.models import QuerySet
from drf_spectacular.utils import extend_schema, extend_schema_view
from rest_framework import serializers, status
from rest_framework.decorators import action
from rest_framework.request import Request
from rest_framework.response import Response

from allocations.api.common import AUTH_ERRORS, COMMENT_BODY, ERROR, FIELD_ERRORS, AskViewSet, DecisionSerializer
from allocations.models import NodePool, Reservation, Team
from allocations.reservations.selectors import pools_for_team
from allocations.reservations.services import reservation_cancel, reservation_create, reservation_decide
from allocations.selectors import teams_visible_to


class VisibleTeamField(serializers.SlugRelatedField):
    """A team slug among the teams the caller may see (others read as "does not exist")."""

    def get_queryset(self) -> QuerySet[Team]:
        return teams_visible_to(self.context["request"].user)


class ReservationSerializer(serializers.ModelSerializer):
    """A reservation: the team, the cluster and pool, the resource and units, the window and its decision."""

    team = VisibleTeamField(slug_field="slug", queryset=Team.objects.none())
    cluster = serializers.CharField(source="node_pool.cluster.name", help_text="The cluster's name.")
    pool = serializers.CharField(source="node_pool.name", help_text="The node pool's name on that cluster.")
    requested_by = serializers.SlugRelatedField(slug_field="username", read_only=True)
    decided_by = serializers.SlugRelatedField(slug_field="username", read_only=True)

    class Meta:
        model = Reservation
        fields = [
            "id",
            "team",
            "cluster",
            "pool",
            "resource_name",
            "quantity",
            "start",
            "end",
            "reason",
            "status",
            "requested_by",
            "created_at",
            "decided_by",
            "decided_at",
            "decision_comment",
            "quota_applied",
        ]
        read_only_fields = ["status", "created_at", "decided_at", "decision_comment", "quota_applied"]

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        where = attrs.pop("node_pool", {})
        team = attrs["team"]
        cluster, pool_name = where.get("cluster", {}).get("name"), where.get("name")
        pool = next(
            (pool for pool in pools_for_team(team=team) if pool.cluster.name == cluster and pool.name == pool_name),
            None,
        )
        if pool is None:
            raise serializers.ValidationError(
                {"pool": [f"Team {team.slug} has no quota on a node pool {pool_name!r} of cluster {cluster!r}."]}
            )
        attrs["node_pool"] = pool
        return attrs


@extend_schema_view(
    list=extend_schema(
        summary="Reservations of the teams you may see",
        responses={200: ReservationSerializer(many=True), **AUTH_ERRORS},
    ),
    retrieve=extend_schema(summary="One reservation", responses={200: ReservationSerializer, 404: ERROR}),
    create=extend_schema(
        summary="Reserve units of a pool for a window (team leads); it waits for an approver",
        responses={201: ReservationSerializer, 400: FIELD_ERRORS, **AUTH_ERRORS},
    ),
)
@extend_schema(tags=["reservations"])
class ReservationViewSet(AskViewSet):
    """Reservations: a team lead reserves units of a pool for a window; an approver approves or declines it; the
    asker or a lead cancels it."""

    serializer_class = ReservationSerializer
    scoped_model = Reservation

    def get_queryset(self) -> QuerySet[Reservation]:
        return super().get_queryset().order_by("-start", "-id")

    def create(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        body = self.get_serializer(data=request.data)
        body.is_valid(raise_exception=True)
        data = body.validated_data
        pool: NodePool = data["node_pool"]
        reservation = reservation_create(
            acting_user=request.user,
            team=data["team"],
            node_pool=pool,
            resource_name=data["resource_name"],
            quantity=data["quantity"],
            start=data["start"],
            end=data["end"],
            reason=data.get("reason", ""),
        )
        return Response(self.get_serializer(reservation).data, status=status.HTTP_201_CREATED)

    def _decide(self, request: Request, *, approve: bool) -> Response:
        decided = reservation_decide(
            acting_user=request.user,
            reservation=self.get_object(),
            approve=approve,
            comment=self.decision_comment(request),
        )
        return Response(self.get_serializer(decided).data)

    @extend_schema(
        summary="Approve: the pool holds the units for the window (platform approvers, never their own ask)",
        request=DecisionSerializer,
        examples=[COMMENT_BODY],
        responses={200: ReservationSerializer, 400: FIELD_ERRORS, 403: ERROR, 404: ERROR},
    )
    @action(detail=True, methods=["post"], filter_backends=[])
    def approve(self, request: Request, pk: str | None = None) -> Response:
        return self._decide(request, approve=True)

    @extend_schema(
        summary="Decline with a reason (platform approvers)",
        request=DecisionSerializer,
        responses={200: ReservationSerializer, 400: FIELD_ERRORS, 403: ERROR, 404: ERROR},
    )
    @action(detail=True, methods=["post"], filter_backends=[])
    def decline(self, request: Request, pk: str | None = None) -> Response:
        return self._decide(request, approve=False)

    @extend_schema(
        summary="Cancel before the window is over (who asked, or a lead of the team); the units are free at once",
        request=None,
        responses={200: ReservationSerializer, 403: ERROR, 404: ERROR},
    )
    @action(detail=True, methods=["post"], filter_backends=[])
    def cancel(self, request: Request, pk: str | None = None) -> Response:
        cancelled = reservation_cancel(acting_user=request.user, reservation=self.get_object())
        return Response(self.get_serializer(cancelled).data)
