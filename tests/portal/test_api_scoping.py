"""Every API view is scoped by construction: it reads through the visibility registry (``infra.scoping``) or reads no
per-team object at all; and another team's object is a 404 through every endpoint that names one."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from datetime import timedelta

import pytest
from django.core.exceptions import ImproperlyConfigured
from django.urls import URLPattern, URLResolver, get_resolver, reverse
from django.utils import timezone
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerSplitView
from rest_framework.test import APIClient, APIRequestFactory
from rest_framework.views import APIView

from allocations.api.mig_plans import MigPlanPreviewView
from allocations.api.permissions import IsActivePortalUser
from allocations.api.recommendations import RecommendationViewSet
from allocations.models import (
    AllocationExtension,
    Cluster,
    GpuModel,
    GpuRequest,
    NodePool,
    Quota,
    QuotaIncreaseRequest,
    RequestStatus,
    RequestTemplate,
    Reservation,
    Team,
)
from billing.api.reports import PriceBookView
from billing.api.whatif import WhatIfView
from billing.models import MonthlyReport
from infra.scoping import ScopedViewMixin, visibility_rule
from portal.tokens.models import ApiToken
from portal.tokens.services import api_token_create
from tests.factories import DemoOrg, GpuRequestFactory

# Views that read no per-team object, and why.
UNSCOPED_VIEWS = {
    SpectacularAPIView: "the OpenAPI schema",
    SpectacularSwaggerSplitView: "the schema's documentation page",
    RecommendationViewSet: "a recommendation computed from the posted profile",
    MigPlanPreviewView: "a MIG layout computed from the posted demand (approvers only)",
    PriceBookView: "the price book, the same for everyone",
    WhatIfView: "its team field reads through the registry (VisibleTeamField)",
}


@dataclass(frozen=True)
class ApiRoute:
    route: str
    name: str | None
    view: type
    actions: dict[str, str] | None  # a viewset route's method -> action; None for an APIView
    params: tuple[str, ...]  # the URL's keywords


def _routes(patterns: list, prefix: str = "", params: tuple[str, ...] = ()) -> Iterator[ApiRoute]:
    for entry in patterns:
        names = params + tuple(entry.pattern.regex.groupindex)
        if isinstance(entry, URLResolver):
            yield from _routes(entry.url_patterns, prefix + str(entry.pattern), names)
        elif isinstance(entry, URLPattern):
            view = getattr(entry.callback, "cls", None) or getattr(entry.callback, "view_class", None)
            if view is not None:
                actions = getattr(entry.callback, "actions", None)
                yield ApiRoute(prefix + str(entry.pattern), entry.name, view, actions, names)


def api_routes() -> list[ApiRoute]:
    return [route for route in _routes(get_resolver().url_patterns) if route.route.lstrip("^").startswith("api/")]


def test_the_api_has_routes_to_walk() -> None:
    views = {route.view for route in api_routes()}
    assert {RecommendationViewSet, PriceBookView} <= views
    assert len(views) > len(UNSCOPED_VIEWS)


@pytest.mark.parametrize("route", api_routes(), ids=lambda route: route.route)
def test_every_api_view_is_scoped_or_reads_no_per_team_object(route: ApiRoute) -> None:
    if route.view in UNSCOPED_VIEWS:
        assert not issubclass(route.view, ScopedViewMixin), "a scoped view need not be allowed unscoped"
        return
    assert issubclass(route.view, ScopedViewMixin), f"{route.view.__name__} reads without the visibility registry"
    visibility_rule(route.view.scoped_model, action=route.view.scope_action)  # raises when none is registered


def test_a_view_over_a_model_without_a_visibility_rule_refuses_to_answer(demo_org: DemoOrg) -> None:
    class CatalogView(ScopedViewMixin, APIView):
        permission_classes = [IsActivePortalUser]
        scoped_model = GpuModel

    request = APIRequestFactory().get("/api/v1/catalog/")
    request.user = demo_org.approver
    with pytest.raises(ImproperlyConfigured, match="GpuModel"):
        CatalogView.as_view()(request)


# What a URL keyword names, for each model a scoped view reads: another team's (or user's) object.
def _other_objects(org: DemoOrg) -> dict[type, dict[str, object]]:
    theirs = GpuRequestFactory(team=org.other_team, requester=org.outsider, status=RequestStatus.ACTIVE)
    extension = AllocationExtension.objects.create(request=theirs, requested_by=org.outsider, hours=1, reason="more")
    token = api_token_create(acting_user=org.outsider, name="laptop", expires_in_days=30).token
    cluster = {"name": org.cluster.name, "cluster_name": org.cluster.name, "pool": org.pool.name}
    template = RequestTemplate.objects.create(
        name="theirs", team=org.other_team, profile={"workload_type": "training", "gpu_memory_gb": 8}
    )
    their_quota = Quota.objects.get(team=org.other_team)
    increase = QuotaIncreaseRequest.objects.create(
        team=org.other_team,
        quota=their_quota,
        limit_when_asked=4,
        requested_limit=6,
        reason="r",
        requested_by=org.outsider,
    )
    reservation = Reservation.objects.create(
        team=org.other_team,
        node_pool=org.pool,
        resource_name="nvidia.com/gpu",
        quantity=1,
        start=timezone.now() + timedelta(days=1),
        end=timezone.now() + timedelta(days=1, hours=4),
        requested_by=org.outsider,
    )
    return {
        Reservation: {"pk": reservation.pk},
        RequestTemplate: {"pk": template.pk},
        QuotaIncreaseRequest: {"pk": increase.pk},
        GpuRequest: {"pk": theirs.pk},
        AllocationExtension: {"pk": extension.pk},
        Team: {"slug": org.other_team.slug},
        ApiToken: {"pk": token.pk},
        Cluster: cluster,
        NodePool: {**cluster, "name": org.pool.name, "pk": 1},
    }


# Per-team objects are 404 for a member of another team; clusters and pools (approvers only) are 403 or 404.
PER_TEAM = {
    GpuRequest,
    AllocationExtension,
    Team,
    ApiToken,
    MonthlyReport,
    RequestTemplate,
    QuotaIncreaseRequest,
    Reservation,
}


def _object_routes() -> list[ApiRoute]:
    return [route for route in api_routes() if issubclass(route.view, ScopedViewMixin) and route.params]


def _methods(route: ApiRoute) -> list[str]:
    if route.actions is not None:
        return sorted(route.actions)
    return [m for m in ("get", "post", "put", "patch", "delete") if hasattr(route.view, m)]


@pytest.mark.parametrize("route", _object_routes(), ids=lambda route: route.route)
def test_another_teams_object_is_not_found_through_every_endpoint_that_names_one(
    route: ApiRoute, demo_org: DemoOrg
) -> None:
    objects = _other_objects(demo_org)
    assert route.view.scoped_model in objects, f"add {route.view.scoped_model.__name__} to _other_objects"
    kwargs_of_model = objects[route.view.scoped_model]
    client = APIClient()
    client.force_authenticate(demo_org.member)
    url = reverse(route.name, kwargs={name: kwargs_of_model[name] for name in route.params})
    for method in _methods(route):
        response = getattr(client, method)(url, {}, format="json")
        expected = {404} if route.view.scoped_model in PER_TEAM else {403, 404}
        assert response.status_code in expected, (method, url, response.status_code)
