"""Browser pages of reservations: the list (what waits for an approver, what is coming, what is over), a team lead
reserving units of a pool for a window, an approver deciding, the asker or a lead cancelling."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied, ValidationError
from django.core.paginator import Paginator
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.http import require_POST

from allocations.models import Reservation, ReservationStatus, Team
from allocations.reservations.forms import ReservationDecisionForm, ReservationForm
from allocations.reservations.selectors import (
    pools_for_team,
    reservation_cancel_refusal,
    reservation_decide_refusal,
    reservations_visible_to,
    teams_user_leads,
)
from allocations.reservations.services import reservation_cancel, reservation_create, reservation_decide
from allocations.selectors import teams_visible_to, user_is_approver
from allocations.view_helpers import error_text, require_approver

RESERVATIONS_PER_PAGE = 25


def _visible(request: HttpRequest, pk: int) -> Reservation:
    reservation = reservations_visible_to(user=request.user).filter(pk=pk).first()
    if reservation is None:
        raise Http404("No such reservation among your teams'.")
    return reservation


def _form(request: HttpRequest, teams: list[Team]) -> ReservationForm | None:
    """The reservation form for a lead of ``teams`` (None for anyone who leads no team)."""
    if not teams:
        return None
    pools = {pool.pk: pool for team in teams for pool in pools_for_team(team=team)}
    chosen = request.GET.get("team")
    initial = {"team": next((team.pk for team in teams if team.slug == chosen), teams[0].pk)}
    return ReservationForm(
        request.POST if request.method == "POST" else None, teams=teams, pools=list(pools.values()), initial=initial
    )


@login_required
def reservation_list(request: HttpRequest) -> HttpResponse:
    """Reservations of the user's teams (approvers: all), pending first; a team lead reserves from here."""
    user = request.user
    now = timezone.now()
    led_teams = list(teams_user_leads(user=user))
    led = {team.pk for team in led_teams}
    form = _form(request, led_teams)
    if request.method == "POST":
        if form is None:
            raise PermissionDenied("Only a team lead reserves capacity for the team.")
        if form.is_valid():
            data = form.cleaned_data
            try:
                reservation = reservation_create(
                    acting_user=user,
                    team=data["team"],
                    node_pool=data["node_pool"],
                    resource_name=data["resource_name"].strip(),
                    quantity=data["quantity"],
                    start=data["start"],
                    end=data["end"],
                    reason=data["reason"],
                )
            except ValidationError as exc:
                for field, errors in exc.message_dict.items():
                    for error in errors:
                        form.add_error(field if field in form.fields else None, error)
            else:
                messages.success(
                    request,
                    f"Reservation #{reservation.pk} asked: {reservation.quantity} {reservation.resource_name} on "
                    f"{reservation.node_pool}. A platform approver decides.",
                )
                return redirect(reverse("allocations:reservation-list") + f"?team={reservation.team.slug}")
    team_slug = request.GET.get("team") or ""
    visible = reservations_visible_to(user=user)
    if team_slug:
        visible = visible.filter(team__slug=team_slug)
    pending = [
        {
            "reservation": item,
            "decide": reservation_decide_refusal(user=user, reservation=item) is None,
            "cancel": reservation_cancel_refusal(user=user, reservation=item, now=now, led_team_ids=led) is None,
        }
        for item in visible.filter(status=ReservationStatus.PENDING, end__gt=now).order_by("start", "id")
    ]
    others = visible.exclude(status=ReservationStatus.PENDING, end__gt=now).order_by("-start", "-id")
    page = Paginator(others, RESERVATIONS_PER_PAGE).get_page(request.GET.get("page"))
    rows = [
        {
            "reservation": item,
            "cancel": reservation_cancel_refusal(user=user, reservation=item, now=now, led_team_ids=led) is None,
        }
        for item in page.object_list
    ]
    context = {
        "form": form,
        "pending": pending,
        "rows": rows,
        "page": page,
        "query": f"team={team_slug}" if team_slug else "",
        "approver": user_is_approver(user),
        "teams": teams_visible_to(user).order_by("name").only("slug", "name"),
        "team_slug": team_slug,
        "now": now,
        "decision_form": ReservationDecisionForm(),
    }
    return render(request, "allocations/reservation_list.html", context, status=400 if form and form.errors else 200)


@login_required
@require_POST
def reservation_decision(request: HttpRequest, pk: int) -> HttpResponse:
    """An approver approves (the pool must still hold it) or declines (with a reason) a reservation."""
    require_approver(request)
    reservation = _visible(request, pk)
    form = ReservationDecisionForm(request.POST)
    if not form.is_valid():
        messages.error(request, "Choose Approve or Decline.")
    else:
        approve = form.cleaned_data["decision"] == "approve"
        try:
            reservation_decide(
                acting_user=request.user,
                reservation=reservation,
                approve=approve,
                comment=form.cleaned_data["comment"],
            )
        except (ValidationError, PermissionDenied) as exc:
            messages.error(request, f"Reservation #{reservation.pk} not decided: {error_text(exc)}")
        else:
            messages.success(request, f"Reservation #{reservation.pk} {'approved' if approve else 'declined'}.")
    return redirect("allocations:reservation-list")


@login_required
@require_POST
def reservation_cancel_view(request: HttpRequest, pk: int) -> HttpResponse:
    """Who asked, or a lead of the team, cancels a reservation that is not over."""
    reservation = _visible(request, pk)
    try:
        reservation_cancel(acting_user=request.user, reservation=reservation)
    except (ValidationError, PermissionDenied) as exc:
        messages.error(request, f"Reservation #{reservation.pk} not cancelled: {error_text(exc)}")
    else:
        messages.success(request, f"Reservation #{reservation.pk} cancelled: its units are free again.")
    return redirect(reverse("allocations:reservation-list") + f"?team={reservation.team.slug}")
