"""``/api/v1/clusters/`` and ``/api/v1/clusters/{name}/node-pools/`` (docs/api.md, "Clusters and node pools as code").

For infrastructure-as-code: objects are addressed by name, ``PUT`` creates or replaces (idempotent), ``PATCH``
changes the fields sent, ``POST`` creates and refuses a name already taken. Platform admins (staff with the model
permission, as in the admin) write; approvers read; everyone else gets 403. Secret references are write-only: the
answer says only whether one is stored. The rules live in ``allocations.clusters.services`` (the model's validation,
one transaction); these views parse, call and answer.
"""

from __future__ import annotations

from typing import Any

from django.db.models import QuerySet
from drf_spectacular.utils import OpenApiExample, OpenApiResponse, extend_schema, extend_schema_view
from rest_framework import exceptions, serializers, status, viewsets
from rest_framework.request import Request
from rest_framework.response import Response

from allocations.api.common import ServiceApiMixin
from allocations.choices import ClusterBackend, ClusterScheduler, DeviceApi, SharingMode
from allocations.clusters import services as cluster_services
from allocations.models import Cluster, GpuModel, NodePool
from allocations.selectors import user_is_approver
from infra.scoping import ScopedViewMixin

ONLY_APPROVERS = "Only platform approvers and admins can read clusters."
TAINT_EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")


def list_of_https() -> list[int]:
    return [443]


class _SecretReferenceField(serializers.CharField):
    """A write-only reference to a secret (``env:VARIABLE``, ``file:/path``, ``in-cluster``); never read back."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(write_only=True, required=False, allow_blank=True, max_length=255, **kwargs)


class ClusterSerializer(serializers.Serializer):
    name = serializers.CharField(max_length=63, help_text="A Kubernetes DNS label; the cluster's key.")
    description = serializers.CharField(required=False, allow_blank=True, default="")
    backend = serializers.ChoiceField(ClusterBackend.choices, required=False, default=ClusterBackend.KUBERNETES)
    api_endpoint = serializers.URLField(required=False, allow_blank=True, default="")
    kubeconfig_secret_ref = _SecretReferenceField(
        help_text="`env:VARIABLE`, `file:/path` or `in-cluster`; write-only. Omitted on PUT: kept. Empty: cleared."
    )
    kubeconfig_secret_ref_stored = serializers.SerializerMethodField(help_text="Whether a kubeconfig reference is set.")
    gitops_path = serializers.CharField(required=False, allow_blank=True, default="", max_length=255)
    gitops_commit = serializers.BooleanField(required=False, default=False)
    prometheus_url = serializers.URLField(required=False, allow_blank=True, default="")
    prometheus_auth_secret_ref = _SecretReferenceField(
        help_text="`env:VARIABLE` holding the Prometheus credentials; write-only, kept when omitted."
    )
    prometheus_auth_secret_ref_stored = serializers.SerializerMethodField()
    prometheus_recording_rules = serializers.BooleanField(
        required=False,
        default=False,
        help_text=(
            "The cluster's Prometheus evaluates the portal's recording rules: the utilization and health pulls "
            "read them instead of evaluating subqueries."
        ),
    )
    scheduler = serializers.ChoiceField(ClusterScheduler.choices, required=False, default=ClusterScheduler.DEFAULT)
    device_api = serializers.ChoiceField(DeviceApi.choices, required=False, default=DeviceApi.DEVICE_PLUGIN)
    monitoring_namespace = serializers.CharField(required=False, allow_blank=True, default="", max_length=63)
    monitoring_labels = serializers.DictField(
        child=serializers.CharField(allow_blank=True),
        required=False,
        default=dict,
        help_text='Extra labels on the PrometheusRule and ServiceMonitor, e.g. `{"release": "kube-prometheus-stack"}`.',
    )
    gpu_operator_namespace = serializers.CharField(required=False, default="gpu-operator", max_length=63)
    egress_tcp_ports = serializers.ListField(
        child=serializers.IntegerField(min_value=1, max_value=65535),
        required=False,
        default=list_of_https,
        help_text="TCP ports team pods may reach outside their namespace besides DNS. Default `[443]`.",
    )
    is_active = serializers.BooleanField(required=False, default=True)
    node_pools = serializers.SerializerMethodField(help_text="Names of the cluster's node pools.")
    inventory_error = serializers.CharField(
        read_only=True, help_text="Why the last inventory sync could not read the cluster's nodes; empty when it could."
    )
    pool_problems = serializers.SerializerMethodField(
        help_text=(
            "Per node pool, how its nodes' GPU Feature Discovery labels disagree with its configuration "
            '(`{"pool": [{"problem", "fix", "nodes"}]}`); approvals onto such a pool are refused.'
        )
    )
    created_at = serializers.DateTimeField(read_only=True)

    def get_kubeconfig_secret_ref_stored(self, cluster: Cluster) -> bool:
        return bool(cluster.kubeconfig_secret_ref)

    def get_prometheus_auth_secret_ref_stored(self, cluster: Cluster) -> bool:
        return bool(cluster.prometheus_auth_secret_ref)

    def get_node_pools(self, cluster: Cluster) -> list[str]:
        return [pool.name for pool in cluster.node_pools.all()]

    def get_pool_problems(self, cluster: Cluster) -> dict[str, list[dict[str, Any]]]:
        return {pool.name: pool.node_problems for pool in cluster.node_pools.all() if pool.node_problems}


class TaintSerializer(serializers.Serializer):
    key = serializers.CharField(max_length=253)
    value = serializers.CharField(required=False, allow_blank=True, max_length=63)
    effect = serializers.ChoiceField(TAINT_EFFECTS)


class NodePoolSerializer(serializers.Serializer):
    name = serializers.CharField(max_length=63, help_text="A Kubernetes DNS label, unique in the cluster.")
    gpu_model = serializers.SlugRelatedField(
        slug_field="name", queryset=GpuModel.objects.all(), help_text="Catalog name, e.g. `A100-40GB`."
    )
    node_count = serializers.IntegerField(min_value=0, required=False, default=1)
    gpus_per_node = serializers.IntegerField(min_value=1, max_value=32767, required=False, default=8)
    sharing_mode = serializers.ChoiceField(SharingMode.choices, required=False, default=SharingMode.NONE)
    time_slice_replicas = serializers.IntegerField(min_value=2, max_value=32767, required=False, allow_null=True)
    rename_by_default = serializers.BooleanField(required=False, default=False)
    mig_devices = serializers.DictField(
        child=serializers.IntegerField(min_value=1),
        required=False,
        default=dict,
        help_text='MIG instances per GPU, e.g. `{"3g.20gb": 2}`; checked against the GPU\'s valid placements.',
    )
    node_labels = serializers.DictField(child=serializers.CharField(allow_blank=True), required=False, default=dict)
    topology_level = serializers.CharField(
        required=False,
        allow_blank=True,
        default="",
        max_length=316,
        help_text="Node label of the pool's rack or block (Kueue topology-aware scheduling); blank: none.",
    )
    topology_required = serializers.BooleanField(required=False, default=False)
    dynamic_mig = serializers.BooleanField(
        required=False, default=False, help_text="DRA DynamicMIG (alpha upstream): instances made per claim."
    )
    taints = TaintSerializer(many=True, required=False, default=list)
    capacity = serializers.SerializerMethodField(help_text="Schedulable units per resource name, from the layout.")
    observed_allocatable = serializers.JSONField(read_only=True)
    observed_dra = serializers.JSONField(
        read_only=True, help_text="DRA clusters: the driver's product name, memory and devices seen for the pool."
    )
    observed_at = serializers.DateTimeField(read_only=True)
    node_problems = serializers.JSONField(
        read_only=True,
        help_text="How the nodes' GPU Feature Discovery labels disagree with this configuration, each with its fix.",
    )

    def get_capacity(self, pool: NodePool) -> dict[str, int]:
        return pool.capacity()


_ERRORS = {
    400: OpenApiResponse(description='Invalid input: `{"field": ["message", ...]}` naming each bad field'),
    403: OpenApiResponse(description="Not a platform admin (writes) or approver (reads)"),
    404: OpenApiResponse(description="No such cluster or pool"),
}
_CLUSTER_EXAMPLE = OpenApiExample(
    "Kubernetes cluster",
    request_only=True,
    value={
        "name": "prod-eu",
        "backend": "kubernetes",
        "api_endpoint": "https://k8s.example.com:6443",
        "kubeconfig_secret_ref": "env:PROD_EU_KUBECONFIG",
        "prometheus_url": "http://prometheus.monitoring:9090",
        "scheduler": "kueue",
    },
)
_POOL_EXAMPLE = OpenApiExample(
    "MIG pool",
    request_only=True,
    value={"name": "a100-mig", "gpu_model": "A100-40GB", "node_count": 2, "gpus_per_node": 8,
           "sharing_mode": "mig", "mig_devices": {"3g.20gb": 1, "2g.10gb": 1, "1g.5gb": 2}},
)  # fmt: skip


class _NamedWriteMixin(ScopedViewMixin, ServiceApiMixin):
    """Approvers read, platform admins write (the service checks the model permission); others get 403."""

    lookup_field = "name"
    lookup_value_regex = "[^/]+"

    def initial(self, request: Request, *args: Any, **kwargs: Any) -> None:
        super().initial(request, *args, **kwargs)  # type: ignore[misc]
        if not user_is_approver(request.user):
            raise exceptions.PermissionDenied(ONLY_APPROVERS)

    def _input(self, request: Request, *, name: str | None, partial: bool) -> dict[str, Any]:
        """The body, validated for types; on PUT/PATCH the name comes from the URL and a different one is a 400."""
        data = request.data
        if name is not None:
            if not hasattr(data, "get"):
                raise exceptions.ValidationError({"non_field_errors": ["Send a JSON object."]})
            if data.get("name", name) != name:
                raise exceptions.ValidationError({"name": [f"The URL names {name!r}; a rename is a new object."]})
            data = {**dict(data.items()), "name": name}
        serializer = self.get_serializer(data=data, partial=partial)  # type: ignore[attr-defined]
        serializer.is_valid(raise_exception=True)
        # Only what was sent: defaults of a replace are the model's, applied by the service.
        fields = {key: value for key, value in serializer.validated_data.items() if key in data}
        if "taints" in fields:
            fields["taints"] = [dict(taint) for taint in fields["taints"]]
        return fields

    def _answer(self, obj: Any, created: bool) -> Response:
        code = status.HTTP_201_CREATED if created else status.HTTP_200_OK
        return Response(self.get_serializer(obj).data, status=code)  # type: ignore[attr-defined]


@extend_schema_view(
    list=extend_schema(summary="Clusters (approvers and admins)", responses={200: ClusterSerializer, **_ERRORS}),
    retrieve=extend_schema(summary="One cluster by name", responses={200: ClusterSerializer, **_ERRORS}),
    create=extend_schema(
        summary="Create a cluster (platform admins); a name already taken is a 400",
        examples=[_CLUSTER_EXAMPLE],
        responses={201: ClusterSerializer, **_ERRORS},
    ),
    update=extend_schema(
        summary="Create or replace a cluster by name (platform admins; idempotent)",
        examples=[_CLUSTER_EXAMPLE],
        responses={200: ClusterSerializer, 201: ClusterSerializer, **_ERRORS},
    ),
    partial_update=extend_schema(
        summary="Change some of a cluster's fields (platform admins)", responses={200: ClusterSerializer, **_ERRORS}
    ),
    destroy=extend_schema(
        summary="Delete a cluster with its pools and quotas (platform admins)",
        responses={204: None, **_ERRORS, 409: OpenApiResponse(description="Requests ran on it: deactivate instead")},
    ),
)
@extend_schema(tags=["clusters"])
class ClusterViewSet(_NamedWriteMixin, viewsets.GenericViewSet):
    """Clusters by name: read for approvers, create, replace and delete for platform admins."""

    serializer_class = ClusterSerializer
    pagination_class = None
    scoped_model = Cluster

    def get_queryset(self) -> QuerySet[Cluster]:
        return super().get_queryset().prefetch_related("node_pools")

    def list(self, request: Request) -> Response:
        return Response(self.get_serializer(self.get_queryset(), many=True).data)

    def retrieve(self, request: Request, name: str) -> Response:
        return Response(self.get_serializer(self.get_object()).data)

    def create(self, request: Request) -> Response:
        fields = self._input(request, name=None, partial=False)
        cluster = cluster_services.cluster_create(acting_user=request.user, name=fields.pop("name"), fields=fields)
        return self._answer(cluster, True)

    def update(self, request: Request, name: str) -> Response:
        fields = self._input(request, name=name, partial=False)
        fields.pop("name")
        cluster, created = cluster_services.cluster_put(acting_user=request.user, name=name, fields=fields)
        return self._answer(cluster, created)

    def partial_update(self, request: Request, name: str) -> Response:
        cluster = self.get_object()
        fields = self._input(request, name=name, partial=True)
        fields.pop("name", None)
        cluster, _ = cluster_services.cluster_put(
            acting_user=request.user, name=cluster.name, fields=fields, partial=True
        )
        return self._answer(cluster, False)

    def destroy(self, request: Request, name: str) -> Response:
        # Still in use (InUse): a 409 with the reason, from portal.api_errors.
        cluster_services.cluster_delete(acting_user=request.user, cluster=self.get_object())
        return Response(status=status.HTTP_204_NO_CONTENT)


@extend_schema_view(
    list=extend_schema(summary="A cluster's node pools", responses={200: NodePoolSerializer, **_ERRORS}),
    retrieve=extend_schema(summary="One node pool by name", responses={200: NodePoolSerializer, **_ERRORS}),
    create=extend_schema(
        summary="Create a node pool (platform admins); a name already taken is a 400",
        examples=[_POOL_EXAMPLE],
        responses={201: NodePoolSerializer, **_ERRORS},
    ),
    update=extend_schema(
        summary="Create or replace a node pool by name (platform admins; idempotent)",
        examples=[_POOL_EXAMPLE],
        responses={200: NodePoolSerializer, 201: NodePoolSerializer, **_ERRORS},
    ),
    partial_update=extend_schema(
        summary="Change some of a pool's fields (platform admins)", responses={200: NodePoolSerializer, **_ERRORS}
    ),
    destroy=extend_schema(
        summary="Delete a node pool and its quotas (platform admins)",
        responses={204: None, **_ERRORS, 409: OpenApiResponse(description="Requests were placed on it")},
    ),
)
@extend_schema(tags=["clusters"])
class NodePoolViewSet(_NamedWriteMixin, viewsets.GenericViewSet):
    """A cluster's node pools by name, validated as the admin validates them (MIG layouts, time-slicing replicas)."""

    serializer_class = NodePoolSerializer
    pagination_class = None
    scoped_model = NodePool

    def cluster(self) -> Cluster:
        try:
            return self.visible(Cluster).get(name=self.kwargs["cluster_name"])
        except Cluster.DoesNotExist:
            raise exceptions.NotFound(f"No cluster named {self.kwargs['cluster_name']!r}.") from None

    def get_queryset(self) -> QuerySet[NodePool]:
        if getattr(self, "swagger_fake_view", False):  # the schema generator has no cluster in its URL
            return NodePool.objects.none()
        return super().get_queryset().filter(cluster=self.cluster()).select_related("gpu_model", "cluster")

    def list(self, request: Request, cluster_name: str) -> Response:
        return Response(self.get_serializer(self.get_queryset(), many=True).data)

    def retrieve(self, request: Request, cluster_name: str, name: str) -> Response:
        return Response(self.get_serializer(self.get_object()).data)

    def create(self, request: Request, cluster_name: str) -> Response:
        cluster = self.cluster()
        fields = self._input(request, name=None, partial=False)
        pool = cluster_services.node_pool_create(
            acting_user=request.user, cluster=cluster, name=fields.pop("name"), fields=fields
        )
        return self._answer(pool, True)

    def update(self, request: Request, cluster_name: str, name: str) -> Response:
        cluster = self.cluster()
        fields = self._input(request, name=name, partial=False)
        fields.pop("name")
        pool, created = cluster_services.node_pool_put(
            acting_user=request.user, cluster=cluster, name=name, fields=fields
        )
        return self._answer(pool, created)

    def partial_update(self, request: Request, cluster_name: str, name: str) -> Response:
        pool = self.get_object()
        fields = self._input(request, name=name, partial=True)
        fields.pop("name", None)
        pool, _ = cluster_services.node_pool_put(
            acting_user=request.user, cluster=pool.cluster, name=pool.name, fields=fields, partial=True
        )
        return self._answer(pool, False)

    def destroy(self, request: Request, cluster_name: str, name: str) -> Response:
        # Still in use (InUse): a 409 with the reason, from portal.api_errors.
        cluster_services.node_pool_delete(acting_user=request.user, pool=self.get_object())
        return Response(status=status.HTTP_204_NO_CONTENT)
