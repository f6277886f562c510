"""What the team pages show: a team's members, quota use and allocations, and the list of visible teams."""

from __future__ import annotations

from django.utils import timezone

from allocations.models import QUOTA_HOLDING_STATUSES, RequestStatus, Role, Team
from allocations.selectors import (
    User,
    gpu_requests_visible_to,
    membership_role,
    team_roles_and_sizes,
    teams_visible_to,
    user_reads_every_team,
)
from allocations.teams.quota_usage import quota_usage_by_quota
from allocations.teams.reservation_holds import team_reservations
from allocations.teams.services import team_members_refusal
from infra.pagination import BoundedCountPaginator

# Active allocations a team page shows at once; more are paged (a team can hold thousands).
ALLOCATIONS_PER_PAGE = 25
# Reservations a team page lists; the reservations page has them all.
RESERVATIONS_SHOWN = 10


def team_overview(*, user: User, slug: str, allocations_page: str | None = None) -> dict[str, object]:
    """A team page: members and roles, quota use per resource, a page of its active allocations (``allocations_page``,
    the ``?page=`` asked for); Team.DoesNotExist if not visible."""
    team = teams_visible_to(user).get(slug=slug)
    memberships = team.memberships.select_related("user").order_by("role", "user__username")
    quota_rows = list(team.quotas.select_related("cluster", "node_pool__cluster"))
    usage = quota_usage_by_quota(quotas=quota_rows)
    running = quota_usage_by_quota(quotas=quota_rows, statuses=[RequestStatus.ACTIVE])
    quotas = [
        {
            "quota": quota,
            "used": usage.get(quota.pk, 0),
            "running": running.get(quota.pk, 0),
            # Units held beyond the nominal quota: lent by the cohort to preemptible (tier 3) requests.
            "borrowed": max(usage.get(quota.pk, 0) - quota.limit, 0),
        }
        for quota in quota_rows
    ]
    allocations = (
        gpu_requests_visible_to(user=user)
        .filter(team=team, status__in=QUOTA_HOLDING_STATUSES)
        .select_related("node_pool__cluster")  # each row names its pool and cluster: one query, not one per row
        .order_by("-approved_at", "-id")
    )
    lead_count = sum(1 for membership in memberships if membership.role == Role.LEAD)
    return {
        "team": team,
        "memberships": memberships,
        "quotas": quotas,
        "allocations": BoundedCountPaginator(allocations, ALLOCATIONS_PER_PAGE, count_with_page=True).get_page(
            allocations_page
        ),
        "role": membership_role(user=user, team=team),
        # Leads manage members; the last lead's row offers neither removal nor stepping down (the service refuses).
        "can_manage_members": team_members_refusal(user=user, team=team) is None,
        "lead_count": lead_count,
        "role_choices": Role.choices,
        # Open reservations not over yet (a team has a handful: windows are bounded and decided one by one).
        "reservations": list(team_reservations(team=team, now=timezone.now())[:RESERVATIONS_SHOWN]),
        "now": timezone.now(),
    }


def team_list_overview(*, user: User, teams: list[Team]) -> dict[str, object]:
    """The teams page: each visible team with its member count, cost centre and the user's role in it."""
    roles, counts = team_roles_and_sizes(user=user, teams=teams)
    rows = [
        {
            "team": team,
            "members": counts.get(team.pk, 0),
            "role": Role(roles[team.pk]).label if team.pk in roles else "",
        }
        for team in teams
    ]
    return {"rows": rows, "teams": teams, "reads_every_team": user_reads_every_team(user)}
