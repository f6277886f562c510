"""``POST /api/v1/mig-plans/preview/`` (DESIGN.md, "MIG plans"): the fewest GPUs whose layouts host a MIG demand."""

from __future__ import annotations

from drf_spectacular.utils import OpenApiExample, OpenApiResponse, extend_schema
from rest_framework import exceptions, serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from allocations.api.permissions import IsActivePortalUser
from allocations.api.views import ServiceApiMixin
from allocations.mig_plans.selectors import mig_plan_preview
from allocations.selectors import user_is_approver

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
