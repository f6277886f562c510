"""``GET /api/v1/teams/{slug}/budget/``: a team's money budget this month, for notebooks and dashboards.

Thin: the team comes from ``cost_teams_visible_to`` (another team's is a 404; approvers and Finance see all), the
figures from ``team_budget_states`` (the same chargeback as the pages) and the notices sent this month.
"""

from __future__ import annotations

from datetime import UTC
from decimal import Decimal

from django.conf import settings
from django.utils import timezone
from drf_spectacular.utils import extend_schema, inline_serializer
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from allocations.api.permissions import IsActivePortalUser
from allocations.models import Team
from billing.api.scoping import VIEW_COSTS
from billing.costs.month_spend import team_budget_states
from billing.models import BudgetNotice
from gpucore.pricing import to_cents
from infra.scoping import ScopedViewMixin

BudgetResponse = inline_serializer(
    name="TeamBudgetState",
    fields={
        "team": serializers.CharField(),
        "month": serializers.CharField(help_text="YYYY-MM"),
        "currency": serializers.CharField(),
        "spent": serializers.CharField(help_text="Decimal string, to the cent."),
        "budget": serializers.CharField(allow_null=True, help_text="Null: no money budget."),
        "used_pct": serializers.FloatField(allow_null=True),
        "projected": serializers.CharField(help_text="Month-end spend at the last day's pace."),
        "projected_pct": serializers.FloatField(allow_null=True),
        "level": serializers.ChoiceField(choices=["none", "ok", "projected_over", "warning", "over"]),
        "thresholds_pct": serializers.ListField(child=serializers.IntegerField()),
        "notices": inline_serializer(
            name="BudgetNoticeSent",
            fields={"threshold_pct": serializers.IntegerField(), "crossed_at": serializers.DateTimeField()},
            many=True,
        ),
    },
)


def _pct(value: Decimal | None) -> float | None:
    return None if value is None else float(round(value, 1))


class TeamBudgetView(ScopedViewMixin, APIView):
    """A team's spend this month against its money budget, the projection to month end and the alerts sent."""

    permission_classes = [IsActivePortalUser]
    scoped_model = Team
    scope_action = VIEW_COSTS

    @extend_schema(tags=["teams"], operation_id="teams_budget_retrieve", responses={200: BudgetResponse, 404: None})
    def get(self, request: Request, slug: str) -> Response:
        """The budget of a team whose costs the user may see (others: 404)."""
        team = self.get_queryset().get(slug=slug)  # another team's: DoesNotExist, a 404
        now = timezone.now()
        state = team_budget_states(teams=[team], now=now)[team.pk]
        month = now.astimezone(UTC).date().replace(day=1)
        notices = BudgetNotice.objects.filter(team=team, month=month).order_by("threshold_pct")
        return Response(
            {
                "team": team.slug,
                "month": f"{month:%Y-%m}",
                "currency": settings.PORTAL_CURRENCY,
                "spent": str(to_cents(state.spent)),
                "budget": None if state.budget is None else str(to_cents(state.budget)),
                "used_pct": _pct(state.used_pct),
                "projected": str(to_cents(state.projected)),
                "projected_pct": _pct(state.projected_pct),
                "level": state.level.value,
                "thresholds_pct": list(state.thresholds_pct),
                "notices": [
                    {"threshold_pct": n.threshold_pct, "crossed_at": n.crossed_at.isoformat()} for n in notices
                ],
            }
        )
