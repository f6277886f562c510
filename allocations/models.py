"""Teams, SLA tiers, the GPU catalog, clusters and node pools, quotas, and GPU requests with their event log."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.validators import MinValueValidator, RegexValidator
from django.db import models
from django.db.models import Q

from allocations.choices import (
    ClusterBackend,
    IsolationFloor,
    RequestStatus,
    Role,
    SharingMode,
    WorkloadType,
)
from allocations.choices import (
    Strategy as Strategy,  # re-exported: callers import the vocabularies from models
)
from allocations.decision.catalog import CatalogError, MigProfile

dns_label_validator = RegexValidator(
    r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$",
    "Use at most 63 lower-case letters, digits and '-', starting and ending with a letter or digit "
    "(a Kubernetes DNS label).",
)
resource_name_validator = RegexValidator(
    r"^nvidia\.com/(gpu|gpu\.shared|mig-\d+g\.\d+gb(\+me)?)$",
    "Use a Kubernetes GPU resource name such as 'nvidia.com/gpu' or 'nvidia.com/mig-2g.10gb'.",
)


class SlaTier(models.Model):
    """A service level: latency and availability targets, the least isolation it accepts, and its price multiplier."""

    slug = models.SlugField(max_length=40, unique=True)
    name = models.CharField(max_length=80)
    description = models.TextField(blank=True)
    latency_p99_ms = models.DecimalField(max_digits=8, decimal_places=2, null=True, blank=True)
    availability_pct = models.DecimalField(max_digits=6, decimal_places=3, null=True, blank=True)
    isolation_floor = models.CharField(max_length=20, choices=IsolationFloor.choices)
    priority_class_name = models.CharField(max_length=63, validators=[dns_label_validator])
    priority_value = models.IntegerField(default=0)
    preemptible = models.BooleanField(default=False)
    price_multiplier = models.DecimalField(
        max_digits=6, decimal_places=3, default=Decimal("1"), validators=[MinValueValidator(Decimal("0"))]
    )
    default_time_slice_replicas = models.PositiveSmallIntegerField(
        null=True, blank=True, validators=[MinValueValidator(2)]
    )

    class Meta:
        ordering = ["-priority_value", "slug"]
        verbose_name = "SLA tier"

    def __str__(self) -> str:
        return self.name


class Team(models.Model):
    """An ML team: its members, its Kubernetes namespace, its quotas and its monthly GPU-hour budget."""

    slug = models.SlugField(max_length=40, unique=True, validators=[dns_label_validator])
    name = models.CharField(max_length=100)
    cost_center = models.CharField(max_length=50, blank=True)
    namespace = models.CharField(
        max_length=63,
        unique=True,
        blank=True,
        validators=[dns_label_validator],
        help_text="Kubernetes namespace; defaults to team-<slug>.",
    )
    monthly_gpu_hour_budget = models.DecimalField(
        max_digits=12,
        decimal_places=2,
        null=True,
        blank=True,
        validators=[MinValueValidator(Decimal("0"))],
        help_text="GPU-hours the team may use per calendar month (blank: no budget).",
    )
    auto_approve_tiers = models.ManyToManyField(
        SlaTier,
        blank=True,
        related_name="+",
        help_text="Requests in these tiers are approved by policy when they fit the quota. Off by default.",
    )
    members = models.ManyToManyField(settings.AUTH_USER_MODEL, through="Membership", related_name="teams")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name

    def save(self, *args: Any, **kwargs: Any) -> None:
        if not self.namespace:
            self.namespace = f"team-{self.slug}"
        super().save(*args, **kwargs)


class Membership(models.Model):
    """A user's membership of a team, as a member or a team lead."""

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="memberships")
    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="memberships")
    role = models.CharField(max_length=10, choices=Role.choices, default=Role.MEMBER)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["user", "team"], name="unique_membership")]
        ordering = ["team__name", "user__username"]

    def __str__(self) -> str:
        return f"{self.user} in {self.team} ({self.get_role_display()})"


class GpuModel(models.Model):
    """A GPU model in the catalog: memory, the node label that selects it, power, prices and MIG geometry."""

    name = models.CharField(max_length=40, unique=True)
    family = models.CharField(max_length=20, blank=True)
    memory_gb = models.PositiveIntegerField()
    product_label = models.CharField(
        max_length=63, help_text="Value of the nvidia.com/gpu.product node label (GPU Feature Discovery)."
    )
    mig_capable = models.BooleanField(default=False)
    mig_compute_slices = models.PositiveSmallIntegerField(default=0)
    mig_memory_slices = models.PositiveSmallIntegerField(default=0)
    tdp_watts = models.PositiveIntegerField()
    purchase_price = models.DecimalField(
        max_digits=12, decimal_places=2, null=True, blank=True, validators=[MinValueValidator(Decimal("0"))]
    )
    list_hourly_price = models.DecimalField(
        max_digits=10,
        decimal_places=4,
        null=True,
        blank=True,
        validators=[MinValueValidator(Decimal("0"))],
        help_text="Cloud on-demand price per GPU-hour, used when no purchase price is known.",
    )
    dcgm_model_names = models.JSONField(default=list, blank=True, help_text="DCGM modelName label values.")
    aliases = models.JSONField(default=list, blank=True)
    notes = models.TextField(blank=True)

    class Meta:
        ordering = ["name"]
        verbose_name = "GPU model"

    def __str__(self) -> str:
        return self.name


class MigProfileDefinition(models.Model):
    """A MIG profile a GPU model supports, with its memory and compute slices (NVIDIA's MIG user guide)."""

    gpu_model = models.ForeignKey(GpuModel, on_delete=models.CASCADE, related_name="mig_profiles")
    name = models.CharField(max_length=20)
    memory_gb = models.PositiveIntegerField()
    compute_slices = models.PositiveSmallIntegerField()
    memory_slices = models.PositiveSmallIntegerField()
    max_instances = models.PositiveSmallIntegerField()
    placement_starts = models.JSONField(default=list, blank=True)
    recommendable = models.BooleanField(default=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["gpu_model", "name"], name="unique_mig_profile")]
        ordering = ["gpu_model__name", "memory_slices", "compute_slices", "name"]
        verbose_name = "MIG profile"

    def __str__(self) -> str:
        return f"{self.gpu_model.name} {self.name}"

    def clean(self) -> None:
        try:
            compute, memory = MigProfile.parse_name(self.name.removesuffix("+me"))
        except CatalogError as exc:
            raise ValidationError({"name": str(exc)}) from exc
        if compute != self.compute_slices:
            raise ValidationError({"compute_slices": f"'{self.name}' has {compute} compute slices."})
        if memory != self.memory_gb:
            raise ValidationError({"memory_gb": f"'{self.name}' has {memory} GB."})


class Cluster(models.Model):
    """A Kubernetes cluster GPU Portal deploys to, through its API or through a GitOps tree."""

    name = models.CharField(max_length=63, unique=True, validators=[dns_label_validator])
    description = models.TextField(blank=True)
    backend = models.CharField(max_length=20, choices=ClusterBackend.choices, default=ClusterBackend.KUBERNETES)
    api_endpoint = models.URLField(blank=True, help_text="Kubernetes API server URL (kubernetes backend).")
    kubeconfig_secret_ref = models.CharField(
        max_length=255,
        blank=True,
        help_text=(
            "Where the kubeconfig lives, never the kubeconfig itself: 'env:VARIABLE', 'file:/path/to/kubeconfig' "
            "or 'in-cluster'. Never shown back."
        ),
    )
    gitops_path = models.CharField(
        max_length=255, blank=True, help_text="Directory of the GitOps tree (gitops backend); relative to var/gitops."
    )
    gitops_commit = models.BooleanField(default=False, help_text="Commit each change to the git repository there.")
    prometheus_url = models.URLField(blank=True)
    prometheus_auth_secret_ref = models.CharField(
        max_length=255,
        blank=True,
        help_text="'env:VARIABLE' holding 'Bearer <token>' or 'user:password'. Never shown back.",
    )
    is_active = models.BooleanField(default=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name

    def clean(self) -> None:
        if self.backend == ClusterBackend.KUBERNETES and not (self.api_endpoint or self.kubeconfig_secret_ref):
            raise ValidationError(
                {"kubeconfig_secret_ref": "A kubernetes cluster needs an API endpoint or a kubeconfig reference."}
            )
        ref = self.kubeconfig_secret_ref
        if ref and not (ref == "in-cluster" or ref.startswith(("env:", "file:"))):
            raise ValidationError(
                {"kubeconfig_secret_ref": "Use 'env:VARIABLE', 'file:/path' or 'in-cluster': never paste a secret."}
            )


class NodePool(models.Model):
    """A group of identical GPU nodes in a cluster and how their GPUs are shared."""

    cluster = models.ForeignKey(Cluster, on_delete=models.CASCADE, related_name="node_pools")
    name = models.CharField(max_length=63, validators=[dns_label_validator])
    gpu_model = models.ForeignKey(GpuModel, on_delete=models.PROTECT, related_name="node_pools")
    node_count = models.PositiveIntegerField(default=1)
    gpus_per_node = models.PositiveSmallIntegerField(default=8, validators=[MinValueValidator(1)])
    sharing_mode = models.CharField(max_length=20, choices=SharingMode.choices, default=SharingMode.NONE)
    time_slice_replicas = models.PositiveSmallIntegerField(
        null=True, blank=True, validators=[MinValueValidator(2)], help_text="Replicas per GPU (time-slicing)."
    )
    mig_devices = models.JSONField(
        default=dict, blank=True, help_text='MIG layout per GPU (MIG pools), e.g. {"1g.5gb": 2, "2g.10gb": 1}.'
    )
    node_labels = models.JSONField(default=dict, blank=True)
    taints = models.JSONField(
        default=list,
        blank=True,
        help_text='e.g. [{"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}]',
    )
    # Filled by inventory sync from the cluster (allocatable per resource name).
    observed_allocatable = models.JSONField(default=dict, blank=True)
    observed_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["cluster", "name"], name="unique_pool_per_cluster")]
        ordering = ["cluster__name", "name"]

    def __str__(self) -> str:
        return f"{self.cluster.name}/{self.name}"

    @property
    def gpu_total(self) -> int:
        return self.node_count * self.gpus_per_node

    def capacity(self) -> dict[str, int]:
        """Schedulable units per resource name that this pool advertises, from its configuration."""
        if self.sharing_mode == SharingMode.MIG:
            return {f"nvidia.com/mig-{name}": count * self.gpu_total for name, count in self.mig_devices.items()}
        if self.sharing_mode == SharingMode.TIME_SLICING:
            return {"nvidia.com/gpu": self.gpu_total * (self.time_slice_replicas or 0)}
        return {"nvidia.com/gpu": self.gpu_total}

    def clean(self) -> None:
        errors: dict[str, str] = {}
        if self.sharing_mode == SharingMode.TIME_SLICING and not self.time_slice_replicas:
            errors["time_slice_replicas"] = "A time-slicing pool needs at least 2 replicas per GPU."
        if self.sharing_mode != SharingMode.TIME_SLICING and self.time_slice_replicas:
            errors["time_slice_replicas"] = "Only time-slicing pools have replicas."
        if self.sharing_mode == SharingMode.MIG:
            errors.update(self._mig_errors())
        elif self.mig_devices:
            errors["mig_devices"] = "Only MIG pools have a MIG layout."
        if not isinstance(self.node_labels, dict):
            errors["node_labels"] = "Node labels must be an object of label: value."
        if not isinstance(self.taints, list) or not all(isinstance(t, dict) and "key" in t for t in self.taints):
            errors["taints"] = 'Taints must be a list of {"key", "value", "effect"} objects.'
        if errors:
            raise ValidationError(errors)

    def _mig_errors(self) -> dict[str, str]:
        # The same geometry check the renderer applies (names, counts, memory and compute slices, placements).
        from allocations.manifests import ManifestError, check_mig_layout
        from allocations.selectors import gpu_model_spec

        model = getattr(self, "gpu_model", None)
        if model is None:
            return {}
        if not model.mig_capable:
            return {"sharing_mode": f"{model.name} is not MIG-capable."}
        if not isinstance(self.mig_devices, dict) or not self.mig_devices:
            return {"mig_devices": 'A MIG pool needs its layout per GPU, e.g. {"3g.20gb": 2}.'}
        try:
            check_mig_layout(gpu_model_spec(model), self.mig_devices)
        except ManifestError as exc:
            return {"mig_devices": str(exc)}
        return {}


class Quota(models.Model):
    """The most of one GPU resource a team may hold at once on a cluster or a node pool (or anywhere)."""

    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="quotas")
    cluster = models.ForeignKey(Cluster, on_delete=models.CASCADE, null=True, blank=True, related_name="quotas")
    node_pool = models.ForeignKey(NodePool, on_delete=models.CASCADE, null=True, blank=True, related_name="quotas")
    resource_name = models.CharField(max_length=63, validators=[resource_name_validator])
    limit = models.PositiveIntegerField(help_text="Units of the resource: GPUs, MIG slices or time-sliced shares.")

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["team", "cluster", "node_pool", "resource_name"],
                name="unique_quota_scope",
                nulls_distinct=False,
            ),
            models.CheckConstraint(
                condition=Q(cluster__isnull=True) | Q(node_pool__isnull=True), name="quota_cluster_or_pool"
            ),
        ]
        ordering = ["team__name", "resource_name"]

    def __str__(self) -> str:
        return f"{self.team}: {self.resource_name} <= {self.limit} ({self.scope_label})"

    @property
    def scope_label(self) -> str:
        if self.node_pool_id:
            return f"pool {self.node_pool}"
        if self.cluster_id:
            return f"cluster {self.cluster}"
        return "all clusters"

    def clean(self) -> None:
        if self.cluster_id and self.node_pool_id:
            raise ValidationError({"node_pool": "A quota applies to a cluster or to a node pool, not both."})


# The request lifecycle (DESIGN.md). Cancelling a request that is not yet running releases it.
ALLOWED_TRANSITIONS: dict[str, frozenset[str]] = {
    RequestStatus.DRAFT: frozenset({RequestStatus.PENDING_APPROVAL, RequestStatus.RELEASED}),
    RequestStatus.PENDING_APPROVAL: frozenset({RequestStatus.APPROVED, RequestStatus.REJECTED, RequestStatus.RELEASED}),
    RequestStatus.APPROVED: frozenset({RequestStatus.PROVISIONING, RequestStatus.FAILED, RequestStatus.RELEASED}),
    RequestStatus.PROVISIONING: frozenset({RequestStatus.ACTIVE, RequestStatus.FAILED, RequestStatus.RELEASED}),
    RequestStatus.ACTIVE: frozenset(
        {RequestStatus.PROVISIONING, RequestStatus.RELEASED, RequestStatus.EXPIRED, RequestStatus.FAILED}
    ),
    RequestStatus.FAILED: frozenset({RequestStatus.PROVISIONING, RequestStatus.RELEASED}),
    RequestStatus.REJECTED: frozenset(),
    RequestStatus.RELEASED: frozenset(),
    RequestStatus.EXPIRED: frozenset(),
}
# Statuses whose allocation counts against the team's quota.
QUOTA_HOLDING_STATUSES = frozenset({RequestStatus.APPROVED, RequestStatus.PROVISIONING, RequestStatus.ACTIVE})
TERMINAL_STATUSES = frozenset(s for s, targets in ALLOWED_TRANSITIONS.items() if not targets)


class GpuRequest(models.Model):
    """A team's request for GPUs: the workload profile, the allocation spec frozen at submission, and its status."""

    team = models.ForeignKey(Team, on_delete=models.PROTECT, related_name="gpu_requests")
    requester = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="gpu_requests")
    name = models.CharField(max_length=100)
    purpose = models.TextField(blank=True)

    # The workload profile (DESIGN.md).
    workload_type = models.CharField(max_length=30, choices=WorkloadType.choices)
    gpu_memory_gb = models.DecimalField(max_digits=7, decimal_places=2, validators=[MinValueValidator(Decimal("0.01"))])
    gpu_count = models.PositiveSmallIntegerField(default=1, validators=[MinValueValidator(1)])
    replicas = models.PositiveSmallIntegerField(default=1, validators=[MinValueValidator(1)])
    latency_sensitive = models.BooleanField(default=False)
    latency_p99_ms = models.DecimalField(max_digits=8, decimal_places=2, null=True, blank=True)
    isolation_required = models.BooleanField(default=False)
    expected_utilization_pct = models.DecimalField(max_digits=5, decimal_places=2, null=True, blank=True)
    sla_tier = models.ForeignKey(SlaTier, on_delete=models.PROTECT, null=True, blank=True, related_name="+")
    gpu_model_requested = models.CharField(max_length=40, blank=True)
    duration_hours = models.DecimalField(max_digits=8, decimal_places=2, null=True, blank=True)
    expires_at = models.DateTimeField(null=True, blank=True)
    image = models.CharField(max_length=255, blank=True)
    command = models.JSONField(default=list, blank=True)

    # Where it runs and what it got.
    cluster = models.ForeignKey(Cluster, on_delete=models.PROTECT, null=True, blank=True, related_name="gpu_requests")
    node_pool = models.ForeignKey(
        NodePool, on_delete=models.PROTECT, null=True, blank=True, related_name="gpu_requests"
    )
    spec = models.JSONField(default=dict, blank=True, help_text="The recommendation frozen at submission.")
    resource_name = models.CharField(max_length=63, blank=True)
    resource_units = models.PositiveIntegerField(
        default=0, help_text="Units of resource_name the request holds: quantity per replica x replicas."
    )

    status = models.CharField(max_length=20, choices=RequestStatus.choices, default=RequestStatus.DRAFT, db_index=True)
    status_detail = models.TextField(blank=True, help_text="Pending reason or the last error, for the user.")
    last_task_id = models.CharField(max_length=255, blank=True)
    manifests = models.JSONField(default=list, blank=True, help_text="The Kubernetes objects last rendered.")
    manifests_rendered_at = models.DateTimeField(null=True, blank=True)
    observed_phase = models.CharField(max_length=20, blank=True, help_text="Workload phase last seen on the cluster.")
    observed_at = models.DateTimeField(null=True, blank=True)
    expiry_notified_at = models.DateTimeField(null=True, blank=True)

    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)
    submitted_at = models.DateTimeField(null=True, blank=True)
    approved_at = models.DateTimeField(null=True, blank=True)
    activated_at = models.DateTimeField(null=True, blank=True)
    ended_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [
            models.Index(fields=["team", "status"]),
            models.Index(fields=["status", "submitted_at"]),
            models.Index(fields=["team", "resource_name", "status"]),
        ]
        permissions = [("approve_gpurequest", "Can approve or reject GPU requests")]
        verbose_name = "GPU request"

    def __str__(self) -> str:
        return f"#{self.pk} {self.name}"

    @property
    def workload_object_name(self) -> str:
        """The name of the request's Kubernetes objects (DESIGN.md)."""
        return f"gpr-{self.pk}"

    @property
    def strategy(self) -> str:
        return str(self.spec.get("strategy", ""))

    def can_transition_to(self, status: str) -> bool:
        return status in ALLOWED_TRANSITIONS.get(self.status, frozenset())

    @property
    def is_terminal(self) -> bool:
        return self.status in TERMINAL_STATUSES


class RequestEvent(models.Model):
    """An append-only record of one status change of a request: who, when, from, to and why."""

    request = models.ForeignKey(GpuRequest, on_delete=models.CASCADE, related_name="events")
    actor = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    actor_label = models.CharField(max_length=150, help_text="Who acted, kept if the user is deleted, or the policy.")
    at = models.DateTimeField(auto_now_add=True, db_index=True)
    from_status = models.CharField(max_length=20, choices=RequestStatus.choices, blank=True)
    to_status = models.CharField(max_length=20, choices=RequestStatus.choices)
    comment = models.TextField(blank=True)

    class Meta:
        ordering = ["at", "id"]

    def __str__(self) -> str:
        return f"{self.request_id}: {self.from_status or '-'} -> {self.to_status} by {self.actor_label}"

    def save(self, *args: Any, **kwargs: Any) -> None:
        if self.pk is not None and not self._state.adding:
            raise ValidationError("Request events are append-only and cannot be changed.")
        super().save(*args, **kwargs)

    def delete(self, *args: Any, **kwargs: Any) -> tuple[int, dict[str, int]]:
        raise ValidationError("Request events are append-only and cannot be deleted.")
