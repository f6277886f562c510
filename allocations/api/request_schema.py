"""The OpenAPI description of the requests endpoints, kept apart from the views that answer them."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import (
    OpenApiExample,
    OpenApiParameter,
    OpenApiResponse,
    extend_schema,
    extend_schema_view,
)

from allocations.api import extension_serializers
from allocations.api import serializers as api
from allocations.api.common import AUTH_ERRORS, COMMENT_BODY, ERROR, FIELD_ERRORS
from allocations.requests import idempotency
from infra.api_pagination import COUNT_LIMIT

MANIFESTS_NOT_RENDERED = (
    "The manifests of this request are not rendered yet: they are rendered when it is approved and provisioned."
)


def action_schema(summary: str, ok: int) -> Callable[[Any], Any]:
    """The schema of a lifecycle action that takes a comment and answers the request."""
    responses = {ok: api.GpuRequestDetailSerializer, 400: FIELD_ERRORS, 404: ERROR, 409: ERROR, **AUTH_ERRORS}
    return extend_schema(summary=summary, request=api.CommentSerializer, responses=responses, examples=[COMMENT_BODY])


def field_selection(serializer: type[api.GpuRequestSerializer]) -> list[OpenApiParameter]:
    """``?brief=``, ``?fields=`` and ``?omit=``; the two lists name only the serializer's fields (others: 400)."""
    every = list(serializer.Meta.fields)
    return [
        OpenApiParameter(
            "brief",
            OpenApiTypes.BOOL,
            description=(
                "The summary representation: "
                + ", ".join(f"`{name}`" for name in api.GpuRequestSerializer.BRIEF_FIELDS)
                + " (no frozen `spec`, whose rationale and alternatives weigh about 4 KB a request)."
            ),
        ),
        OpenApiParameter(
            "fields",
            OpenApiTypes.STR,
            many=True,
            explode=False,
            enum=every,
            description="Comma-separated fields to answer, e.g. `id,status,spec`; an unknown name is a 400.",
        ),
        OpenApiParameter(
            "omit",
            OpenApiTypes.STR,
            many=True,
            explode=False,
            enum=every,
            description="Comma-separated fields to leave out, e.g. `spec,purpose`; an unknown name is a 400.",
        ),
    ]


# The list and the detail.
REQUEST_READS = extend_schema_view(
    list=extend_schema(
        summary="List the requests you may see",
        description=(
            "Paginated (`count`, `count_exact`, `next`, `previous`, `results`), 25 a page, `page_size` up to 200; "
            f"`count` stops at {COUNT_LIMIT:,} (`count_exact` false: there are more). `?after=<id>` pages by "
            "ascending id at a constant cost (`count` null). Each item is the full request, as the detail; "
            "`?brief=true`, `?fields=` or `?omit=` answer less, and read less."
        ),
        parameters=field_selection(api.GpuRequestSerializer),
        responses={200: api.GpuRequestSerializer(many=True), 400: FIELD_ERRORS, 404: ERROR, **AUTH_ERRORS},
    ),
    retrieve=extend_schema(
        summary="One request",
        description=(
            "Every field of the list's items and `waiting`: where a request that is not running waits (the approval "
            "queue, capacity, Kueue or provisioning), its place in the approval queue, the units ahead of it and an "
            "ETA from the pool's current allocations' expiries; null once it runs."
        ),
        parameters=field_selection(api.GpuRequestDetailSerializer),
        responses={200: api.GpuRequestDetailSerializer, 404: ERROR, **AUTH_ERRORS},
    ),
)

SUBMIT = extend_schema(
    summary="Submit a request",
    description=(
        "Takes the workload profile fields (flat) plus `team`, `name` and what it is for. The recommendation is "
        "frozen as `spec`, the quota is checked, and the request waits for approval (or is approved by the "
        "team's auto-approval policy). A quota that does not fit answers 400 naming `quota`. Send an "
        "`Idempotency-Key` to make a retry safe: the same key again answers the first submission's answer "
        "(header `Idempotent-Replayed: true`) and creates nothing; the same key with another body is a 422."
    ),
    request=api.GpuRequestCreateSerializer,
    parameters=[
        OpenApiParameter(
            idempotency.HEADER,
            OpenApiTypes.STR,
            OpenApiParameter.HEADER,
            pattern=idempotency.KEY_PATTERN,
            description=(
                "A unique value per submission (a UUID), kept for the hours the server's "
                "`IDEMPOTENCY_KEY_TTL_HOURS` says; 1 to 255 printable ASCII characters."
            ),
        )
    ],
    responses={
        201: api.GpuRequestDetailSerializer,
        400: FIELD_ERRORS,
        422: OpenApiResponse(ERROR, description="The Idempotency-Key was first sent with another body."),
        **AUTH_ERRORS,
    },
    examples=[
        OpenApiExample(
            "Fine-tune on one GPU",
            value={
                "team": "vision",
                "name": "resnet-finetune",
                "purpose": "Fine-tune ResNet-50 on the new labels",
                "workload_type": "training",
                "gpu_memory_gb": 40,
                "duration_hours": 48,
                "command": ["torchrun", "--nproc-per-node=1", "finetune.py", "--epochs", "3"],
            },
            request_only=True,
        )
    ],
)

EXTEND = extend_schema(
    summary="Ask for more hours on an approved or running allocation (requester, team lead, approver)",
    description=(
        "Creates a pending extension of an approved, provisioning or active request that has an expiry or a "
        "duration; platform approvers are told and decide it at `/api/v1/extensions/{id}/approve/` or "
        "`/reject/`. One extension per request may be pending (a second answers 400 naming `request`); a request "
        "in another status, or one with no end, answers 409."
    ),
    request=extension_serializers.AllocationExtensionCreateSerializer,
    responses={
        201: extension_serializers.AllocationExtensionSerializer,
        400: FIELD_ERRORS,
        404: ERROR,
        409: ERROR,
        **AUTH_ERRORS,
    },
    examples=[
        OpenApiExample(
            "Two more days",
            value={"hours": 48, "reason": "The sweep needs two more days to converge."},
            request_only=True,
        )
    ],
)

MANIFESTS = extend_schema(
    summary="The request's Kubernetes objects, as last rendered",
    description=(
        "The objects the portal applies for this request, in apply order: its tier's PriorityClass, the team's "
        "Namespace, NetworkPolicy, ResourceQuota and LimitRange, then the workload `gpr-<id>`. JSON by default; "
        "`?format=yaml` (or `Accept: application/yaml`) answers one multi-document YAML stream for "
        "`kubectl apply -f`. 404 for requests of other teams, and before the request is rendered (on approval)."
    ),
    parameters=[
        OpenApiParameter(
            "format",
            str,
            OpenApiParameter.QUERY,
            enum=["json", "yaml"],
            description="`yaml` for one multi-document YAML stream (`application/yaml`).",
        )
    ],
    responses={
        (200, "application/json"): OpenApiResponse(
            {"type": "array", "items": {"type": "object", "additionalProperties": True}},
            description="The Kubernetes objects (apiVersion, kind, metadata, ...), in apply order.",
        ),
        (200, "application/yaml"): OpenApiResponse(
            OpenApiTypes.STR, description="The same objects as one multi-document YAML stream."
        ),
        404: ERROR,
        **AUTH_ERRORS,
    },
    examples=[
        OpenApiExample(
            "Not rendered yet",
            value={"detail": MANIFESTS_NOT_RENDERED},
            response_only=True,
            status_codes=["404"],
        )
    ],
)
