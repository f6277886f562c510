"""The budgets list (every visible team's spend against its budget, with the actions the user may take) and the team
budget page: a team's money budget, its thresholds and chat URL, edited by those allowed (audited).

Thin: the teams come from ``cost_teams_visible_to`` (another team's is a 404), the rows from
``billing.costs.budget_overview``, the rules from ``billing.costs.budget_services``; a field the user may not change
is shown, not offered.
"""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied, ValidationError
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.utils import timezone

from billing.costs.budget_overview import budget_totals, team_budget_rows
from billing.costs.budget_services import team_budget_update, user_may_edit_budget, user_may_set_budget_amount
from billing.costs.chargeback import priced_to
from billing.costs.visibility import cost_teams_visible_to
from billing.models import TeamBudget


class TeamBudgetForm(forms.Form):
    """The budget's amount (for admins and Finance), thresholds as "50, 80, 100" and the chat's apprise URL."""

    monthly_amount = forms.DecimalField(
        min_value=0, max_digits=14, decimal_places=2, label="Monthly budget", required=True
    )
    thresholds_pct = forms.CharField(
        label="Alert at (percent)", initial="50, 80, 100", help_text="Each notifies once a month, e.g. 50, 80, 100."
    )
    # The URL carries the chat's token: never written back into the page; blank keeps the one set.
    chat_webhook_url = forms.CharField(
        label="Chat (apprise URL)",
        required=False,
        max_length=500,
        help_text="slack://TokenA/TokenB/TokenC, workflows://... (Teams) or mailto://...; blank keeps the current one.",
        widget=forms.PasswordInput(render_value=False, attrs={"autocomplete": "off", "spellcheck": "false"}),
    )
    remove_chat = forms.BooleanField(required=False, label="No chat: e-mail the leads only")

    def __init__(self, *args: Any, may_set_amount: bool, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if not may_set_amount:
            del self.fields["monthly_amount"]

    def clean_thresholds_pct(self) -> list[int]:
        raw = self.cleaned_data["thresholds_pct"]
        try:
            values = [int(part) for part in raw.replace(";", ",").split(",") if part.strip()]
        except ValueError as exc:
            raise ValidationError("Whole percentages separated by commas, e.g. 50, 80, 100.") from exc
        return values


def _chat_url(data: dict[str, Any], budget: TeamBudget | None) -> str:
    """The chat URL to keep: the new one typed, none when removed, else the one already set."""
    if data.get("remove_chat"):
        return ""
    typed = (data.get("chat_webhook_url") or "").strip()
    return typed or (budget.chat_webhook_url if budget else "")


@login_required
def team_budget(request: HttpRequest, slug: str) -> HttpResponse:
    """Show a team's budget; a lead, a platform admin or Finance may change it."""
    team = get_object_or_404(cost_teams_visible_to(request.user), slug=slug)
    budget = TeamBudget.objects.filter(team=team).first()
    may_edit = user_may_edit_budget(request.user, team)
    may_set_amount = user_may_set_budget_amount(request.user)
    initial = {}
    if budget is not None:
        initial = {
            "monthly_amount": budget.monthly_amount,
            "thresholds_pct": ", ".join(str(pct) for pct in budget.thresholds_pct),
        }
    form = TeamBudgetForm(request.POST or None, initial=initial, may_set_amount=may_set_amount)
    status = 200
    if request.method == "POST":
        if not may_edit:
            raise PermissionDenied("Only the team's leads, platform admins and Finance can change its budget.")
        if form.is_valid():
            data = form.cleaned_data
            try:
                team_budget_update(
                    acting_user=request.user,
                    team=team,
                    monthly_amount=data.get("monthly_amount"),
                    thresholds_pct=data["thresholds_pct"],
                    chat_webhook_url=_chat_url(data, budget),
                )
            except ValidationError as exc:
                for field, errors in exc.message_dict.items():
                    form.add_error(field if field in form.fields else None, errors)
            else:
                messages.success(request, f"{team.name}'s budget was saved.")
                return redirect("billing:team-budget", slug=team.slug)
        status = 400
    context = {"team": team, "budget": budget, "form": form, "may_edit": may_edit, "may_set_amount": may_set_amount}
    return render(request, "billing/team_budget.html", context, status=status)


@login_required
def budget_list(request: HttpRequest) -> HttpResponse:
    """Every team whose costs the user sees, worst first: spent, budget, share used, month-end projection, level and
    the actions (set or edit the budget, the team, its reports and dashboards)."""
    as_of = priced_to(timezone.now())  # as the home and the team pages price the month
    rows = team_budget_rows(user=request.user, now=as_of)
    context = {
        "rows": rows,
        "totals": budget_totals(rows),
        "as_of": as_of,
        "may_set_amount": user_may_set_budget_amount(request.user),
    }
    return render(request, "billing/budget_list.html", context)
