"""What the home page shows: the user's teams with quota use, their own and their teams' latest requests, and for
approvers and admins the pending approvals and every pool's capacity."""

from __future__ import annotations

from django.db.models import Count, OuterRef, Prefetch, Subquery, Window

from allocations.clusters.pages import node_pool_capacity_rows
from allocations.models import Membership, NodePool, Quota, RequestStatus
from allocations.selectors import User, teams_of, user_is_approver, visible_requests
from allocations.teams.quota_usage import units_allocated_by_pool, with_units_held

# The teams' latest requests read for the two tables, and the rows each table shows.
LATEST_REQUESTS = 30
ROWS_PER_TABLE = 10
# The columns templates/_home_requests.html prints.
HOME_REQUEST_FIELDS = (
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


def home_overview(*, user: User) -> dict[str, object]:
    """What the home page shows: the user's teams with quota use, their own requests and their teams' latest."""
    # The teams, then their quotas with cluster and pool joined and what is held against each: two queries.
    quotas = with_units_held(Quota.objects.select_related("cluster", "node_pool__cluster"))
    # The user's role in each team rides along (a lead's home adds the team's spend and waiting items).
    role = Membership.objects.filter(user_id=user.pk, team=OuterRef("pk")).order_by().values("role")[:1]
    teams = list(
        teams_of(user).annotate(viewer_role=Subquery(role)).prefetch_related(Prefetch("quotas", queryset=quotas))
    )
    team_rows = [
        {
            "team": team,
            "quotas": [
                {"quota": quota, "used": quota.units_held, "free": max(quota.limit - quota.units_held, 0)}
                for quota in team.quotas.all()
            ],
        }
        for team in teams
    ]
    # One query: the teams' latest, split into the user's own (their status at a glance) and the others'.
    recent = (
        list(
            visible_requests(user)
            .filter(team__in=teams)
            .select_related("team")
            .only(*HOME_REQUEST_FIELDS)[:LATEST_REQUESTS]
        )
        if teams
        else []
    )
    return {
        "team_rows": team_rows,
        "my_requests": [r for r in recent if r.requester_id == user.pk][:ROWS_PER_TABLE],
        "recent_requests": [r for r in recent if r.requester_id != user.pk][:ROWS_PER_TABLE],
        "platform": platform_overview(user=user),
    }


def platform_overview(*, user: User) -> dict[str, object] | None:
    """An approver's or admin's home: pending approvals (count, the oldest) and every pool's capacity and allocation.
    None for everyone else."""
    if not user_is_approver(user):
        return None
    # The oldest pending request with the count of them all in one query (a window counts the rows before LIMIT),
    # joining only the team its card names.
    oldest = (
        visible_requests(user)
        .filter(status=RequestStatus.PENDING_APPROVAL)
        .select_related("team")
        .only("name", "submitted_at", "created_at", "team__name")
        .annotate(pending_count=Window(Count("id")))
        .order_by("submitted_at", "created_at", "id")
        .first()
    )
    pools = list(NodePool.objects.select_related("cluster", "gpu_model").order_by("cluster__name", "name"))
    held = units_allocated_by_pool(cluster_ids=sorted({pool.cluster_id for pool in pools}))
    return {
        "pending_count": oldest.pending_count if oldest is not None else 0,
        "oldest_pending": oldest,
        "pools": [node_pool_capacity_rows(pool=pool, allocated=held.get(pool.pk, {})) for pool in pools],
    }
