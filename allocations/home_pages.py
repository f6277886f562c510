"""What the home page shows: the user's teams with quota use, their own and their teams' latest requests, and for
approvers and admins the pending approvals and every pool's capacity."""

from __future__ import annotations

from django.db.models import Count, Window

from allocations.cluster_pages import node_pool_capacity_rows
from allocations.compiled_reads import CompiledRead
from allocations.home_reads import latest_requests_of_teams_of, quota_usage_of_teams_of, teams_with_quotas_of
from allocations.models import GpuRequest, NodePool, RequestStatus
from allocations.quota_usage import units_allocated_by_pool
from allocations.request_tables import home_request_rows_html, label_request_rows
from allocations.selectors import User, user_is_approver


def home_overview(*, user: User) -> dict[str, object]:
    """What the home page shows: the user's teams with quota use, their own requests and their teams' latest."""
    # The teams with their quotas, cluster and pool joined: two queries, compiled once per process.
    teams_and_quotas = teams_with_quotas_of(user)
    teams = [team for team, _ in teams_and_quotas]
    usage = quota_usage_of_teams_of(user=user, quotas=[quota for _, quotas in teams_and_quotas for quota in quotas])
    team_rows = [
        {
            "team": team,
            "quotas": [
                {"quota": quota, "used": usage[quota.pk], "free": max(quota.limit - usage[quota.pk], 0)}
                for quota in quotas
            ],
        }
        for team, quotas in teams_and_quotas
    ]
    # One query: the teams' latest 30, split into the user's own (their status at a glance) and the others, 10 each.
    # The columns _home_requests.html shows, and the team's name: not the requester, tier, cluster and pool rows.
    recent = latest_requests_of_teams_of(user) if teams else []
    mine = label_request_rows([r for r in recent if r["requester_id"] == user.pk][:10])
    others = label_request_rows([r for r in recent if r["requester_id"] != user.pk][:10])
    return {
        "team_rows": team_rows,
        "my_requests": mine,
        "recent_requests": others,
        "my_requests_html": home_request_rows_html(mine),
        "recent_requests_html": home_request_rows_html(others),
        "platform": platform_overview(user=user),
    }


def platform_overview(*, user: User) -> dict[str, object] | None:
    """An approver's or admin's home: pending approvals (count, the oldest) and every pool's capacity and allocation.
    None for everyone else."""
    if not user_is_approver(user):
        return None
    # Approvers see every request and every cluster (``gpu_request_scope``, ``clusters_visible_to``): the reads
    # depend on nothing of the user, and are compiled once per process (issue #15).
    oldest = _OLDEST_PENDING.first()
    pools = _EVERY_POOL.instances()
    held = units_allocated_by_pool(cluster_ids=sorted({pool.cluster_id for pool in pools}))
    return {
        "pending_count": oldest.pending_count if oldest is not None else 0,
        "oldest_pending": oldest,
        "pools": [node_pool_capacity_rows(pool=pool, allocated=held.get(pool.pk, {})) for pool in pools],
    }


# The oldest pending request with the count of them all in one query (a window counts the rows before LIMIT),
# joining only the team its card names (issue #15: three queries, one a six-table join, before).
_OLDEST_PENDING = CompiledRead(
    GpuRequest,
    lambda: (
        GpuRequest.objects.filter(status=RequestStatus.PENDING_APPROVAL)
        .select_related("team")
        .only("name", "submitted_at", "created_at", "team__name")
        .annotate(pending_count=Window(Count("id")))
        .order_by("submitted_at", "created_at", "id")
    ),
    stand_ins={},
)
# Every pool with its cluster and GPU model, by cluster name then pool name.
_EVERY_POOL = CompiledRead(
    NodePool,
    lambda: NodePool.objects.select_related("cluster", "gpu_model").order_by("cluster__name", "name"),
    stand_ins={},
)
