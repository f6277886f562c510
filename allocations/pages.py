"""What each browser page shows: view-models built from selectors (reads) and the services' own rules.

Above the services and below the views: only views (``allocations.views``, ``portal.views``) import this module.
Selectors stay plain reads scoped to the user; the shape of a page (rows, buttons, YAML to show) is built here.
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Callable
from functools import lru_cache
from urllib.parse import quote, urlencode

from django.db.models import Count, Q, Window
from django.urls import reverse
from django.utils import timezone
from django.utils.html import escape
from django.utils.http import RFC3986_SUBDELIMS
from django.utils.safestring import SafeString, mark_safe
from django.utils.timesince import timesince

from allocations.extension_services import extend_refusal, extension_decide_refusal
from allocations.membership_services import team_members_refusal
from allocations.models import (
    POLLING_STATUSES,
    QUOTA_HOLDING_STATUSES,
    TERMINAL_STATUSES,
    ExtensionStatus,
    GpuRequest,
    NodePool,
    RequestStatus,
    Role,
    Team,
    WorkloadType,
)
from allocations.placement import gpu_hourly_rates, gpu_price
from allocations.provisioning import pool_context
from allocations.selectors import (
    User,
    catalog_from_db,
    clusters_visible_to,
    gpu_request_detail,
    gpu_requests_visible_to,
    latest_requests_of_teams_of,
    membership_role,
    quota_usage_by_quota,
    quota_usage_of_teams_of,
    team_roles_and_sizes,
    teams_visible_to,
    teams_with_quotas_of,
    units_allocated_by_pool,
    user_is_approver,
)
from allocations.services import (
    ROLE_NOT_READ,
    RoleNotRead,
    approve_refusal,
    cancel_refusal,
    reapply_refusal,
    release_refusal,
)
from gpucore.manifests import ManifestError, render_mig_parted_configmap, render_time_slicing_configmap, to_yaml
from gpucore.troubleshooting import troubleshoot
from gpucore.vocabulary import SharingMode

# Observed phases of an active request that mean its workload is not running as wanted (the cluster page lists them).
DRIFT_PHASES = ("NotFound", "Pending")


# --- Links of list pages ----------------------------------------------------------------------------------------

# Stand-ins reversed once per page; each row's link is then the same URL with its own id or slug (issue #15: a
# ``{% url %}`` per row of a 25-row table cost as much as the table's query).
_ID_STAND_IN = 987654321987
_SLUG_STAND_IN = "url-stand-in-slug"


def id_url_maker(viewname: str) -> Callable[[int], str]:
    """A function giving ``reverse(viewname, args=[pk])`` for any integer ``pk``, at the cost of one ``reverse``."""
    head, _, tail = reverse(viewname, args=[_ID_STAND_IN]).partition(str(_ID_STAND_IN))
    return lambda pk: f"{head}{int(pk)}{tail}"


def slug_url_maker(viewname: str) -> Callable[[str], str]:
    """A function giving ``reverse(viewname, args=[slug])`` for any slug, at the cost of one ``reverse``."""
    head, _, tail = reverse(viewname, args=[_SLUG_STAND_IN]).partition(_SLUG_STAND_IN)
    # Quoted as reverse() quotes its arguments (a slug's letters, digits, - and _ are left as they are).
    return lambda slug: f"{head}{quote(str(slug), safe=RFC3986_SUBDELIMS + '/~:@')}{tail}"


WORKLOAD_LABELS = dict(WorkloadType.choices)
STATUS_LABELS = dict(RequestStatus.choices)


def label_request_rows(rows: list[dict[str, object]]) -> list[dict[str, object]]:
    """Request rows read with ``values()`` given what their tables print: ``url`` (and ``team_url`` when the row has
    ``team__slug``), ``workload_label`` and ``status_label`` as ``get_*_display`` gives them, and when the row has
    ``created_at`` the texts of ``{{ created_at|date:'c' }}`` (``created_iso``) and ``{{ created_at|timesince }}``
    (``created_ago``, against one clock reading for the page); the rows themselves."""
    request_url = id_url_maker("allocations:request-detail")
    team_url = slug_url_maker("allocations:team-detail")
    now = timezone.now()
    for row in rows:
        if "created_at" in row:
            # Built here, not by the template's filters per row (~1 ms of a 25-row table: issue #15).
            created = row["created_at"]
            row["created_iso"] = timezone.localtime(created).isoformat() if created else ""
            row["created_ago"] = timesince(created, now) if created else ""
        row["url"] = request_url(row["id"])
        if "team__slug" in row:
            row["team_url"] = team_url(row["team__slug"])
        row["workload_label"] = WORKLOAD_LABELS.get(row["workload_type"], row["workload_type"])
        row["status_label"] = STATUS_LABELS.get(row["status"], row["status"])
    return rows


# One row of the my-requests table, as templates/allocations/request_list.html printed it with a {% for %} over the
# page: filled here, every value escaped as {{ }} escapes it (the engine's twelve variables and two tags per row cost
# ~0.75 ms of a 25-row page: issue #15). Change the markup here, not in the template.
_REQUEST_LIST_ROW = (
    "\n      <tr>"
    "\n        <td>{id}</td>"
    '\n        <td><a href="{url}">{name}</a></td>'
    '\n        <td><a href="{team_url}">{team}</a></td>'
    "\n        <td>{requester}</td>"
    "\n        <td>{workload}</td>"
    "\n        <td>{allocation}</td>"
    "\n        <td>{tier}</td>"
    '\n        <td><span class="status status-{status}">{status_label}</span></td>'
    '\n        <td title="{created_iso}">{created_ago} ago</td>'
    "\n      </tr>\n    "
)


def request_list_rows_html(rows: list[dict[str, object]]) -> SafeString:
    """The my-requests table's body rows as HTML, from rows of ``label_request_rows`` with the list's columns."""
    parts = []
    for row in rows:
        units = row["resource_units"]
        allocation = (
            f"<code>{escape(row['resource_name'])}</code> \N{MULTIPLICATION SIGN} {escape(units)}"
            if row["resource_name"]
            else '<span class="muted">—</span>'
        )
        parts.append(
            _REQUEST_LIST_ROW.format(
                id=escape(row["id"]),
                url=escape(row["url"]),
                name=escape(row["name"]),
                team_url=escape(row["team_url"]),
                team=escape(row["team__name"]),
                requester=escape(row["requester__username"]),
                workload=escape(row["workload_label"]),
                allocation=allocation,
                tier=escape(row["sla_tier__name"]) if row["sla_tier__name"] else "—",
                status=escape(row["status"]),
                status_label=escape(row["status_label"]),
                created_iso=escape(row["created_iso"]),
                created_ago=escape(row["created_ago"]),
            )
        )
    return mark_safe("".join(parts))  # noqa: S308 - every value above is escaped


# --- Home and team pages -----------------------------------------------------------------------------------------


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
        "platform": platform_overview(user=user),
    }


def platform_overview(*, user: User) -> dict[str, object] | None:
    """An approver's or admin's home: pending approvals (count, the oldest) and every pool's capacity and allocation.
    None for everyone else."""
    if not user_is_approver(user):
        return None
    # The oldest pending request with the count of them all in one query (a window counts the rows before LIMIT),
    # joining only the team its card names (issue #15: three queries, one a six-table join, before).
    oldest = (
        gpu_requests_visible_to(user=user)
        .filter(status=RequestStatus.PENDING_APPROVAL)
        .select_related(None)
        .select_related("team")
        .only("name", "submitted_at", "created_at", "team__name")
        .annotate(pending_count=Window(Count("id")))
        .order_by("submitted_at", "created_at", "id")
        .first()
    )
    # Every visible pool with its cluster and GPU model in one query, by cluster name then pool name.
    pools = list(
        NodePool.objects.filter(cluster__in=clusters_visible_to(user=user))
        .select_related("cluster", "gpu_model")
        .order_by("cluster__name", "name")
    )
    held = units_allocated_by_pool(cluster_ids=sorted({pool.cluster_id for pool in pools}))
    return {
        "pending_count": oldest.pending_count if oldest is not None else 0,
        "oldest_pending": oldest,
        "pools": [node_pool_capacity_rows(pool=pool, allocated=held.get(pool.pk, {})) for pool in pools],
    }


def team_overview(*, user: User, slug: str) -> dict[str, object]:
    """A team page: members and roles, quota use per resource, active allocations; Team.DoesNotExist if not visible."""
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
        "allocations": allocations,
        "role": membership_role(user=user, team=team),
        # Leads manage members; the last lead's row offers neither removal nor stepping down (the service refuses).
        "can_manage_members": team_members_refusal(user=user, team=team) is None,
        "lead_count": lead_count,
        "role_choices": Role.choices,
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
    return {"rows": rows}


# --- A request's detail page and the approval queue --------------------------------------------------------------


def gpu_request_actions(
    *, user: User, request: GpuRequest, role: str | RoleNotRead | None = ROLE_NOT_READ
) -> dict[str, bool]:
    """Which buttons the detail page shows this user: exactly those whose service would not refuse (the predicates).
    ``role``: the user's role in the request's team when the caller has it (``gpu_request_detail``'s viewer_role)."""
    approver = user_is_approver(user)
    if isinstance(role, RoleNotRead):
        role = membership_role(user=user, team=request.team)  # read once for the four answers that depend on it
    return {
        "cancel": cancel_refusal(user=user, request=request, role=role) is None,
        "release": release_refusal(user=user, request=request, role=role) is None,
        "review": approve_refusal(user=user, request=request) is None,
        "own_request_pending_review": (
            approver and request.status == RequestStatus.PENDING_APPROVAL and request.requester_id == user.pk
        ),
        "extend": extend_refusal(user=user, request=request, role=role) is None,
        # Cloning only pre-fills a form; submitting it is checked like any new request (the user's own teams).
        "clone": request.status in CLONABLE_STATUSES and role is not None,
        "reapply": reapply_refusal(user=user, request=request) is None,
    }


# Requests the detail page offers to clone into a new form: those that will not run again (rejected, ended, failed).
CLONABLE_STATUSES = frozenset({*TERMINAL_STATUSES, RequestStatus.FAILED})
CLONE_NAME_SUFFIX = " (copy)"


def gpu_request_clone_initial(*, user: User, pk: int) -> dict[str, object]:
    """The new-request form pre-filled from one of the user's visible requests (GpuRequest.DoesNotExist otherwise):
    the same team, profile, tier, cluster, image and command; a duration but never a past expiry date."""
    source = gpu_request_detail(user=user, pk=pk)
    name = source.name[: 100 - len(CLONE_NAME_SUFFIX)] + CLONE_NAME_SUFFIX
    initial: dict[str, object] = {
        "team": source.team.slug,
        "name": name,
        "purpose": source.purpose,
        "workload_type": source.workload_type,
        "gpu_memory_gb": source.gpu_memory_gb,
        "gpu_count": source.gpu_count,
        "replicas": source.replicas,
        "latency_sensitive": "true" if source.latency_sensitive else "false",
        "latency_p99_ms": source.latency_p99_ms,
        "isolation_required": source.isolation_required,
        "expected_utilization_pct": source.expected_utilization_pct,
        "gpu_model": source.gpu_model_requested,
        "sla_tier": source.sla_tier.slug if source.sla_tier else "",
        "duration_hours": source.duration_hours,
        "cluster": source.cluster.name if source.cluster else "",
        "image": source.image,
        "command": shlex.join(source.command or []),
    }
    return {key: value for key, value in initial.items() if value is not None}


def gpu_request_extension_rows(*, user: User, request: GpuRequest) -> list[dict[str, object]]:
    """The request's extensions, newest first, each with whether this user may decide it (pending, not their own)."""
    # Not joined to the request again (its ~40 columns were most of this query's cost): each row gets the page's.
    extensions = list(request.extensions.select_related("requested_by", "decided_by"))
    for extension in extensions:
        extension.request = request
    return [
        {
            "extension": extension,
            "decide": extension.status == ExtensionStatus.PENDING
            and extension_decide_refusal(user=user, extension=extension) is None,
        }
        for extension in extensions
    ]


def gpu_request_manifests_yaml(*, request: GpuRequest) -> str:
    """The request's last rendered Kubernetes objects as one multi-document YAML ('' before the first render)."""
    if not request.manifests:
        return ""
    # Keyed by the objects' own JSON text (order kept, ~30 us to write): a re-render is a new key, so nothing is ever
    # stale, and the page and its 10 s status refresh stop paying PyYAML's pure-Python dump (~3 ms; issue #15).
    return _manifests_yaml(json.dumps(request.manifests))


@lru_cache(maxsize=256)
def _manifests_yaml(manifests_json: str) -> str:
    return to_yaml(json.loads(manifests_json))


def gpu_request_live_status(*, request: GpuRequest) -> dict[str, object]:
    """What the cluster last said about a request, the causes and fixes of a stuck workload, and whether to poll."""
    phase = request.observed_phase
    hints = troubleshoot(request.status_detail, phase=phase)
    waiting = phase == "Pending" and request.status == "active"
    return {
        "status": request.status,
        "status_display": request.get_status_display(),
        "observed_phase": phase,
        "observed_at": request.observed_at,
        "status_detail": request.status_detail,
        "hints": hints,
        "manifests_rendered_at": request.manifests_rendered_at,
        "manifest_count": len(request.manifests or []),
        "polling": request.status in POLLING_STATUSES or waiting,
    }


# --- Clusters (platform admins) ----------------------------------------------------------------------------------


def node_pool_capacity_rows(*, pool: NodePool, allocated: dict[str, int]) -> dict[str, object]:
    """One pool's capacity per resource: configured, observed by inventory sync, allocated, free, and any drift."""
    observed = dict(pool.observed_allocatable or {})
    observed_nodes = observed.pop("nodes", None)
    synced = pool.observed_at is not None
    configured = pool.capacity()
    resources = list(dict.fromkeys([*configured, *allocated, *(observed if synced else {})]))
    rows = []
    for resource in resources:
        want = configured.get(resource, 0)
        seen = observed.get(resource, 0) if synced else None
        held = allocated.get(resource, 0)
        rows.append(
            {
                "resource": resource,
                "configured": want,
                "observed": seen,
                "allocated": held,
                "free": want - held,
                "over": held > want,
                "drift": synced and seen != want,
            }
        )
    node_drift = synced and observed_nodes is not None and observed_nodes != pool.node_count
    return {
        "pool": pool,
        "rows": rows,
        "synced": synced,
        "observed_nodes": observed_nodes,
        "node_drift": node_drift,
        "drift": node_drift or any(row["drift"] for row in rows),
    }


def cluster_overview_rows(*, user: User) -> list[dict[str, object]]:
    """Every cluster with its pools' GPUs, units allocated, last inventory sync and drift (platform approvers only)."""
    clusters = list(clusters_visible_to(user=user).prefetch_related("node_pools__gpu_model").order_by("name"))
    held = units_allocated_by_pool(cluster_ids=[cluster.pk for cluster in clusters])
    rates = gpu_hourly_rates()
    rows = []
    for cluster in clusters:
        pools = [
            node_pool_capacity_rows(pool=pool, allocated=held.get(pool.pk, {})) for pool in cluster.node_pools.all()
        ]
        synced_at = [item["pool"].observed_at for item in pools if item["synced"]]
        rows.append(
            {
                "cluster": cluster,
                "pool_count": len(pools),
                "gpu_total": sum(item["pool"].gpu_total for item in pools),
                "allocated": sum(row["allocated"] for item in pools for row in item["rows"]),
                "last_synced": max(synced_at) if synced_at else None,
                "never_synced": sum(1 for item in pools if not item["synced"]),
                "drifted_pools": sum(1 for item in pools if item["drift"]),
                "unpriced_pools": sorted(
                    item["pool"].name for item in pools if gpu_price(item["pool"].gpu_model, rates=rates).hourly is None
                ),
            }
        )
    return rows


def cluster_gpu_operator_configs(*, pools: list[NodePool]) -> list[dict[str, object]]:
    """The GPU Operator ConfigMaps of a cluster's pools (time-slicing, mig-parted) as YAML, or why one cannot render."""
    configs = []
    renderers = (
        (
            "Device plugin (time-slicing)",
            "ClusterPolicy devicePlugin.config.name; nodes of a time-slicing pool carry "
            "nvidia.com/device-plugin.config=<pool name>.",
            SharingMode.TIME_SLICING,
            lambda contexts: render_time_slicing_configmap(contexts),
        ),
        (
            "MIG manager (mig-parted)",
            "ClusterPolicy migManager.config.name; nodes of a MIG pool carry nvidia.com/mig.config=<config name>.",
            SharingMode.MIG,
            lambda contexts: render_mig_parted_configmap(contexts, catalog=catalog_from_db()),
        ),
    )
    for title, usage, mode, render in renderers:
        chosen = [pool for pool in pools if pool.sharing_mode == mode.value]
        entry = {"title": title, "usage": usage, "pool_count": len(chosen), "yaml": "", "error": ""}
        try:
            entry["yaml"] = to_yaml([render([pool_context(pool) for pool in chosen])])
        except ManifestError as exc:
            entry["error"] = str(exc)
        configs.append(entry)
    return configs


def cluster_detail_overview(*, user: User, name: str) -> dict[str, object]:
    """A cluster page: pool capacity and drift, drifted requests, GPU Operator configs; Cluster.DoesNotExist if not."""
    cluster = clusters_visible_to(user=user).get(name=name)
    pools = list(cluster.node_pools.select_related("gpu_model").order_by("name"))
    held = units_allocated_by_pool(cluster_ids=[cluster.pk])
    pool_rows = [node_pool_capacity_rows(pool=pool, allocated=held.get(pool.pk, {})) for pool in pools]
    rates = gpu_hourly_rates()
    for item in pool_rows:
        item["price"] = gpu_price(item["pool"].gpu_model, rates=rates)  # type: ignore[arg-type]
    drifted_requests = (
        gpu_requests_visible_to(user=user)
        .filter(cluster=cluster, status=RequestStatus.ACTIVE, observed_phase__in=DRIFT_PHASES)
        .order_by("observed_at", "id")
    )
    return {
        "cluster": cluster,
        "pool_rows": pool_rows,
        "drifted_requests": list(drifted_requests),
        "configs": cluster_gpu_operator_configs(pools=pools) if pools else [],
        "observable": cluster.backend == "kubernetes",
    }


# The request list's sortable columns, ``?sort=<key>`` or ``?sort=-<key>``: an allow-list of keys mapped to
# fields (the URL never names a field), each ending on the id so pages do not shuffle rows that tie.
REQUEST_LIST_SORTS: dict[str, tuple[str, ...]] = {
    "id": ("id",),
    "name": ("name", "id"),
    "team": ("team__name", "id"),
    "requester": ("requester__username", "id"),
    "workload": ("workload_type", "id"),
    "tier": ("sla_tier__name", "id"),
    "status": ("status", "id"),
    "created": ("created_at", "id"),
}
REQUEST_LIST_DEFAULT_SORT = "-created"
REQUEST_LIST_COLUMNS: list[tuple[str, str | None]] = [
    ("#", "id"),
    ("Name", "name"),
    ("Team", "team"),
    ("Requester", "requester"),
    ("Workload", "workload"),
    ("Allocation", None),
    ("Tier", "tier"),
    ("Status", "status"),
    ("Created", "created"),
]


def request_list_ordering(sort: str) -> list[str]:
    """The ``order_by`` fields of a ``?sort=`` value; ValueError naming the allowed keys for any other value."""
    key = sort.removeprefix("-")
    if key not in REQUEST_LIST_SORTS:
        raise ValueError(f"sort: Sort by one of {', '.join(REQUEST_LIST_SORTS)} (with a leading - for descending).")
    direction = "-" if sort.startswith("-") else ""
    return [direction + field for field in REQUEST_LIST_SORTS[key]]


def request_list_columns(*, sort: str, query: list[tuple[str, str]]) -> list[dict[str, str | None]]:
    """The list's header cells: label, the link that sorts by the column (flipping it when it is the current one)
    with the other filters kept (``query``: the URL's name/value pairs), and ``aria-sort`` for the current column."""
    columns: list[dict[str, str | None]] = []
    for label, key in REQUEST_LIST_COLUMNS:
        if key is None:
            columns.append({"label": label, "href": None, "aria_sort": None})
            continue
        current = sort.removeprefix("-") == key
        descending = sort.startswith("-")
        next_sort = (key if descending else f"-{key}") if current else key
        aria_sort = ("descending" if descending else "ascending") if current else None
        kept = [(name, value) for name, value in query if name not in ("sort", "page")]
        href = "?" + urlencode([*kept, ("sort", next_sort)])
        columns.append({"label": label, "href": href, "aria_sort": aria_sort})
    return columns


SEARCH_LIMIT = 20


def global_search(*, user: User, query: str) -> dict[str, object]:
    """The header's search: requests by name or id (``42`` or ``#42``), teams by name or slug, clusters by name,
    each drawn only from what the user may see (the same selectors as the lists: no other team's request)."""
    query = query.strip()
    if not query:
        return {"query": "", "requests": [], "teams": [], "clusters": []}
    request_match = Q(name__icontains=query)
    number = query.removeprefix("#")
    if number.isdigit() and len(number) < 10:
        request_match |= Q(pk=int(number))
    requests = gpu_requests_visible_to(user=user).filter(request_match).order_by("-created_at", "-id")
    teams = teams_visible_to(user).filter(Q(name__icontains=query) | Q(slug__icontains=query)).order_by("name")
    clusters = clusters_visible_to(user=user).filter(name__icontains=query).order_by("name")
    return {
        "query": query,
        "requests": list(requests[:SEARCH_LIMIT]),
        "teams": list(teams[:SEARCH_LIMIT]),
        "clusters": list(clusters[:SEARCH_LIMIT]),
    }
