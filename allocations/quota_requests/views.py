"""Browser pages of quotas: every visible team's quotas with used / nominal / borrowing, approvers editing them and
deciding increases, and a team asking for more (through the services)."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied, ValidationError
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_POST

from allocations.models import Quota, QuotaRequestStatus
from allocations.quota_requests.forms import QuotaDecisionForm, QuotaEditForm, QuotaIncreaseForm
from allocations.quota_requests.selectors import (
    UnitPrice,
    quota_increase_ask_refusal,
    quota_increase_decide_refusal,
    quota_increases_visible_to,
    quota_rows,
    quota_unit_monthly_price,
    quotas_visible_to,
)
from allocations.quota_requests.services import (
    quota_increase_decide,
    quota_increase_request_create,
    quota_update,
)
from allocations.selectors import teams_of, teams_visible_to, user_is_approver
from allocations.view_helpers import error_text, require_approver

RECENT_DECISIONS = 10


def _visible_quota(request: HttpRequest, pk: int) -> Quota:
    quota = quotas_visible_to(user=request.user).filter(pk=pk).first()
    if quota is None:
        raise Http404("No such quota among your teams'.")
    return quota


@login_required
def quota_list(request: HttpRequest) -> HttpResponse:
    """Quotas per team and scope: used / nominal / borrowing, pending increases first (approvers decide them)."""
    user = request.user
    team_slug = request.GET.get("team") or ""
    quotas = quotas_visible_to(user=user).order_by("team__name", "resource_name", "id")
    increases = quota_increases_visible_to(user=user)
    if team_slug:
        quotas = quotas.filter(team__slug=team_slug)
        increases = increases.filter(team__slug=team_slug)
    approver = user_is_approver(user)
    own_teams = set(teams_of(user).values_list("pk", flat=True))
    # One price per pool, cluster and resource: the pending asks of many teams share them.
    prices: dict[tuple[int | None, int | None, str], UnitPrice] = {}

    def unit_price(quota: Quota) -> UnitPrice:
        key = (quota.node_pool_id, quota.cluster_id, quota.resource_name)
        if key not in prices:
            prices[key] = quota_unit_monthly_price(quota)
        return prices[key]

    pending = [
        {
            "increase": increase,
            "cost": unit_price(increase.quota).times(increase.units_added),
            "decide": quota_increase_decide_refusal(user=user, increase=increase) is None,
        }
        for increase in increases.filter(status=QuotaRequestStatus.PENDING).order_by("created_at")
    ]
    rows = quota_rows(quotas=list(quotas))
    for row in rows:
        row["may_ask"] = row["quota"].team_id in own_teams and row["pending"] is None
        if approver:
            quota = row["quota"]
            row["edit_form"] = QuotaEditForm(
                initial={
                    "limit": quota.limit,
                    "borrowing_limit": quota.borrowing_limit,
                    "lending_limit": quota.lending_limit,
                },
                prefix=f"q{quota.pk}",
            )
    context = {
        "rows": rows,
        "pending": pending,
        "decided": increases.exclude(status=QuotaRequestStatus.PENDING)[:RECENT_DECISIONS],
        "approver": approver,
        "teams": teams_visible_to(user).order_by("name").only("slug", "name"),
        "team_slug": team_slug,
        "decision_form": QuotaDecisionForm(),
    }
    return render(request, "allocations/quota_list.html", context)


@login_required
def quota_increase_new(request: HttpRequest, pk: int) -> HttpResponse:
    """Ask for a larger nominal quota: the units wanted and why, with what a unit costs a month."""
    quota = _visible_quota(request, pk)
    refusal = quota_increase_ask_refusal(user=request.user, quota=quota)
    if refusal:
        raise PermissionDenied(refusal)
    wanted = request.GET.get("units", "")
    initial = {"requested_limit": quota.limit + int(wanted)} if wanted.isdigit() else {}
    form = QuotaIncreaseForm(request.POST or None, initial=initial)
    if request.method == "POST" and form.is_valid():
        try:
            increase = quota_increase_request_create(
                acting_user=request.user,
                quota=quota,
                requested_limit=form.cleaned_data["requested_limit"],
                reason=form.cleaned_data["reason"],
            )
        except ValidationError as exc:
            for field, errors in exc.message_dict.items():
                for error in errors:
                    form.add_error(field if field in form.fields else None, error)
        else:
            messages.success(
                request,
                f"Asked for {increase.requested_limit} {quota.resource_name} for {quota.team.name}: "
                "a platform approver decides.",
            )
            return redirect(reverse("allocations:quota-list") + f"?team={quota.team.slug}")
    rows = quota_rows(quotas=[quota])
    context = {
        "form": form,
        "row": rows[0],
        "unit_price": quota_unit_monthly_price(quota),
    }
    return render(request, "allocations/quota_increase_form.html", context, status=400 if form.errors else 200)


@login_required
@require_POST
def quota_increase_decision(request: HttpRequest, pk: int) -> HttpResponse:
    """An approver grants (the quota becomes the asked number) or declines (with a reason) an increase."""
    require_approver(request)
    increase = quota_increases_visible_to(user=request.user).filter(pk=pk).first()
    if increase is None:
        raise Http404("No such quota increase.")
    form = QuotaDecisionForm(request.POST)
    if not form.is_valid():
        messages.error(request, "Choose Grant or Decline.")
    else:
        grant = form.cleaned_data["decision"] == "grant"
        try:
            quota_increase_decide(
                acting_user=request.user, increase=increase, grant=grant, comment=form.cleaned_data["comment"]
            )
        except (ValidationError, PermissionDenied) as exc:
            messages.error(request, error_text(exc))
        else:
            done = f"granted: {increase.team.name} now holds up to {increase.requested_limit}" if grant else "declined"
            messages.success(request, f"Quota increase #{increase.pk} {done}.")
    return redirect("allocations:quota-list")


@login_required
@require_POST
def quota_edit(request: HttpRequest, pk: int) -> HttpResponse:
    """An approver sets a quota's nominal, borrowing and lending limits (audited)."""
    require_approver(request)
    quota = _visible_quota(request, pk)
    form = QuotaEditForm(request.POST, prefix=f"q{quota.pk}")
    if not form.is_valid():
        messages.error(request, "Quota not changed: " + " ".join(m for ms in form.errors.values() for m in ms))
    else:
        data = form.cleaned_data
        try:
            quota_update(
                acting_user=request.user,
                quota=quota,
                limit=data["limit"],
                borrowing_limit=data["borrowing_limit"],
                lending_limit=data["lending_limit"],
                comment=data["comment"],
            )
        except ValidationError as exc:
            messages.error(request, f"Quota not changed: {error_text(exc)}")
        else:
            messages.success(
                request, f"Quota of {quota.team.name} for {quota.resource_name} ({quota.scope_label}) saved."
            )
    return redirect(reverse("allocations:quota-list") + f"?team={quota.team.slug}#quota-{quota.pk}")
