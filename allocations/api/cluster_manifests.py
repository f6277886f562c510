"""``GET /api/v1/clusters/{name}/manifests/``: the objects a cluster itself needs.

See docs/api.md, "Clusters and node pools as code".

Its own view and route, beside the clusters' CRUD: the device plugin and mig-parted ConfigMaps, the SLA tiers'
PriorityClasses, and on a ``kueue`` cluster the Kueue objects, as a JSON list or ``?format=yaml``.
"""

from __future__ import annotations

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import exceptions
from rest_framework.renderers import JSONRenderer
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from allocations.api.permissions import IsActivePortalUser
from allocations.clusters.rendering import cluster_objects
from allocations.models import Cluster
from allocations.selectors import user_is_approver
from infra.renderers import KubernetesYamlRenderer
from infra.scoping import ScopedViewMixin

ONLY_APPROVERS = "Only platform approvers and admins can read a cluster's manifests."


class ClusterManifestsView(ScopedViewMixin, APIView):
    """A cluster's own Kubernetes objects, rendered from its pools, the SLA tiers and (Kueue) the teams' quotas."""

    permission_classes = [IsActivePortalUser]
    renderer_classes = [JSONRenderer, KubernetesYamlRenderer]
    scoped_model = Cluster

    @extend_schema(
        tags=["clusters"],
        summary="A cluster's own objects: GPU Operator ConfigMaps, PriorityClasses, Kueue objects",
        parameters=[
            OpenApiParameter("format", str, enum=["json", "yaml"], description="`yaml`: one multi-document YAML")
        ],
        responses={
            200: OpenApiResponse(OpenApiTypes.OBJECT, description="A list of Kubernetes objects"),
            403: OpenApiResponse(description="Not a platform approver"),
            404: OpenApiResponse(description="No such cluster"),
            409: OpenApiResponse(description="The cluster's pools or quotas cannot be rendered; the message says why"),
        },
    )
    def get(self, request: Request, name: str) -> Response:
        """The objects as a JSON list (or YAML); 403 for non-approvers, 404 for an unknown cluster."""
        if not user_is_approver(request.user):
            raise exceptions.PermissionDenied(ONLY_APPROVERS)
        try:
            cluster = self.get_queryset().get(name=name)
        except Cluster.DoesNotExist:
            raise exceptions.NotFound(f"No cluster named {name!r}.") from None
        return Response(cluster_objects(cluster))  # a ManifestError answers 409 (portal.api_errors)
