"""The compiled reads behind the home page: the member's teams with their quotas and the units held against them,
and the teams' latest requests, each through SQL compiled once per process (``CompiledRead``, issue #15)."""

from __future__ import annotations

from typing import Any

from allocations.compiled_reads import ID_STAND_IN, CompiledRead
from allocations.models import GpuRequest, Membership, Quota, Team
from allocations.quota_usage import with_units_held
from allocations.selectors import User, member_teams, requests_of_member_teams

# The home's teams and their quotas (cluster and pool joined, and the units held against each), as teams_of() and
# a prefetch read them, through SQL compiled once per process: building these querysets cost ~1.7 ms of CPU per
# view, PostgreSQL ~0.2 ms (issue #15).
_QUOTAS_OF_TEAMS_OF = CompiledRead(
    Quota,
    lambda user_id: with_units_held(
        Quota.objects.filter(team_id__in=Membership.objects.filter(user_id=user_id).values("team_id"))
    ).select_related("cluster", "node_pool__cluster"),
    stand_in=ID_STAND_IN,
)


def teams_with_quotas_of(user: User) -> list[tuple[Team, list[Quota]]]:
    """``teams_of(user)``, each with its quotas in ``Quota``'s order, their cluster and pool (with its cluster) loaded
    and ``units_held`` (``with_units_held``): two queries, read now."""
    if not user.is_authenticated:
        return []
    teams = member_teams(user)
    if not teams:  # no quota to read (an approver or admin outside every team)
        return []
    quotas: dict[int, list[Quota]] = {team.pk: [] for team in teams}
    by_pk = {team.pk: team for team in teams}
    for quota in _QUOTAS_OF_TEAMS_OF.instances(user.pk):
        if quota.team_id in quotas:  # a team joined between the two reads is left for the next view
            quota.team = by_pk[quota.team_id]
            quotas[quota.team_id].append(quota)
    return [(team, quotas[team.pk]) for team in teams]


# The columns the home's request tables show (templates/_home_requests.html), read as plain rows.
HOME_REQUEST_COLUMNS = (
    "id",
    "name",
    "requester_id",
    "team__name",
    "workload_type",
    "resource_name",
    "resource_units",
    "status",
    "created_at",
)
HOME_REQUEST_LIMIT = 30
_LATEST_OF_TEAMS_OF = CompiledRead(
    GpuRequest,
    lambda user_id: GpuRequest.objects.filter(requests_of_member_teams(user_id=user_id)).values(*HOME_REQUEST_COLUMNS)[
        :HOME_REQUEST_LIMIT
    ],
    stand_in=ID_STAND_IN,
)


def latest_requests_of_teams_of(user: User) -> list[dict[str, Any]]:
    """The latest ``HOME_REQUEST_LIMIT`` requests of the user's teams (newest first) as ``HOME_REQUEST_COLUMNS`` rows,
    through SQL compiled once per process; visible to the user whatever their role (their own teams')."""
    if not user.is_authenticated:
        return []
    return _LATEST_OF_TEAMS_OF.values(user.pk)
