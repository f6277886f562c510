"""Browser pages of teams: the teams list, a team's page, and its leads managing members (through the services)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied, ValidationError
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_POST

from allocations.models import Membership, Team
from allocations.selectors import teams_visible_to
from allocations.teams.forms import TeamMemberAddForm, TeamMemberRoleForm
from allocations.teams.pages import team_list_overview, team_overview
from allocations.teams.services import team_member_add, team_member_remove, team_member_role_change
from allocations.view_helpers import error_text


@login_required
def team_detail(request: HttpRequest, slug: str) -> HttpResponse:
    """A team: members and roles, quota bars per resource, active allocations and the monthly budget."""
    try:
        context = team_overview(user=request.user, slug=slug, allocations_page=request.GET.get("page"))
    except Team.DoesNotExist as exc:
        raise Http404("No such team among yours.") from exc
    return render(request, "allocations/team_detail.html", context)


@login_required
def team_list(request: HttpRequest) -> HttpResponse:
    """The navigation's Teams: straight to the team when the user sees one, else the teams they may see."""
    teams = list(teams_visible_to(request.user).order_by("name"))
    if len(teams) == 1:
        return redirect("allocations:team-detail", slug=teams[0].slug)
    return render(request, "allocations/team_list.html", team_list_overview(user=request.user, teams=teams))


def _team_for_members(request: HttpRequest, slug: str) -> Team:
    try:
        return teams_visible_to(request.user).get(slug=slug)
    except Team.DoesNotExist as exc:
        raise Http404("No such team among yours.") from exc


def _member_of(team: Team, user_id: int) -> Any:
    membership = Membership.objects.select_related("user").filter(team=team, user_id=user_id).first()
    if membership is None:
        raise Http404("No such member of this team.")
    return membership.user


def _members_done(request: HttpRequest, team: Team, action: Callable[[], str]) -> HttpResponse:
    """Run a membership change; its message or its refusal, then back to the team's Members card."""
    try:
        done = action()
    except PermissionDenied:
        raise
    except ValidationError as exc:
        messages.error(request, error_text(exc))
    else:
        messages.success(request, done)
    return HttpResponseRedirect(reverse("allocations:team-detail", args=[team.slug]) + "#members")


@login_required
@require_POST
def team_member_add_view(request: HttpRequest, slug: str) -> HttpResponse:
    """A lead adds a user to the team (audited)."""
    team = _team_for_members(request, slug)
    form = TeamMemberAddForm(request.POST)

    def add() -> str:
        if not form.is_valid():
            raise ValidationError(form.errors.as_data())
        membership = team_member_add(team=team, acting_user=request.user, **form.cleaned_data)
        return f"{membership.user.get_username()} joined {team.name} as {membership.get_role_display().lower()}."

    return _members_done(request, team, add)


@login_required
@require_POST
def team_member_role_view(request: HttpRequest, slug: str, user_id: int) -> HttpResponse:
    """A lead changes a member's role (audited; the last lead cannot step down)."""
    team = _team_for_members(request, slug)
    member = _member_of(team, user_id)
    form = TeamMemberRoleForm(request.POST)

    def change() -> str:
        if not form.is_valid():
            raise ValidationError(form.errors.as_data())
        membership = team_member_role_change(
            team=team, member=member, role=form.cleaned_data["role"], acting_user=request.user
        )
        return f"{member.get_username()} is now {membership.get_role_display().lower()} of {team.name}."

    return _members_done(request, team, change)


@login_required
@require_POST
def team_member_remove_view(request: HttpRequest, slug: str, user_id: int) -> HttpResponse:
    """A lead removes a member (audited; never the last lead)."""
    team = _team_for_members(request, slug)
    member = _member_of(team, user_id)

    def remove() -> str:
        team_member_remove(team=team, member=member, acting_user=request.user)
        return f"{member.get_username()} was removed from {team.name}."

    return _members_done(request, team, remove)
