"""What the home page shows: the user's teams with quota use, their own and their teams' latest requests, and for
approvers and admins the pending approvals and every pool's capacity."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from django.db.models import Count, Window
from django.utils.safestring import SafeString, mark_safe

from allocations.cluster_pages import node_pool_capacity_rows
from allocations.compiled_reads import CompiledRead
from allocations.home_reads import latest_requests_of_teams_of, teams_with_quotas_of
from allocations.html_text import escaped, shown, width_ratio
from allocations.models import GpuRequest, NodePool, RequestStatus
from allocations.quota_usage import units_allocated_by_pool
from allocations.request_tables import home_request_rows_html, label_request_rows, slug_url_maker
from allocations.selectors import User, user_is_approver


def home_overview(*, user: User) -> dict[str, object]:
    """What the home page shows: the user's teams with quota use, their own requests and their teams' latest."""
    # The teams with their quotas, cluster and pool joined, and what is held against each: two queries, compiled once
    # per process.
    teams_and_quotas = teams_with_quotas_of(user)
    teams = [team for team, _ in teams_and_quotas]
    team_url = slug_url_maker("allocations:team-detail")
    team_rows = []
    for team, quotas in teams_and_quotas:
        quota_rows = [
            {"quota": quota, "used": quota.units_held, "free": max(quota.limit - quota.units_held, 0)}
            for quota in quotas
        ]
        team_rows.append(
            {"team": team, "url": team_url(team.slug), "quotas": quota_rows, "quotas_html": quota_rows_html(quota_rows)}
        )
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
    capacity = [node_pool_capacity_rows(pool=pool, allocated=held.get(pool.pk, {})) for pool in pools]
    return {
        "pending_count": oldest.pending_count if oldest is not None else 0,
        "oldest_pending": oldest,
        "pools": capacity,
        "pools_html": fleet_capacity_rows_html(capacity),
    }


# A quota's row of a team card and a resource's row of the fleet's capacity, as templates/home.html printed them with
# {% for %}: filled here, each value as {{ }} and {% widthratio %} print it (the engine took 0.13 ms a row, 0.65 ms
# for a team's five quotas: a tenth of the page; issue #15). Change the markup here, not in the template.
_QUOTA_ROW = (
    "\n        <tr>"
    "\n          <td><code>{resource}</code></td>"
    "\n          <td>{scope}</td>"
    '\n          <td class="num">{used} / {limit}'
    '\n            <div class="bar" role="img" aria-label="{used} of {limit} used">'
    '<span style="width: {width}%"></span></div>'
    "\n          </td>"
    '\n          <td class="num headroom-free">{free}</td>'
    "\n        </tr>\n      "
)
_CAPACITY_ROW = (
    "\n        <tr>"
    '\n          <td><a href="{url}">{cluster}/{pool}</a> <span class="muted small">{model}</span></td>'
    "\n          <td><code>{resource}</code></td>"
    '\n          <td class="num">{allocated} / {configured}'
    '\n            <div class="bar{over}" role="img" aria-label="{allocated} of {configured} allocated">'
    '<span style="width: {width}%"></span></div>'
    "\n          </td>"
    "\n        </tr>\n      "
)


def quota_rows_html(quota_rows: Iterable[Mapping[str, Any]]) -> SafeString:
    """A team card's quota table rows (``{"quota", "used", "free"}`` each) as HTML."""
    rows = []
    for row in quota_rows:
        quota, used = row["quota"], row["used"]
        rows.append(
            _QUOTA_ROW.format(
                resource=escaped(quota.resource_name),
                scope=escaped(quota.scope_label),
                used=shown(used),
                limit=shown(quota.limit),
                width=width_ratio(used, quota.limit),
                free=shown(row["free"]),
            )
        )
    return mark_safe("".join(rows))  # noqa: S308 - every value escaped


def fleet_capacity_rows_html(capacity: Iterable[Mapping[str, Any]]) -> SafeString:
    """The fleet capacity table's rows, from ``node_pool_capacity_rows`` of each pool, as HTML."""
    cluster_url = slug_url_maker("allocations:cluster-detail")
    rows = []
    for item in capacity:
        pool = item["pool"]
        named = {
            "url": escaped(cluster_url(pool.cluster.name)),
            "cluster": escaped(pool.cluster.name),
            "pool": escaped(pool.name),
            "model": escaped(pool.gpu_model.name),
        }
        for row in item["rows"]:
            allocated, configured = row["allocated"], row["configured"]
            rows.append(
                _CAPACITY_ROW.format(
                    **named,
                    resource=escaped(row["resource"]),
                    allocated=shown(allocated),
                    configured=shown(configured),
                    over=" over" if row["over"] else "",
                    width=width_ratio(allocated, configured),
                )
            )
    return mark_safe("".join(rows))  # noqa: S308 - every value escaped


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
