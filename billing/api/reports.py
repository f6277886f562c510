"""Cost API: monthly reports (docs/api.md's shape, ``?format=csv``) and the versioned price book.

Thin: reports come from ``monthly_reports_visible_to`` and ``cost_teams_visible_to``, so another team's report is
simply absent (or 404 when asked for by team); a month not closed yet is answered with live estimates
(``status: open``) in the same shape. The price book is readable by every signed-in user; platform admins may
load a new version by posting its YAML.
"""

from __future__ import annotations

from datetime import date
from typing import Any

from django.http import HttpResponse
from django.utils import timezone
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema, inline_serializer
from rest_framework import serializers
from rest_framework.exceptions import NotFound, ValidationError
from rest_framework.renderers import BaseRenderer, BrowsableAPIRenderer, JSONRenderer
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from allocations.api.permissions import IsActivePortalUser
from allocations.api.serializers import MoneySerializer
from allocations.models import Team
from billing.api.scoping import VIEW_COSTS
from billing.costs.reports import month_reports, report_csv, stored_report_payload
from billing.costs.selectors import price_book_in_effect
from billing.costs.services import price_book_load
from billing.models import MonthlyReport, PriceBook
from gpucore.months import MONTH_PATTERN, MonthError, parse_month
from gpucore.pricebook import TCO_FIELDS
from gpucore.pricing import book_in_effect
from infra.scoping import ScopedViewMixin

_MONEY = MoneySerializer()
REPORT_SCHEMA = inline_serializer(
    "MonthlyReport",
    many=True,
    fields={
        "team": serializers.CharField(),
        "month": serializers.CharField(),
        "status": serializers.ChoiceField(choices=["open", "closed"]),
        "total": _MONEY,
        "lines": serializers.ListField(child=serializers.DictField()),
        "idle_share": _MONEY,
        "saving_vs_dedicated": _MONEY,
    },
)


class CsvRenderer(BaseRenderer):
    """Lets ``?format=csv`` through content negotiation; the view writes the CSV itself."""

    media_type = "text/csv"
    format = "csv"
    charset = "utf-8"

    def render(self, data: Any, accepted_media_type: str | None = None, renderer_context: Any = None) -> bytes:
        return data if isinstance(data, bytes) else str(data).encode()


def _month(value: str | None) -> date | None:
    if value is None:  # an empty ?month= is malformed, as the schema's pattern says
        return None
    try:
        return parse_month(value)
    except MonthError as exc:
        raise ValidationError({"month": [str(exc)]}) from exc


class ReportListView(ScopedViewMixin, APIView):
    """Monthly reports of the teams the caller may see."""

    permission_classes = [IsActivePortalUser]
    renderer_classes = [JSONRenderer, BrowsableAPIRenderer, CsvRenderer]
    scoped_model = MonthlyReport

    @extend_schema(
        parameters=[
            OpenApiParameter("team", str, description="Team slug"),
            OpenApiParameter(
                "month",
                {"type": "string", "pattern": MONTH_PATTERN},
                description="YYYY-MM; a month not closed yet is answered with estimates",
            ),
        ],
        responses={
            200: REPORT_SCHEMA,
            400: OpenApiTypes.OBJECT,
            403: OpenApiTypes.OBJECT,
            404: OpenApiTypes.OBJECT,
        },
    )
    def get(self, request: Request) -> Response | HttpResponse:
        month = _month(request.query_params.get("month"))
        slug = request.query_params.get("team") or ""
        teams = self.visible(Team, action=VIEW_COSTS).order_by("slug")
        if slug:
            teams = teams.filter(slug=slug)
            if not teams.exists():
                raise NotFound("No such team among yours.")
        if month is not None:
            payloads = month_reports(teams=teams, month=month)
        else:
            reports = self.get_queryset().filter(team__in=teams).prefetch_related("lines")
            payloads = [stored_report_payload(r) for r in reports.order_by("-month", "team__slug")]
        if request.accepted_renderer.format == "csv":
            response = HttpResponse(report_csv(payloads), content_type="text/csv; charset=utf-8")
            name = f"reports-{slug or 'all'}-{month:%Y-%m}" if month else f"reports-{slug or 'all'}"
            response["Content-Disposition"] = f'attachment; filename="{name}.csv"'
            return response
        return Response(payloads)


def _book(book: PriceBook, current: PriceBook | None) -> dict[str, Any]:
    prices = {}
    for p in book.gpu_prices.all():
        entry: dict[str, Any] = {"hourly_rate": str(p.hourly_rate.normalize())}
        if p.list_hourly is not None:
            entry["hourly"] = str(p.list_hourly.normalize())
        else:
            for name in TCO_FIELDS:
                value = getattr(p, name)
                if value is not None:
                    entry[name] = value if isinstance(value, int) else str(value.normalize())
        prices[p.gpu_model] = entry
    return {
        "version": book.version,
        "currency": book.currency,
        "effective_from": book.effective_from.isoformat(),
        "in_effect": current is not None and current.pk == book.pk,
        "gpu_models": prices,
        "sla_multipliers": {m.tier_slug: str(m.multiplier.normalize()) for m in book.sla_multipliers.all()},
        "loaded_at": book.loaded_at.isoformat(),
    }


class PriceBookView(APIView):
    """Every price book version, newest first, marking the one in effect; admins post a new version's YAML."""

    permission_classes = [IsActivePortalUser]

    @extend_schema(responses={200: OpenApiTypes.OBJECT, 403: OpenApiTypes.OBJECT})
    def get(self, request: Request) -> Response:
        books = list(PriceBook.objects.prefetch_related("gpu_prices", "sla_multipliers").order_by("-effective_from"))
        current = book_in_effect(books, at=timezone.now())
        return Response(
            {"current": _book(current, current) if current else None, "versions": [_book(b, current) for b in books]}
        )

    @extend_schema(
        request={"application/json": {"type": "object", "properties": {"yaml": {"type": "string"}}}},
        responses=dict.fromkeys((200, 201, 400, 403), OpenApiTypes.OBJECT),
    )
    def post(self, request: Request) -> Response:
        # The service checks who may load (platform admins) before it reads the file; its errors reach the client
        # through the project's exception handler (portal.api_errors): 403, or 400 naming the field.
        text = request.data.get("yaml") if hasattr(request.data, "get") else None
        book, created = price_book_load(text=text, acting_user=request.user)
        book = PriceBook.objects.prefetch_related("gpu_prices", "sla_multipliers").get(pk=book.pk)
        return Response(_book(book, price_book_in_effect()), status=201 if created else 200)
