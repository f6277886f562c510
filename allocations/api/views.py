"""Thin API views: parse with an input serializer, call a service or a selector, answer with an output serializer.

Querysets come from the visibility registry (``infra.scoping``: the selectors ``gpu_requests_visible_to`` and
``allocation_extensions_visible_to``), so another team's objects are 404 by construction. Rule-bearing writes are
explicit actions that call the services, whose errors the project's one exception handler (``portal.api_errors``)
answers in DRF's shape: ``ValidationError`` -> 400 ``{"field": [...]}``, ``PermissionDenied`` -> 403 with the
service's reason, ``InvalidTransition`` -> 409.
"""

from __future__ import annotations

import json
from typing import Any

from django.db import transaction
from django.db.models import QuerySet
from drf_spectacular.utils import (
    extend_schema,
)
from rest_framework import exceptions, mixins, status, viewsets
from rest_framework.decorators import action
from rest_framework.filters import OrderingFilter, SearchFilter
from rest_framework.generics import get_object_or_404
from rest_framework.renderers import JSONRenderer
from rest_framework.request import Request
from rest_framework.response import Response

from allocations.api import extension_serializers, request_schema
from allocations.api import serializers as api
from allocations.api.common import AUTH_ERRORS, ERROR, ServiceApiMixin
from allocations.api.request_values import gpu_request_values, serialize_gpu_requests
from allocations.models import AllocationExtension, GpuRequest
from allocations.requests import extension_services, idempotency, reclaim_services, services
from allocations.requests.filtersets import GpuRequestFilterSet
from allocations.requests.run_time import request_run_time
from allocations.requests.waiting import request_waiting
from gpucore.waiting import WAITING_STATUSES
from infra.api_pagination import KeysetPageNumberPagination
from infra.filtering import FilterBackend
from infra.renderers import FastJSONRenderer, KubernetesYamlRenderer
from infra.scoping import ScopedViewMixin

SUBMIT_ENDPOINT = "requests.create"


def _replayed(stored: tuple[int, str] | None) -> Response:
    """The stored first answer, marked as a replay."""
    if stored is None:  # cannot happen: the key was just seen committed
        raise exceptions.APIException("The first answer to this Idempotency-Key could not be read.")
    status_code, body = stored
    return Response(json.loads(body), status=status_code, headers={"Idempotent-Replayed": "true"})


@request_schema.REQUEST_READS
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

    @request_schema.SUBMIT
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

    @request_schema.action_schema("Approve a pending request (platform approvers; never your own)", 202)
    @action(detail=True, methods=["post"])
    def approve(self, request: Request, pk: str | None = None) -> Response:
        """Approve: the quota is re-checked and provisioning is queued (202)."""
        obj = services.gpu_request_approve(
            request=self.get_object(), acting_user=request.user, comment=self._comment(request)
        )
        return self._answer(obj, status.HTTP_202_ACCEPTED)

    @request_schema.action_schema("Reject a pending request with a reason (platform approvers)", 200)
    @action(detail=True, methods=["post"])
    def reject(self, request: Request, pk: str | None = None) -> Response:
        """Reject; the comment is the reason the requester sees."""
        obj = services.gpu_request_reject(
            request=self.get_object(), acting_user=request.user, comment=self._comment(request)
        )
        return self._answer(obj)

    @request_schema.action_schema("Cancel a request that is not approved yet (requester, team lead, approver)", 200)
    @action(detail=True, methods=["post"])
    def cancel(self, request: Request, pk: str | None = None) -> Response:
        """Withdraw a pending request; it ends as released."""
        obj = services.gpu_request_cancel(
            request=self.get_object(), acting_user=request.user, comment=self._comment(request)
        )
        return self._answer(obj)

    @request_schema.action_schema("Release an approved or running allocation (requester, team lead, approver)", 200)
    @action(detail=True, methods=["post"])
    def release(self, request: Request, pk: str | None = None) -> Response:
        """Give the allocation back; it stops counting against the quota at once."""
        obj = services.gpu_request_release(
            request=self.get_object(), acting_user=request.user, comment=self._comment(request)
        )
        return self._answer(obj)

    @request_schema.action_schema(
        "Resume a request suspended for idling, if the quota allows (requester, team lead, approver)", 202
    )
    @action(detail=True, methods=["post"])
    def resume(self, request: Request, pk: str | None = None) -> Response:
        """Bring a suspended request back: quota and pool re-checked (400 naming ``quota``), provisioning queued."""
        obj = reclaim_services.gpu_request_resume(
            request=self.get_object(), acting_user=request.user, comment=self._comment(request)
        )
        return self._answer(obj, status.HTTP_202_ACCEPTED)

    @request_schema.action_schema(
        "Defer the idle reclaim of a running notebook, once per idle window (requester, lead)", 200
    )
    @action(detail=True, methods=["post"])
    def keep(self, request: Request, pk: str | None = None) -> Response:
        """Keep an active development workload running: its idle hours count again from now."""
        obj = reclaim_services.gpu_request_keep(
            request=self.get_object(), acting_user=request.user, comment=self._comment(request)
        )
        return self._answer(obj)

    @request_schema.EXTEND
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

    @request_schema.MANIFESTS
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
            raise exceptions.NotFound(request_schema.MANIFESTS_NOT_RENDERED)
        return Response(obj.manifests)
