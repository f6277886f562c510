"""The cluster pages (platform admins): every cluster, one cluster's capacity and drift, and an inventory sync."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_POST

from allocations.clusters.pages import cluster_detail_overview, cluster_overview_rows
from allocations.clusters.services import cluster_inventory_sync_queue
from allocations.models import Cluster, ClusterBackend
from allocations.selectors import clusters_visible_to
from allocations.view_helpers import redirect_next, require_platform_admin


@login_required
def cluster_list(request: HttpRequest) -> HttpResponse:
    """Every cluster: pools, GPUs, units allocated, last inventory sync and drift (platform admins)."""
    require_platform_admin(request)
    return render(request, "allocations/cluster_list.html", {"rows": cluster_overview_rows(user=request.user)})


@login_required
def cluster_detail(request: HttpRequest, name: str) -> HttpResponse:
    """One cluster: capacity per pool (configured, observed, allocated, free), drift, and its GPU Operator configs."""
    require_platform_admin(request)
    try:
        context = cluster_detail_overview(user=request.user, name=name)
    except Cluster.DoesNotExist as exc:
        raise Http404("No such cluster.") from exc
    return render(request, "allocations/cluster_detail.html", context)


@login_required
@require_POST
def cluster_sync(request: HttpRequest, name: str) -> HttpResponse:
    """Queue an inventory sync of this cluster now and go back to the page."""
    require_platform_admin(request)
    try:
        cluster = clusters_visible_to(user=request.user).get(name=name)
    except Cluster.DoesNotExist as exc:
        raise Http404("No such cluster.") from exc
    if cluster.backend != ClusterBackend.KUBERNETES:
        messages.info(
            request,
            f"{cluster.name} is a GitOps tree: the portal cannot read its nodes, so there is no inventory to sync.",
        )
    else:
        cluster_inventory_sync_queue(acting_user=request.user, cluster=cluster)
        messages.success(
            request,
            f"Inventory sync queued: the GPU nodes of {cluster.name} are read into its node pools. "
            "Reload in a moment to see the result.",
        )
    return redirect_next(request, "allocations:cluster-detail", name=cluster.name)
