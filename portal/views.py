"""Project-level pages: the home overview, sign-in (password and single sign-on) and the readiness check."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.contrib.auth.decorators import login_required
from django.contrib.auth.forms import AuthenticationForm
from django.contrib.auth.views import LoginView
from django.core.exceptions import BadRequest
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render
from django.utils import timezone
from django.views.decorators.http import require_GET

from allocations.home_pages import home_overview
from billing.costs.budget_overview import team_budget_rows
from billing.costs.chargeback import priced_to
from billing.costs.lead_home import lead_overview, lead_teams
from billing.costs.month_spend import home_costs
from billing.costs.waste import month_reclaimable_gpu_hours
from billing.utilization.selectors import fleet_alerts_needing_action
from portal.glossary import glossary_terms
from portal.health import readiness
from portal.sso.backends import password_login, sso_enabled

# The teams Finance's and platform admins' home lists, worst first; the budgets page lists them all.
HOME_BUDGET_ROWS = 8


@login_required
def home(request: HttpRequest) -> HttpResponse:
    """The signed-in user's overview by role: their teams' quota headroom, spend against budget and latest requests;
    for approvers and admins, pending approvals, fleet capacity and the month's spend and idle cost."""
    context = home_overview(user=request.user)
    # Every amount of the page is priced to the start of the hour: the lead's spend by member is kept for the hour,
    # and the budgets beside it then agree with it to the cent.
    as_of = priced_to(timezone.now())
    costs = home_costs(user=request.user, teams=[row["team"] for row in context["team_rows"]], now=as_of)
    for row in context["team_rows"]:
        row["budget"] = costs["budgets"][row["team"].pk]
    context.update(
        month_costs=costs["month_costs"],
        currency=costs["currency"],
        fleet_alerts=fleet_alerts_needing_action(user=request.user),
        reclaimable=month_reclaimable_gpu_hours() if context.get("platform") else None,
        lead_rows=lead_overview(teams=lead_teams(context["team_rows"]), now=as_of),
        money_as_of=as_of,
    )
    if costs["month_costs"] is not None:  # Finance and platform admins: every team's month, worst first
        rows = team_budget_rows(user=request.user, now=as_of, so_far=costs["so_far"], actions=False)
        context["budget_rows"] = rows[:HOME_BUDGET_ROWS]
        context["budget_rows_more"] = max(len(rows) - HOME_BUDGET_ROWS, 0)
    return render(request, "home.html", context)


def bad_request(request: HttpRequest, exception: Exception) -> HttpResponse:
    """The 400 page: a ``BadRequest``'s message names the input at fault (e.g. ``month: Give a month as YYYY-MM``)."""
    # Only our own BadRequest messages are shown; other SuspiciousOperations (a bad Host header...) say nothing.
    message = str(exception) if type(exception) is BadRequest else ""
    return render(request, "400.html", {"message": message}, status=400)


def permission_denied(request: HttpRequest, exception: Exception) -> HttpResponse:
    """The 403 page, with the reason the code gave (``PermissionDenied("Only platform approvers can ...")``)."""
    # The messages our views raise are written for the user; an empty one gets the page's general sentence.
    return render(request, "403.html", {"reason": str(exception)}, status=403)


def page_not_found(request: HttpRequest, exception: Exception) -> HttpResponse:
    """The 404 page. It never says whether the object exists in another team: that would leak it."""
    return render(request, "404.html", {"path": request.path}, status=404)


@require_GET
def healthz(request: HttpRequest) -> JsonResponse:
    """Readiness: the database and the cache answer (the middleware serves it first; this is its URL name)."""
    status, report = readiness()
    return JsonResponse(report, status=status)


class PortalAuthenticationForm(AuthenticationForm):
    """The password form, whose refusal says who may still use a password when single sign-on is the way in."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        policy = password_login()
        refusal = {
            "admins": (
                "Enter the username and password of an administrator account: password sign-in is kept for "
                f"break-glass administrators. Everyone else signs in with {settings.OIDC_PROVIDER_NAME}."
            ),
            "off": f"Password sign-in is switched off: sign in with {settings.OIDC_PROVIDER_NAME}.",
        }.get(policy)
        if refusal:
            # A copy: error_messages is the class's dict, shared with every other form instance.
            self.error_messages = {**self.error_messages, "invalid_login": refusal}


class PortalLoginView(LoginView):
    """Sign in: the single sign-on button when it is configured, and the password form as the policy allows."""

    authentication_form = PortalAuthenticationForm

    def get_context_data(self, **kwargs: Any) -> dict[str, Any]:
        context = super().get_context_data(**kwargs)
        context.update(
            sso_enabled=sso_enabled(),
            sso_provider_name=settings.OIDC_PROVIDER_NAME,
            password_login=password_login(),
        )
        return context


@login_required
@require_GET
def glossary(request: HttpRequest) -> HttpResponse:
    """The portal's words, one meaning each (docs/glossary.md)."""
    intro, terms = glossary_terms()
    return render(request, "glossary.html", {"intro": intro, "terms": terms})
