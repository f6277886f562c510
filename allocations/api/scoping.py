"""The visibility rule of every allocations model the API serves, registered in the one registry
(``infra.scoping``) when the app is ready: each is a selector of ``allocations.selectors``."""

from __future__ import annotations

from allocations.models import (
    AllocationExtension,
    Cluster,
    GpuRequest,
    NodePool,
    QuotaIncreaseRequest,
    RequestTemplate,
    Reservation,
    Team,
)
from allocations.quota_requests.selectors import quota_increases_visible_to
from allocations.request_templates.selectors import request_templates_visible_to
from allocations.reservations.selectors import reservations_visible_to
from allocations.selectors import (
    allocation_extensions_visible_to,
    clusters_visible_to,
    gpu_requests_visible_to,
    node_pools_visible_to,
    teams_visible_to,
)
from infra.scoping import register_visibility


def register_allocations_visibility() -> None:
    """Requests and extensions: the requests' teams; teams: members (approvers all); clusters and pools: approvers."""
    register_visibility(GpuRequest, gpu_requests_visible_to)
    register_visibility(AllocationExtension, allocation_extensions_visible_to)
    register_visibility(Team, teams_visible_to)
    register_visibility(Cluster, clusters_visible_to)
    register_visibility(NodePool, node_pools_visible_to)
    register_visibility(RequestTemplate, request_templates_visible_to)
    register_visibility(QuotaIncreaseRequest, quota_increases_visible_to)
    register_visibility(Reservation, reservations_visible_to)
