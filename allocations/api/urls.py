"""REST API routes under /api/v1/: kebab-case plural resources, lifecycle writes as actions."""

from django.urls import path
from rest_framework.routers import DefaultRouter

from allocations.api import (
    cluster_manifests,
    clusters,
    extensions,
    mig_plans,
    quota_increases,
    recommendations,
    request_templates,
    reservations,
    teams,
    views,
)

router = DefaultRouter()
router.include_root_view = False
# No format suffixes (`/events.json`): the viewsets' actions take no `format` argument (a suffix answered 500);
# clients choose the format with the Accept header or `?format=`. tests/portal/test_api_format_suffixes.py.
router.include_format_suffixes = False
router.register("recommendations", recommendations.RecommendationViewSet, basename="recommendation")
router.register("requests", views.GpuRequestViewSet, basename="gpu-request")
router.register("teams", teams.TeamViewSet, basename="team")
router.register("templates", request_templates.RequestTemplateViewSet, basename="request-template")
router.register("quota-increases", quota_increases.QuotaIncreaseViewSet, basename="quota-increase")
router.register("reservations", reservations.ReservationViewSet, basename="reservation")
router.register("extensions", extensions.AllocationExtensionViewSet, basename="allocation-extension")
router.register("clusters", clusters.ClusterViewSet, basename="cluster")
router.register(r"clusters/(?P<cluster_name>[^/]+)/node-pools", clusters.NodePoolViewSet, basename="node-pool")

urlpatterns = [
    # Before any router include, so the clusters' own routes never shadow it.
    path(
        "clusters/<str:name>/manifests/",
        cluster_manifests.ClusterManifestsView.as_view(),
        name="cluster-manifests",
    ),
    path("mig-plans/preview/", mig_plans.MigPlanPreviewView.as_view(), name="mig-plan-preview"),
    path(
        "clusters/<str:name>/node-pools/<str:pool>/mig-plans/",
        mig_plans.MigPlanListView.as_view(),
        name="mig-plan-list",
    ),
    path(
        "clusters/<str:name>/node-pools/<str:pool>/mig-plans/<int:pk>/",
        mig_plans.MigPlanDetailView.as_view(),
        name="mig-plan-detail",
    ),
    *(
        path(
            f"clusters/<str:name>/node-pools/<str:pool>/mig-plans/<int:pk>/{action}/",
            mig_plans.MigPlanActionView.as_view(action_name=action),
            name=f"mig-plan-{action}",
        )
        for action in ("approve", "apply", "cancel")
    ),
    *router.urls,
]
