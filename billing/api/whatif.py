"""``POST /api/v1/what-if/``: a workload profile priced for every strategy on every GPU model a pool offers.

For the requested duration, with whether the team's quota and this month's budget allow each option, and for
training and HPC a per-run estimate scaled by the catalog's FP16 throughput. Thin: ``billing.costs.whatif.team_what_if``
does the work; the team must be one the caller may see (another team's slug reads as "does not exist").
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiExample, OpenApiResponse, extend_schema, extend_schema_field
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from allocations.api.permissions import IsActivePortalUser
from allocations.api.serializers import ProfileInputSerializer, VisibleTeamField
from allocations.models import Team
from billing.costs.whatif import team_what_if


@extend_schema_field({"type": "number", "minimum": 0.01, "maximum": 9999999999.99, "multipleOf": 0.01})
class _ReferenceHoursField(serializers.DecimalField):
    """Hours with 2 decimal places, from 0.01: a number in the schema (spectacular's string pattern lets "-" by)."""


class WhatIfInputSerializer(ProfileInputSerializer):
    """The workload profile (flat), the team whose quota and budget are checked, and an optional per-run reference."""

    team = VisibleTeamField(slug_field="slug", queryset=Team.objects.all(), help_text="Team slug.")
    reference_hours = _ReferenceHoursField(
        max_digits=12,
        decimal_places=2,
        required=False,
        allow_null=True,
        min_value=Decimal("0.01"),
        help_text="Training/HPC: hours one run takes on reference_gpu_model (same GPUs per replica and replicas).",
    )
    reference_gpu_model = serializers.CharField(
        required=False, allow_null=True, max_length=100, help_text="Catalog name the reference hours were measured on."
    )


_MONEY = {
    "type": "object",
    "properties": {"amount": {"type": "string", "nullable": True}, "currency": {"type": "string"}},
}
_OPTION = {
    "type": "object",
    "properties": {
        "gpu_model": {"type": "string"},
        "strategy": {"type": "string", "enum": ["dedicated", "mig", "time-slicing"]},
        "fits": {"type": "boolean", "description": "Whether the profile's memory and GPUs per replica fit at all."},
        "permitted": {"type": "boolean", "description": "Fits, a pool offers it and policy allows it."},
        "reason": {"type": "string", "nullable": True},
        "resource_name": {"type": "string", "nullable": True},
        "quantity": {"type": "integer", "nullable": True},
        "replicas": {"type": "integer"},
        "mig_profile": {"type": "string", "nullable": True},
        "time_slice_replicas": {"type": "integer", "nullable": True},
        "gpu_share": {"type": "string", "nullable": True},
        "estimated_monthly_cost": _MONEY,
        "estimated_cost": {
            "type": "object",
            "nullable": True,
            "properties": {**_MONEY["properties"], "hours": {"type": "number"}},
        },
        "node_pool": {"type": "string", "nullable": True, "description": "cluster/pool that would run it"},
        "quota": {
            "type": "object",
            "nullable": True,
            "properties": {
                "allowed": {"type": "boolean"},
                "resource_name": {"type": "string"},
                "units": {"type": "integer"},
                "message": {"type": "string", "nullable": True},
            },
        },
        "budget": {
            "type": "object",
            "nullable": True,
            "properties": {
                "allowed": {"type": "boolean"},
                "gpu_hours_this_month": {"type": "number"},
                "cost_this_month": {"type": "string", "nullable": True},
                "left_gpu_hours": {"type": "number", "nullable": True},
            },
        },
        "run": {
            "type": "object",
            "nullable": True,
            "description": "An estimate: reference hours scaled by dense FP16/BF16 throughput (catalog).",
            "properties": {
                "estimate": {"type": "boolean"},
                "reference_gpu_model": {"type": "string"},
                "reference_hours": {"type": "number"},
                "speedup": {"type": "number"},
                "hours": {"type": "number"},
                "cost": _MONEY,
            },
        },
    },
}
_RESPONSE = {
    "type": "object",
    "properties": {
        "team": {"type": "string"},
        "currency": {"type": "string"},
        "duration_hours": {"type": "number", "nullable": True},
        "price_basis": {
            "type": "object",
            "properties": {
                "price_book_version": {"type": "integer", "nullable": True},
                "basis": {"type": "string"},
                "text": {"type": "string"},
            },
        },
        "month_to_date": {
            "type": "object",
            "properties": {
                "month": {"type": "string"},
                "gpu_hours": {"type": "number"},
                "amount": {"type": "string"},
                "budget_gpu_hours": {"type": "number", "nullable": True},
            },
        },
        "options": {"type": "array", "items": _OPTION},
    },
}


class WhatIfView(APIView):
    """Compare every strategy on every offered GPU model for one profile; writes nothing."""

    permission_classes = [IsActivePortalUser]

    @extend_schema(
        summary="What-if: the profile priced for every strategy and GPU model a pool offers",
        description=(
            "Takes the workload profile fields (flat), `team`, optional `cluster`, and for training or HPC optional "
            "`reference_hours` on `reference_gpu_model`. Answers each (GPU model, strategy) that a node pool offers: "
            "whether it fits and policy permits it, its GPU share, monthly cost and cost for `duration_hours`, the "
            "pool that would run it, whether the team's quota holds it now and what it leaves of this month's "
            "GPU-hour budget; with reference hours, dedicated options carry a per-run estimate scaled by dense "
            "FP16/BF16 throughput from NVIDIA's datasheets. The recommendation itself is POST /api/v1/recommendations/."
        ),
        request=WhatIfInputSerializer,
        responses={
            200: OpenApiResponse(_RESPONSE),
            400: OpenApiResponse(OpenApiTypes.OBJECT, description='`{"field": ["message"]}` naming each bad field.'),
        },
        examples=[
            OpenApiExample(
                "A training run measured on an A100",
                value={
                    "team": "vision",
                    "workload_type": "training",
                    "gpu_memory_gb": 30,
                    "duration_hours": 48,
                    "reference_hours": 10,
                    "reference_gpu_model": "A100-40GB",
                },
                request_only=True,
            )
        ],
        tags=["recommendations"],
    )
    def post(self, request: Request) -> Response:
        serializer = WhatIfInputSerializer(data=request.data, context={"request": request})
        serializer.is_valid(raise_exception=True)
        data: dict[str, Any] = serializer.validated_data
        # A ProfileError (e.g. no pool offers the model) is a 400 naming the field: portal.api_errors.
        answer = team_what_if(
            team=data["team"],
            profile=data["profile"],
            cluster=data.get("cluster"),
            reference_hours=data.get("reference_hours"),
            reference_gpu_model=data.get("reference_gpu_model"),
        )
        return Response(answer)
