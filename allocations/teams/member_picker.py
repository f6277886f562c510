"""The team page's user picker: a lead searches portal users by name, username or e-mail to add one to the team."""

from __future__ import annotations

from django.contrib.auth import get_user_model
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.db.models import Q
from django.http import Http404, HttpRequest, JsonResponse
from django.views.decorators.http import require_GET

from allocations.models import Team
from allocations.selectors import teams_visible_to
from allocations.teams.services import team_members_refusal

MIN_QUERY = 2
MAX_CANDIDATES = 10


def member_candidates(*, team: Team, query: str) -> list[dict[str, str]]:
    """Active users not in the team whose username, name or e-mail contains ``query`` (at most ten, by username).
    Only the username and the name are answered: the e-mail finds a colleague but is not shown."""
    query = query.strip()
    if len(query) < MIN_QUERY:
        return []
    users = (
        get_user_model()
        .objects.filter(is_active=True)
        .filter(
            Q(username__icontains=query)
            | Q(first_name__icontains=query)
            | Q(last_name__icontains=query)
            | Q(email__icontains=query)
        )
        .exclude(memberships__team=team)
        .order_by("username")
        .only("username", "first_name", "last_name")[:MAX_CANDIDATES]
    )
    return [{"username": user.get_username(), "name": user.get_full_name()} for user in users]


@login_required
@require_GET
def team_member_candidates(request: HttpRequest, slug: str) -> JsonResponse:
    """Leads only: ``?q=`` -> ``{"users": [{"username", "name"}]}`` for the add-member field's suggestions."""
    team = teams_visible_to(request.user).filter(slug=slug).first()
    if team is None:
        raise Http404("No such team among yours.")
    refusal = team_members_refusal(user=request.user, team=team)
    if refusal:
        raise PermissionDenied(refusal)
    return JsonResponse({"users": member_candidates(team=team, query=request.GET.get("q", ""))})
