"""``POST /api/v1/recommendations/``: the allocation a workload profile would get, placed on a real pool; writes
nothing."""

from __future__ import annotations

from drf_spectacular.utils import OpenApiExample, extend_schema
from rest_framework import viewsets
from rest_framework.request import Request
from rest_framework.response import Response

from allocations.api import serializers as api
from allocations.api.common import AUTH_ERRORS, FIELD_ERRORS, ServiceApiMixin
from allocations.clusters.placement import place

_PROFILE_EXAMPLE = {
    "workload_type": "realtime_inference",
    "gpu_memory_gb": 8,
    "latency_sensitive": True,
    "latency_p99_ms": 50,
    "expected_utilization_pct": 40,
    "duration_hours": 24,
}
_RECOMMENDATION_EXAMPLE = {
    "strategy": "mig",
    "resource_name": "nvidia.com/mig-1g.10gb",
    "quantity": 1,
    "replicas": 1,
    "gpu_model": "H100-80GB",
    "mig_profile": "1g.10gb",
    "time_slice_replicas": None,
    "node_selector": {"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3"},
    "expected_overhead_pct": [0, 5],
    "utilization_target_pct": [60, 80],
    "isolation": "hardware",
    "estimated_monthly_cost": {"amount": "717.49", "currency": "USD"},
    "saving_vs_dedicated_pct": 85.7,
    "gpu_share": "0.142857",
    "estimated_cost": {"amount": "23.59", "currency": "USD", "hours": 24},
    "rationale": [
        "Latency-sensitive and 8 GB, at most 10 GB: a MIG slice, whose hardware isolation keeps neighbours from "
        "adding jitter; a dedicated GPU where no slice fits.",
        "MIG profile 1g.10gb on H100-80GB: the smallest recommendable profile with at least 8 GB (10 GB, 1/7 of the "
        "compute).",
    ],
    "alternatives": [
        {
            "strategy": "dedicated",
            "resource_name": "nvidia.com/gpu",
            "quantity": 1,
            "replicas": 1,
            "gpu_model": "H100-80GB",
            "mig_profile": None,
            "time_slice_replicas": None,
            "node_selector": {"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3"},
            "expected_overhead_pct": [0, 0],
            "utilization_target_pct": [80, 95],
            "isolation": "full",
            "estimated_monthly_cost": {"amount": "5022.40", "currency": "USD"},
            "saving_vs_dedicated_pct": 0.0,
            "gpu_share": "1",
            "estimated_cost": {"amount": "165.12", "currency": "USD", "hours": 24},
            "tradeoffs": [
                "Performance: the whole GPU with no sharing overhead and under 10% memory fragmentation.",
                "Isolation: full; nothing else runs on the GPU.",
            ],
            "permitted": True,
            "reason": None,
        }
    ],
    "topology_aware": False,
}


class RecommendationViewSet(ServiceApiMixin, viewsets.GenericViewSet):
    """Preview the allocation a workload profile would get; writes nothing."""

    serializer_class = api.ProfileInputSerializer
    filter_backends: list[type] = []
    pagination_class = None

    @extend_schema(
        summary="Recommend a GPU allocation for a workload profile",
        description=(
            "Runs the decision framework over the node pools that exist (of one cluster when `cluster` is given) "
            "and answers the spec a request with this profile would freeze at submission. No side effects."
        ),
        request=api.ProfileInputSerializer,
        responses={200: api.RecommendationSerializer, 400: FIELD_ERRORS, **AUTH_ERRORS},
        examples=[
            OpenApiExample("Small real-time model", value=_PROFILE_EXAMPLE, request_only=True),
            OpenApiExample("A MIG slice", value=_RECOMMENDATION_EXAMPLE, response_only=True, status_codes=["200"]),
        ],
        tags=["recommendations"],
    )
    def create(self, request: Request) -> Response:
        """Validate the profile and answer the recommendation placed on a real pool."""
        serializer = self.get_serializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        placement = place(serializer.validated_data["profile"], cluster=serializer.validated_data.get("cluster"))
        # The spec is already the documented JSON (Recommendation.to_dict); RecommendationSerializer documents it,
        # and running it over the nested alternatives cost more than the recommendation itself.
        return Response(placement.spec)
