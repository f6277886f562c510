"""``GET /api/v1/teams/{slug}/usage/``: a team's GPU use between two times or in a month (docs/api.md).

Thin: the team comes from ``teams_visible_to`` (another team's is a 404, approvers see all) and the figures from
``billing.metering.selectors.team_usage``; a bad parameter is a 400 naming it, in DRF's ``{"field": ["message"]}``
shape.
"""

from __future__ import annotations

from datetime import UTC, datetime, time, timedelta
from typing import Any

from django.utils.dateparse import parse_date, parse_datetime
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema, inline_serializer
from rest_framework import exceptions, serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from allocations.api.permissions import IsActivePortalUser
from allocations.models import Team
from billing.costs.chargeback import month_bounds
from billing.metering.selectors import team_usage
from gpucore.months import MonthError, parse_month
from infra.scoping import ScopedViewMixin

MAX_RANGE = timedelta(days=366)

_USAGE_FIELDS = {
    "gpu_hours": serializers.FloatField(),
    "avg_utilization_pct": serializers.FloatField(allow_null=True),
    "peak_memory_used_gb": serializers.FloatField(allow_null=True),
    "energy_kwh": serializers.FloatField(allow_null=True),
}
UsageResponse = inline_serializer(
    name="TeamUsage",
    fields={
        "team": serializers.CharField(),
        "start": serializers.DateTimeField(),
        "end": serializers.DateTimeField(),
        **_USAGE_FIELDS,
        "by_request": inline_serializer(
            name="TeamUsageByRequest", fields={"request": serializers.IntegerField(), **_USAGE_FIELDS}, many=True
        ),
        "complete": serializers.BooleanField(),
        "incomplete_hours": inline_serializer(
            name="IncompleteHour",
            fields={
                "cluster": serializers.CharField(),
                "hour": serializers.DateTimeField(),
                "status": serializers.CharField(),
            },
            many=True,
        ),
    },
)


def _bad(field: str, message: str) -> exceptions.ValidationError:
    return exceptions.ValidationError({field: [message]})


# What parse_instant takes, as the schema says it: a time with its offset, or a bare date.
INSTANT_SCHEMA = {"oneOf": [{"type": "string", "format": "date-time"}, {"type": "string", "format": "date"}]}


def parse_instant(value: str, *, field: str) -> datetime:
    """An ISO 8601 time with a UTC offset (or ``Z``), or a date meaning 00:00 UTC; 400 naming ``field`` otherwise."""
    value = value.strip()
    try:
        # A bare date first: parse_datetime would read it as a naive midnight.
        day = parse_date(value) if len(value) == 10 else None
        parsed = None if day else parse_datetime(value)
    except ValueError:
        raise _bad(field, "Not a valid date or time.") from None
    if parsed is None and day is None:
        raise _bad(field, "Give an ISO 8601 time such as 2026-10-01T00:00:00Z, or a date such as 2026-10-01.")
    if parsed is None:
        return datetime.combine(day, time(0), tzinfo=UTC)
    if parsed.tzinfo is None:
        raise _bad(field, "Give a UTC offset (e.g. Z or +02:00): times are never guessed.")
    return parsed.astimezone(UTC)


def parse_period(params: Any) -> tuple[datetime, datetime]:
    """[start, end) from ``?month=YYYY-MM`` or ``?start=&end=``; a 400 names the parameter at fault."""
    month, start, end = params.get("month"), params.get("start"), params.get("end")
    if month is not None:
        if start is not None or end is not None:
            raise _bad("month", "Give either month, or start and end, not both.")
        try:
            return month_bounds(parse_month(month))
        except MonthError as exc:
            raise _bad("month", str(exc)) from None
    if start is None and end is None:
        raise _bad("start", "Give start and end (ISO 8601), or month (YYYY-MM).")
    if start is None:
        raise _bad("start", "This parameter is required with end.")
    if end is None:
        raise _bad("end", "This parameter is required with start.")
    begins, ends = parse_instant(start, field="start"), parse_instant(end, field="end")
    if ends <= begins:
        raise _bad("end", "Must be after start.")
    if ends - begins > MAX_RANGE:
        raise _bad("end", "The range may span at most 366 days.")
    return begins, ends


def _iso(value: datetime) -> str:
    return value.astimezone(UTC).isoformat().replace("+00:00", "Z")


class TeamUsageView(ScopedViewMixin, APIView):
    """A team's GPU-hours, utilization, peak memory and energy between two times, per request."""

    permission_classes = [IsActivePortalUser]
    scoped_model = Team

    @extend_schema(
        tags=["teams"],
        operation_id="teams_usage_retrieve",
        parameters=[
            OpenApiParameter("start", INSTANT_SCHEMA, description="ISO 8601 with a UTC offset, or a date (00:00 UTC)."),
            OpenApiParameter("end", INSTANT_SCHEMA, description="Exclusive; with start; a time or a date, as start."),
            OpenApiParameter("month", OpenApiTypes.STR, description="YYYY-MM, instead of start and end."),
        ],
        responses={200: UsageResponse, 400: OpenApiResponse(description="A bad parameter, named."), 404: None},
    )
    def get(self, request: Request, slug: str) -> Response:
        """Usage of a visible team (others: 404) in the requested period."""
        team = self.get_queryset().get(slug=slug)  # another team's: DoesNotExist, a 404
        start, end = parse_period(request.query_params)
        usage = team_usage(team=team, start=start, end=end)
        usage["start"], usage["end"] = _iso(usage["start"]), _iso(usage["end"])
        usage["incomplete_hours"] = [{**row, "hour": _iso(row["hour"])} for row in usage["incomplete_hours"]]
        return Response(usage)
