"""MIG plans in the API (docs/api.md, "MIG plans").

``POST /api/v1/mig-plans/preview/``: the fewest GPUs whose layouts host a demand. Under
``/api/v1/clusters/{name}/node-pools/{pool}/mig-plans/``: a pool's plans (approvers read and make them), and the
``approve``, ``apply`` and ``cancel`` actions (platform admins).
"""

from __future__ import annotations

from decimal import ROUND_HALF_UP, Decimal

from django.conf import settings
from django.shortcuts import get_object_or_404
from drf_spectacular.utils import OpenApiExample, OpenApiResponse, extend_schema, extend_schema_field
from rest_framework import exceptions, serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from allocations.api.common import ServiceApiMixin
from allocations.api.permissions import IsActivePortalUser
from allocations.api.serializers import MoneySerializer
from allocations.mig_plans.selectors import mig_plan_preview, mig_plans_of_pool, mig_pool_for
from allocations.mig_plans.services import (
    mig_plan_apply,
    mig_plan_approve,
    mig_plan_cancel,
    mig_plan_create,
)
from allocations.models import DrainPolicy, MigPlan, MigPlanEvent, NodePool
from allocations.selectors import user_is_approver
from infra.scoping import ScopedViewMixin

ONLY_APPROVERS = "Only platform approvers and admins can plan MIG layouts."


class MigPlanPreviewInputSerializer(serializers.Serializer):
    gpu_model = serializers.CharField(help_text="Catalog name, e.g. `A100-40GB`.")
    demand = serializers.DictField(
        child=serializers.IntegerField(min_value=0),
        allow_empty=False,
        help_text='MIG instances wanted per profile, e.g. `{"3g.20gb": 1, "1g.5gb": 9}`.',
    )


class PlannedGpuSerializer(serializers.Serializer):
    instances = serializers.DictField(
        child=serializers.IntegerField(), help_text="The GPU's layout: count per profile."
    )
    placement = serializers.ListField(
        child=serializers.CharField(), help_text="`profile@start memory slice`, a valid NVIDIA placement."
    )
    gpu_share = serializers.DictField(
        child=serializers.CharField(), help_text="GPU share of one instance of each profile on this layout (decimal)."
    )


class MigPlanPreviewSerializer(serializers.Serializer):
    gpu_model = serializers.CharField()
    gpu_count = serializers.IntegerField(help_text="The fewest GPUs that host the demand (exact optimum).")
    gpus = PlannedGpuSerializer(many=True)


class MigPlanPreviewView(ServiceApiMixin, APIView):
    """Plan per-GPU MIG layouts for a demand: the exact fewest GPUs, each layout with its placement."""

    permission_classes = [IsActivePortalUser]

    @extend_schema(
        tags=["mig-plans"],
        summary="Preview the fewest GPUs and their MIG layouts for a demand",
        request=MigPlanPreviewInputSerializer,
        responses={
            200: MigPlanPreviewSerializer,
            400: OpenApiResponse(description="Unknown or non-MIG model, unknown profile, bad count: names the field"),
            403: OpenApiResponse(description="Not a platform approver or admin"),
        },
        examples=[
            OpenApiExample(
                "A100-40GB", value={"gpu_model": "A100-40GB", "demand": {"3g.20gb": 1, "1g.5gb": 9}}, request_only=True
            )
        ],
    )
    def post(self, request: Request) -> Response:
        if not user_is_approver(request.user):
            raise exceptions.PermissionDenied(ONLY_APPROVERS)
        data = MigPlanPreviewInputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        preview = mig_plan_preview(gpu_model=data.validated_data["gpu_model"], demand=data.validated_data["demand"])
        return Response(MigPlanPreviewSerializer(preview).data)


class MigPlanEventSerializer(serializers.ModelSerializer):
    actor = serializers.CharField(source="actor_label")
    # Plain strings: the plan statuses (see MigPlanSerializer.status), without a second named enum in the schema.
    from_status = serializers.CharField()
    to_status = serializers.CharField()

    class Meta:
        model = MigPlanEvent
        fields = ["at", "actor", "from_status", "to_status", "node", "message"]


class MigPlanSerializer(serializers.ModelSerializer):
    status = serializers.CharField(help_text="proposed | approved | applying | applied | failed | cancelled")
    drain_policy = serializers.CharField(help_text="stop | evict: what happens at the drain timeout")
    cluster = serializers.CharField(source="pool.cluster.name")
    pool = serializers.CharField(source="pool.name")
    gpu_model = serializers.CharField(source="pool.gpu_model.name")
    gpus_freed = serializers.IntegerField()
    gpus_needed = serializers.IntegerField()
    monthly_cost_delta = serializers.SerializerMethodField()
    created_by = serializers.CharField(source="created_by.username")
    approved_by = serializers.CharField(source="approved_by.username", allow_null=True, default=None)
    events = MigPlanEventSerializer(many=True)

    class Meta:
        model = MigPlan
        fields = [
            "id",
            "cluster",
            "pool",
            "gpu_model",
            "status",
            "headroom_pct",
            "max_unavailable",
            "drain_timeout_seconds",
            "drain_policy",
            "demand",
            "gpu_count",
            "pool_gpus",
            "gpus_changed",
            "gpus_freed",
            "gpus_needed",
            "nodes_to_drain",
            "requests_to_move",
            "monthly_cost_delta",
            "price_basis",
            "gpus",
            "progress",
            "error",
            "created_by",
            "approved_by",
            "created_at",
            "approved_at",
            "finished_at",
            "events",
        ]

    @extend_schema_field(MoneySerializer(allow_null=True))
    def get_monthly_cost_delta(self, plan: MigPlan) -> dict[str, str] | None:
        if plan.monthly_cost_delta is None:
            return None
        amount = plan.monthly_cost_delta.quantize(Decimal("0.01"), rounding=ROUND_HALF_UP)
        return {"amount": str(amount), "currency": settings.PORTAL_CURRENCY}


class MigPlanCreateSerializer(serializers.Serializer):
    headroom_pct = serializers.IntegerField(min_value=0, max_value=500, default=0)
    max_unavailable = serializers.IntegerField(min_value=1, max_value=1000, default=1)
    drain_timeout_seconds = serializers.IntegerField(min_value=1, max_value=7 * 24 * 3600, default=3600)
    drain_policy = serializers.ChoiceField(choices=DrainPolicy.choices, default=DrainPolicy.STOP)
    nodes = serializers.ListField(
        child=serializers.CharField(max_length=253),
        required=False,
        help_text="The pool's node names; read from the cluster when omitted (required for GitOps clusters).",
    )


class MigPlanCommentSerializer(serializers.Serializer):
    comment = serializers.CharField(required=False, allow_blank=True, default="")


class _PoolPlansView(ScopedViewMixin, ServiceApiMixin, APIView):
    """The plans of a pool named in the URL: the pool is looked up among the node pools the caller may see."""

    scoped_model = NodePool


class MigPlanListView(_PoolPlansView):
    """A pool's MIG plans (approvers), and a new plan from its demand (approvers and admins)."""

    @extend_schema(
        tags=["mig-plans"],
        summary="A pool's MIG plans",
        responses={
            200: MigPlanSerializer(many=True),
            403: OpenApiResponse(description="Not an approver or platform admin"),
            404: OpenApiResponse(description="No such cluster or MIG pool"),
        },
    )
    def get(self, request: Request, name: str, pool: str) -> Response:
        node_pool = mig_pool_for(user=request.user, cluster=name, pool=pool, pools=self.get_queryset())
        return Response(MigPlanSerializer(mig_plans_of_pool(pool=node_pool), many=True).data)

    @extend_schema(
        tags=["mig-plans"],
        summary="Plan the pool's MIG layouts from its approved and pending demand",
        request=MigPlanCreateSerializer,
        responses={
            201: MigPlanSerializer,
            400: OpenApiResponse(description="Names the field"),
            403: None,
            404: None,
            502: OpenApiResponse(description="The cluster's nodes could not be read; the message says why"),
        },
    )
    def post(self, request: Request, name: str, pool: str) -> Response:
        node_pool = mig_pool_for(user=request.user, cluster=name, pool=pool, pools=self.get_queryset())
        data = MigPlanCreateSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        created = mig_plan_create(acting_user=request.user, pool=node_pool, **data.validated_data)
        return Response(MigPlanSerializer(mig_plans_of_pool(pool=node_pool).get(pk=created.pk)).data, status=201)


class MigPlanDetailView(_PoolPlansView):
    """One plan: per-GPU current and proposed layouts, the nodes to drain, the rollout's progress and events."""

    @extend_schema(
        tags=["mig-plans"],
        summary="A MIG plan",
        responses={
            200: MigPlanSerializer,
            403: OpenApiResponse(description="Not an approver or platform admin"),
            404: OpenApiResponse(description="No such cluster, MIG pool or plan"),
        },
    )
    def get(self, request: Request, name: str, pool: str, pk: int) -> Response:
        node_pool = mig_pool_for(user=request.user, cluster=name, pool=pool, pools=self.get_queryset())
        plan = get_object_or_404(mig_plans_of_pool(pool=node_pool), pk=pk)
        return Response(MigPlanSerializer(plan).data)


class MigPlanActionView(_PoolPlansView):
    """``approve``, ``apply`` (202: the rollout is queued) or ``cancel`` a plan; platform admins only."""

    action_name = ""

    @extend_schema(
        tags=["mig-plans"],
        request=MigPlanCommentSerializer,
        responses={200: MigPlanSerializer, 202: MigPlanSerializer, 403: None, 404: None, 409: None},
    )
    def post(self, request: Request, name: str, pool: str, pk: int) -> Response:
        node_pool = mig_pool_for(user=request.user, cluster=name, pool=pool, pools=self.get_queryset())
        plan = get_object_or_404(mig_plans_of_pool(pool=node_pool), pk=pk)
        data = MigPlanCommentSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        comment = data.validated_data["comment"]
        if self.action_name == "approve":
            mig_plan_approve(plan_=plan, acting_user=request.user, comment=comment)
        elif self.action_name == "cancel":
            mig_plan_cancel(plan_=plan, acting_user=request.user, comment=comment)
        else:
            mig_plan_apply(plan_=plan, acting_user=request.user)
        fresh = mig_plans_of_pool(pool=node_pool).get(pk=pk)
        return Response(MigPlanSerializer(fresh).data, status=202 if self.action_name == "apply" else 200)
