"""Thin API views: parse with an input serializer, call a service or a selector, answer with an output serializer.

Querysets come from the visibility registry (``infra.scoping``: the selectors ``gpu_requests_visible_to`` and
``allocation_extensions_visible_to``), so another team's objects are 404 by construction. Rule-bearing writes are
explicit actions that call the services, whose errors the project's one exception handler (``portal.api_errors``)
answers in DRF's shape: ``ValidationError`` -> 400 ``{"field": [...]}``, ``PermissionDenied`` -> 403 with the
service's reason, ``InvalidTransition`` -> 409.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from django.db import transaction
from django.db.models import QuerySet
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import (
    OpenApiExample,
    OpenApiParameter,
    OpenApiResponse,
    extend_schema,
    extend_schema_view,
)
from rest_framework import exceptions, mixins, status, viewsets
from rest_framework.decorators import action
from rest_framework.filters import OrderingFilter, SearchFilter
from rest_framework.generics import get_object_or_404
from rest_framework.renderers import JSONRenderer
from rest_framework.request import Request
from rest_framework.response import Response

from allocations.api import extension_serializers
from allocations.api import serializers as api
from allocations.api.common import AUTH_ERRORS, COMMENT_BODY, ERROR, FIELD_ERRORS, ServiceApiMixin
from allocations.api.request_values import gpu_request_values, serialize_gpu_requests
from allocations.models import AllocationExtension, GpuRequest
from allocations.requests import extension_services, idempotency, reclaim_services, services
from allocations.requests.filtersets import GpuRequestFilterSet
from allocations.requests.run_time import request_run_time
from allocations.requests.waiting import request_waiting
from gpucore.waiting import WAITING_STATUSES
from infra.api_pagination import COUNT_LIMIT, KeysetPageNumberPagination
from infra.filtering import FilterBackend
from infra.renderers import FastJSONRenderer, KubernetesYamlRenderer
from infra.scoping import ScopedViewMixin

MANIFESTS_NOT_RENDERED = (
    "The manifests of this request are not rendered yet: they are rendered when it is approved and provisioned."
)


def _action_schema(summary: str, ok: int) -> Callable[[Any], Any]:
    responses = {ok: api.GpuRequestDetailSerializer, 400: FIELD_ERRORS, 404: ERROR, 409: ERROR, **AUTH_ERRORS}
    return extend_schema(summary=summary, request=api.CommentSerializer, responses=responses, examples=[COMMENT_BODY])


def _field_selection(serializer: type[api.GpuRequestSerializer]) -> list[OpenApiParameter]:
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


SUBMIT_ENDPOINT = "requests.create"


def _replayed(stored: tuple[int, str] | None) -> Response:
    """The stored first answer, marked as a replay."""
    if stored is None:  # cannot happen: the key was just seen committed
        raise exceptions.APIException("The first answer to this Idempotency-Key could not be read.")
    status_code, body = stored
    return Response(json.loads(body), status=status_code, headers={"Idempotent-Replayed": "true"})


@extend_schema_view(
    list=extend_schema(
        summary="List the requests you may see",
        description=(
            "Paginated (`count`, `count_exact`, `next`, `previous`, `results`), 25 a page, `page_size` up to 200; "
            f"`count` stops at {COUNT_LIMIT:,} (`count_exact` false: there are more). `?after=<id>` pages by "
            "ascending id at a constant cost (`count` null). Each item is the full request, as the detail; "
            "`?brief=true`, `?fields=` or `?omit=` answer less, and read less."
        ),
        parameters=_field_selection(api.GpuRequestSerializer),
        responses={200: api.GpuRequestSerializer(many=True), 400: FIELD_ERRORS, 404: ERROR, **AUTH_ERRORS},
    ),
    retrieve=extend_schema(
        summary="One request",
        description=(
            "Every field of the list's items and `waiting`: where a request that is not running waits (the approval "
            "queue, capacity, Kueue or provisioning), its place in the approval queue, the units ahead of it and an "
            "ETA from the pool's current allocations' expiries; null once it runs."
        ),
        parameters=_field_selection(api.GpuRequestDetailSerializer),
        responses={200: api.GpuRequestDetailSerializer, 404: ERROR, **AUTH_ERRORS},
    ),
)
@extend_schema(tags=["requests"])
class GpuRequestViewSet(
    ScopedViewMixin, ServiceApiMixin, mixins.ListModelMixin, mixins.RetrieveModelMixin, viewsets.GenericViewSet
):
    """GPU requests: list, read, submit, and the lifecycle actions (approve, reject, cancel, release, resume, keep)."""

    serializer_class = api.GpuRequestSerializer
    filter_backends = [FilterBackend, SearchFilter, OrderingFilter]
    filterset_class = GpuRequestFilterSet
    lookup_value_regex = r"[^/]+"  # "0.5" or "x" is a JSON 404 from get_object, not Django's HTML 404
    search_fields = ["name", "purpose", "team__slug", "requester__username"]
    ordering_fields = ["id", "created_at", "updated_at", "submitted_at", "approved_at", "status", "name"]
    ordering = ["-created_at", "-id"]

    pagination_class = KeysetPageNumberPagination
    scoped_model = GpuRequest

    def list(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        """A page of the visible requests, each with the fields asked for (all by default)."""
        queryset = self.filter_queryset(self.get_queryset())
        page = self.paginate_queryset(queryset)
        if page is None:  # a view with no pagination
            return Response(serialize_gpu_requests(self.read_page(queryset), self._answered_fields()))
        return self.get_paginated_response(serialize_gpu_requests(page, self._answered_fields()))

    def retrieve(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        """One visible request (404 for others), with the fields asked for (all by default)."""
        rows = self.read_page(self.filter_queryset(self.get_queryset()))
        lookup_url_kwarg = self.lookup_url_kwarg or self.lookup_field
        row = get_object_or_404(rows, **{self.lookup_field: self.kwargs[lookup_url_kwarg]})
        self.check_object_permissions(request, row)
        answer = serialize_gpu_requests([row], self._column_fields())[0]
        if "waiting" in self._answered_fields():
            answer["waiting"] = self._waiting(row)
        if "run_time" in self._answered_fields():
            answer["run_time"] = self._run_time(row)
        return Response(answer)

    def _run_time(self, row: dict[str, Any]) -> dict[str, Any] | None:
        """The detail's ``run_time``: read only for a request that began holding GPUs."""
        if "activated_at" in row and row["activated_at"] is None:
            return None
        run_time = request_run_time(self.get_queryset().get(pk=row["id"]))
        return run_time.to_dict() if run_time is not None else None

    def _waiting(self, row: dict[str, Any]) -> dict[str, Any] | None:
        """The detail's ``waiting``: read only for a request that is not running yet (its status says so)."""
        if "status" in row and row["status"] not in WAITING_STATUSES:
            return None
        obj = self.get_queryset().select_related("node_pool__cluster").get(pk=row["id"])
        waiting = request_waiting(obj)
        return waiting.to_dict() if waiting is not None else None

    def read_page(self, queryset: QuerySet[GpuRequest]) -> QuerySet:
        """The rows of a page (the pagination calls it on the page's slice) or of the detail: the columns of the
        fields answered, as dicts."""
        return gpu_request_values(queryset, self._column_fields())

    def _every_field(self) -> list[str]:
        """Every field the action answers: the detail adds ``waiting`` to the list's."""
        serializer = api.GpuRequestDetailSerializer if self.action == "retrieve" else api.GpuRequestSerializer
        return list(serializer.Meta.fields)

    def _answered_fields(self) -> list[str]:
        """The fields the list or detail answers: those asked for, else all of them."""
        if not hasattr(self, "_answered"):
            chosen = self._selected_fields()
            self._answered = self._every_field() if chosen is None else chosen
        return self._answered

    def _column_fields(self) -> list[str]:
        """The answered fields read from the request's columns (not ``waiting`` or ``run_time``, worked out)."""
        return [name for name in self._answered_fields() if name not in ("waiting", "run_time")]

    def _selected_fields(self) -> list[str] | None:
        """The fields ``?brief=``, ``?fields=`` and ``?omit=`` ask for on list and detail; None for all of them."""
        if self.action not in ("list", "retrieve"):
            return None
        params = self.request.query_params
        every = self._every_field()
        chosen: list[str] | None = None
        brief = params.get("brief", "false").lower()
        if brief not in ("1", "true", "yes", "0", "false", "no"):
            raise exceptions.ValidationError({"brief": ["true or false."]})
        if brief in ("1", "true", "yes"):
            chosen = list(api.GpuRequestSerializer.BRIEF_FIELDS)
        for param in ("fields", "omit"):
            if param not in params:
                continue
            names = [name.strip() for name in params[param].split(",") if name.strip()]
            if unknown := sorted(set(names) - set(every)):
                raise exceptions.ValidationError({param: [f"Unknown field(s): {', '.join(unknown)}."]})
            if param == "fields":
                chosen = [name for name in every if name in names]
            else:
                chosen = [name for name in (chosen or every) if name not in names]
        return chosen

    def get_serializer(self, *args: Any, **kwargs: Any) -> api.GpuRequestSerializer:
        if (fields := self._selected_fields()) is not None:
            kwargs.setdefault("fields", fields)
        return super().get_serializer(*args, **kwargs)

    def _answer(self, request_obj: GpuRequest, code: int = status.HTTP_200_OK) -> Response:
        # Re-read through the selector: the services refresh the row and drop the related objects it had.
        fresh = self.get_queryset().select_related("node_pool__cluster").get(pk=request_obj.pk)
        answer = api.GpuRequestDetailSerializer(fresh, context=self.get_serializer_context()).data
        return Response(answer, status=code)

    def _comment(self, request: Request) -> str:
        body = api.CommentSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        return body.validated_data["comment"]

    @extend_schema(
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
                },
                request_only=True,
            )
        ],
    )
    def create(self, request: Request) -> Response:
        """Submit; with an ``Idempotency-Key``, the first answer is stored with the request and replayed."""
        key = idempotency.key_from_header(request.headers.get(idempotency.HEADER))
        if key is None:
            return self._submit(request)
        scope = {
            "user": request.user,
            "endpoint": SUBMIT_ENDPOINT,
            "key": key,
            "digest": idempotency.body_digest(request.data),
        }
        if (stored := idempotency.stored_answer(**scope)) is not None:
            return _replayed(stored)
        try:
            with transaction.atomic():  # the key commits with the request, or neither does
                response = self._submit(request)
                # Kept as the client read it: the JSON text (a Decimal is a number there, keys in their order).
                body = FastJSONRenderer().render(response.data).decode()
                idempotency.remember_answer(**scope, status=response.status_code, body=body)
        except idempotency.IdempotencyKeyTaken:  # the same key, sent concurrently, committed first
            return _replayed(idempotency.stored_answer(**scope))
        return response

    def _submit(self, request: Request) -> Response:
        """Validate the body and submit through ``gpu_request_submit``."""
        body = api.GpuRequestCreateSerializer(data=request.data, context=self.get_serializer_context())
        body.is_valid(raise_exception=True)
        data = body.validated_data
        created = services.gpu_request_submit(
            acting_user=request.user,
            team=data["team"],
            name=data["name"],
            profile_data=data["profile_data"],
            purpose=data.get("purpose", ""),
            cluster=data.get("cluster"),
            expires_at=data.get("expires_at"),
            image=data.get("image", ""),
            command=data.get("command") or [],
        )
        return self._answer(created, status.HTTP_201_CREATED)

    @_action_schema("Approve a pending request (platform approvers; never your own)", 202)
    @action(detail=True, methods=["post"])
    def approve(self, request: Request, pk: str | None = None) -> Response:
        """Approve: the quota is re-checked and provisioning is queued (202)."""
        obj = services.gpu_request_approve(
            request=self.get_object(), acting_user=request.user, comment=self._comment(request)
        )
        return self._answer(obj, status.HTTP_202_ACCEPTED)

    @_action_schema("Reject a pending request with a reason (platform approvers)", 200)
    @action(detail=True, methods=["post"])
    def reject(self, request: Request, pk: str | None = None) -> Response:
        """Reject; the comment is the reason the requester sees."""
        obj = services.gpu_request_reject(
            request=self.get_object(), acting_user=request.user, comment=self._comment(request)
        )
        return self._answer(obj)

    @_action_schema("Cancel a request that is not approved yet (requester, team lead, approver)", 200)
    @action(detail=True, methods=["post"])
    def cancel(self, request: Request, pk: str | None = None) -> Response:
        """Withdraw a pending request; it ends as released."""
        obj = services.gpu_request_cancel(
            request=self.get_object(), acting_user=request.user, comment=self._comment(request)
        )
        return self._answer(obj)

    @_action_schema("Release an approved or running allocation (requester, team lead, approver)", 200)
    @action(detail=True, methods=["post"])
    def release(self, request: Request, pk: str | None = None) -> Response:
        """Give the allocation back; it stops counting against the quota at once."""
        obj = services.gpu_request_release(
            request=self.get_object(), acting_user=request.user, comment=self._comment(request)
        )
        return self._answer(obj)

    @_action_schema("Resume a request suspended for idling, if the quota allows (requester, team lead, approver)", 202)
    @action(detail=True, methods=["post"])
    def resume(self, request: Request, pk: str | None = None) -> Response:
        """Bring a suspended request back: quota and pool re-checked (400 naming ``quota``), provisioning queued."""
        obj = reclaim_services.gpu_request_resume(
            request=self.get_object(), acting_user=request.user, comment=self._comment(request)
        )
        return self._answer(obj, status.HTTP_202_ACCEPTED)

    @_action_schema("Defer the idle reclaim of a running notebook, once per idle window (requester, lead)", 200)
    @action(detail=True, methods=["post"])
    def keep(self, request: Request, pk: str | None = None) -> Response:
        """Keep an active development workload running: its idle hours count again from now."""
        obj = reclaim_services.gpu_request_keep(
            request=self.get_object(), acting_user=request.user, comment=self._comment(request)
        )
        return self._answer(obj)

    @extend_schema(
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
    @action(detail=True, methods=["post"], filter_backends=[])
    def extend(self, request: Request, pk: str | None = None) -> Response:
        """Ask for an extension of the visible request through ``allocation_extension_request`` (201)."""
        obj = self.get_object()
        body = extension_serializers.AllocationExtensionCreateSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        extension = extension_services.allocation_extension_request(
            request=obj, acting_user=request.user, **body.validated_data
        )
        fresh = self.visible(AllocationExtension).get(pk=extension.pk)
        return Response(extension_serializers.AllocationExtensionSerializer(fresh).data, status=status.HTTP_201_CREATED)

    @extend_schema(
        summary="The request's extensions, newest first",
        responses={200: extension_serializers.AllocationExtensionSerializer(many=True), 404: ERROR, **AUTH_ERRORS},
    )
    @action(detail=True, methods=["get"], filter_backends=[], pagination_class=None)
    def extensions(self, request: Request, pk: str | None = None) -> Response:
        """Every extension asked for on one visible request, with its status and decision."""
        obj = self.get_object()
        rows = self.visible(AllocationExtension).filter(request=obj).order_by("-created_at", "-id")
        return Response(extension_serializers.AllocationExtensionSerializer(rows, many=True).data)

    @extend_schema(
        summary="The request's status changes, oldest first",
        responses={200: api.RequestEventSerializer(many=True), 404: ERROR, **AUTH_ERRORS},
    )
    @action(detail=True, methods=["get"], filter_backends=[], pagination_class=None)
    def events(self, request: Request, pk: str | None = None) -> Response:
        """The append-only event log of one visible request."""
        obj = self.get_object()
        return Response(api.RequestEventSerializer(obj.events.order_by("at", "id"), many=True).data)

    @extend_schema(
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
    @action(
        detail=True,
        methods=["get"],
        filter_backends=[],
        pagination_class=None,
        renderer_classes=[JSONRenderer, KubernetesYamlRenderer],
    )
    def manifests(self, request: Request, pk: str | None = None) -> Response:
        """The visible request's rendered objects (JSON list, or YAML with ``?format=yaml``); 404 until rendered."""
        obj = self.get_object()
        if not obj.manifests:
            raise exceptions.NotFound(MANIFESTS_NOT_RENDERED)
        return Response(obj.manifests)
