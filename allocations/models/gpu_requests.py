"""GPU requests: the workload profile, the frozen spec, the lifecycle, its event log and extensions."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.validators import MinValueValidator
from django.db import models
from django.db.models import Q
from django.db.models.functions import Cast

from allocations.choices import RequestStatus, SharingMode, WorkloadType
from allocations.models.clusters import Cluster, NodePool
from allocations.models.teams import SlaTier, Team
from gpucore.manifests import AllocationSpec
from gpucore.vocabulary import Strategy

# The request lifecycle (docs/api.md, "Requests"). Cancelling a request that is not yet running releases it.
ALLOWED_TRANSITIONS: dict[str, frozenset[str]] = {
    RequestStatus.DRAFT: frozenset({RequestStatus.PENDING_APPROVAL, RequestStatus.RELEASED}),
    RequestStatus.PENDING_APPROVAL: frozenset({RequestStatus.APPROVED, RequestStatus.REJECTED, RequestStatus.RELEASED}),
    RequestStatus.APPROVED: frozenset({RequestStatus.PROVISIONING, RequestStatus.FAILED, RequestStatus.RELEASED}),
    RequestStatus.PROVISIONING: frozenset({RequestStatus.ACTIVE, RequestStatus.FAILED, RequestStatus.RELEASED}),
    RequestStatus.ACTIVE: frozenset(
        {
            RequestStatus.PROVISIONING,
            RequestStatus.RELEASED,
            RequestStatus.EXPIRED,
            RequestStatus.FAILED,
            RequestStatus.SUSPENDED,
        }
    ),
    # Resumed through provisioning (its objects applied again at their replicas), or ended while suspended.
    RequestStatus.SUSPENDED: frozenset({RequestStatus.PROVISIONING, RequestStatus.RELEASED, RequestStatus.EXPIRED}),
    RequestStatus.FAILED: frozenset({RequestStatus.PROVISIONING, RequestStatus.RELEASED}),
    RequestStatus.REJECTED: frozenset(),
    RequestStatus.RELEASED: frozenset(),
    RequestStatus.EXPIRED: frozenset(),
}
# Statuses whose allocation counts against the team's quota.
QUOTA_HOLDING_STATUSES = frozenset({RequestStatus.APPROVED, RequestStatus.PROVISIONING, RequestStatus.ACTIVE})
TERMINAL_STATUSES = frozenset(s for s, targets in ALLOWED_TRANSITIONS.items() if not targets)
# Statuses a request may be withdrawn from before approval (it ends as released).
CANCELLABLE_STATUSES = frozenset({RequestStatus.DRAFT, RequestStatus.PENDING_APPROVAL})
# Statuses an approved or running allocation may be given back from.
RELEASABLE_STATUSES = frozenset(
    {
        RequestStatus.APPROVED,
        RequestStatus.PROVISIONING,
        RequestStatus.ACTIVE,
        RequestStatus.FAILED,
        RequestStatus.SUSPENDED,
    }
)
# Statuses a platform approver may hand back to provisioning (its objects applied again).
REAPPLICABLE_STATUSES = frozenset({RequestStatus.FAILED, RequestStatus.ACTIVE})
# Allocations that still run or are about to: an ended one is not extended, it is requested again.
EXTENDABLE_STATUSES = frozenset({RequestStatus.APPROVED, RequestStatus.PROVISIONING, RequestStatus.ACTIVE})
# While a request is on its way to the cluster its status changes without anyone acting: pages poll.
POLLING_STATUSES = frozenset({RequestStatus.APPROVED, RequestStatus.PROVISIONING})
# A request that never ran takes its strategy from its pool (the spec of every submitted request names it).
_POOL_STRATEGY = {
    SharingMode.NONE: Strategy.DEDICATED,
    SharingMode.MIG: Strategy.MIG,
    SharingMode.TIME_SLICING: Strategy.TIME_SLICING,
}


class GpuRequestManager(models.Manager["GpuRequest"]):
    """Requests load without ``spec_text``, the spec again as text: only the requests API's reads name it (a request
    read as an instance would otherwise carry its ~4 KB spec twice)."""

    def get_queryset(self) -> models.QuerySet[GpuRequest]:
        return super().get_queryset().defer("spec_text")


class GpuRequest(models.Model):
    """A team's request for GPUs: the workload profile, the allocation spec frozen at submission, and its status."""

    team = models.ForeignKey(Team, on_delete=models.PROTECT, related_name="gpu_requests")
    requester = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="gpu_requests")
    name = models.CharField(max_length=100)
    purpose = models.TextField(blank=True)

    # The workload profile (docs/api.md, "Workload profile").
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
    # The spec as JSON text, kept by the database: the requests API writes it into its answers as it is, instead of
    # turning a few KB of jsonb into text, parsing it and encoding it again for every row of a list.
    spec_text = models.GeneratedField(
        expression=Cast("spec", output_field=models.TextField()), output_field=models.TextField(), db_persist=True
    )
    resource_name = models.CharField(max_length=63, blank=True)
    resource_units = models.PositiveIntegerField(
        default=0, help_text="Units of resource_name the request holds: quantity per replica x replicas."
    )
    borrowed = models.BooleanField(
        default=False,
        help_text="Admitted beyond the team's nominal quota by borrowing from the cohort (preemptible tiers only).",
    )

    status = models.CharField(max_length=20, choices=RequestStatus.choices, default=RequestStatus.DRAFT, db_index=True)
    status_detail = models.TextField(blank=True, help_text="Pending reason or the last error, for the user.")
    last_task_id = models.CharField(max_length=255, blank=True)
    manifests = models.JSONField(default=list, blank=True, help_text="The Kubernetes objects last rendered.")
    manifests_rendered_at = models.DateTimeField(null=True, blank=True)
    observed_phase = models.CharField(max_length=20, blank=True, help_text="Workload phase last seen on the cluster.")
    observed_at = models.DateTimeField(null=True, blank=True)
    queue_conditions = models.JSONField(
        default=list,
        blank=True,
        help_text="The Kueue Workload's conditions last read (type, status, reason, message), on a Kueue cluster.",
    )
    expiry_notified_at = models.DateTimeField(null=True, blank=True)
    # Idle reclaim: the last warning, the owner's last "keep" (idle hours count again from it), the suspension.
    idle_warned_at = models.DateTimeField(null=True, blank=True)
    idle_kept_at = models.DateTimeField(null=True, blank=True)
    suspended_at = models.DateTimeField(null=True, blank=True)

    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)
    submitted_at = models.DateTimeField(null=True, blank=True)
    approved_at = models.DateTimeField(null=True, blank=True)
    activated_at = models.DateTimeField(null=True, blank=True)
    ended_at = models.DateTimeField(null=True, blank=True)

    objects = GpuRequestManager()

    class Meta:
        # Related objects (an event's request, an extension's) load without spec_text too.
        base_manager_name = "objects"
        ordering = ["-created_at", "-id"]
        indexes = [
            models.Index(fields=["team", "status"]),
            models.Index(fields=["status", "submitted_at"]),
            models.Index(fields=["team", "resource_name", "status"]),
            # The lists' default order: a page is read from the index and stops after its rows, instead of sorting
            # every visible request.
            models.Index(fields=["created_at", "id"], name="gpurequest_created_id_idx"),
        ]
        permissions = [("approve_gpurequest", "Can approve or reject GPU requests")]
        verbose_name = "GPU request"

    def __str__(self) -> str:
        return f"#{self.pk} {self.name}"

    @property
    def workload_object_name(self) -> str:
        """The name of the request's Kubernetes objects (docs/kubernetes-and-kueue.md, "Names and labels")."""
        return f"gpr-{self.pk}"

    @property
    def is_distributed(self) -> bool:
        """Whether several pods form one training or HPC process group (gpucore.manifests: rendezvous, gang)."""
        return self.workload_type in (WorkloadType.TRAINING, WorkloadType.HPC_SIMULATION) and self.replicas > 1

    @property
    def strategy(self) -> str:
        return str(self.spec.get("strategy", ""))

    @property
    def allocation_spec(self) -> AllocationSpec:
        """What the request holds, typed: the spec frozen at submission, completed from the request's own columns.

        Every reader of "what did it hold" (billing, advice, demo usage) starts here instead of reading spec keys:
        a key missing from an old spec is taken from the column it was copied to at submission (``resource_name``,
        ``gpu_count``, ``replicas``), the model from the pool, the strategy from the pool's sharing mode.
        Raises ``gpucore.manifests.ManifestError`` when the spec contradicts itself (a MIG resource without a MIG
        strategy, ...).
        """
        return self.allocation_spec_of(self.spec or {})

    # The spec keys allocation_spec reads: a reader of many requests loads only these (allocation_intervals).
    ALLOCATION_SPEC_KEYS = (
        "strategy",
        "resource_name",
        "quantity",
        "replicas",
        "gpu_model",
        "mig_profile",
        "time_slice_replicas",
        "node_selector",
    )

    def allocation_spec_of(self, spec: dict[str, Any]) -> AllocationSpec:
        """``allocation_spec`` from ``spec`` (the frozen spec, or just its ``ALLOCATION_SPEC_KEYS``)."""
        strategy = spec.get("strategy") or self._pool_strategy()
        replicas_per_gpu = spec.get("time_slice_replicas")
        if replicas_per_gpu is None and strategy == Strategy.TIME_SLICING and self.node_pool_id:
            replicas_per_gpu = self.node_pool.time_slice_replicas
        model = spec.get("gpu_model") or (self.node_pool.gpu_model.name if self.node_pool_id else "")
        return AllocationSpec(
            strategy=strategy,
            resource_name=str(spec.get("resource_name") or self.resource_name or "nvidia.com/gpu"),
            quantity=int(spec.get("quantity") or self.gpu_count),
            replicas=int(spec.get("replicas") or self.replicas),
            gpu_model=str(model or self.gpu_model_requested),
            mig_profile=spec.get("mig_profile") or None,
            time_slice_replicas=replicas_per_gpu,
            node_selector=spec.get("node_selector") or {},
        )

    def _pool_strategy(self) -> Strategy:
        if not self.node_pool_id:
            return Strategy.DEDICATED
        return _POOL_STRATEGY.get(self.node_pool.sharing_mode, Strategy.DEDICATED)

    def can_transition_to(self, status: str) -> bool:
        return status in ALLOWED_TRANSITIONS.get(self.status, frozenset())


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
    details = models.JSONField(
        default=dict, blank=True, help_text="Evidence for the change, e.g. the hourly readings behind an idle reclaim."
    )

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


class ExtensionStatus(models.TextChoices):
    PENDING = "pending", "Pending"
    APPROVED = "approved", "Approved"
    REJECTED = "rejected", "Rejected"


# One extension adds at most 30 days; a longer need is a new request, checked against the quota again.
MAX_EXTENSION_HOURS = Decimal("720")


class AllocationExtension(models.Model):
    """A request for more hours on an allocation, why, and an approver's decision; at most one pending per request."""

    request = models.ForeignKey(GpuRequest, on_delete=models.CASCADE, related_name="extensions")
    requested_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+")
    hours = models.DecimalField(max_digits=5, decimal_places=2, validators=[MinValueValidator(Decimal("0.01"))])
    reason = models.TextField()
    status = models.CharField(
        max_length=10, choices=ExtensionStatus.choices, default=ExtensionStatus.PENDING, db_index=True
    )
    decided_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    decided_at = models.DateTimeField(null=True, blank=True)
    decision_comment = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["request"],
                condition=Q(status="pending"),
                name="one_pending_extension_per_request",
                violation_error_message="This request already has a pending extension.",
            ),
            models.CheckConstraint(condition=Q(hours__gt=0, hours__lte=720), name="extension_hours_in_range"),
        ]
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return f"#{self.request_id} +{self.hours} h ({self.status})"

    def clean(self) -> None:
        if self.hours is not None and self.hours > MAX_EXTENSION_HOURS:
            raise ValidationError({"hours": f"Extend by at most {MAX_EXTENSION_HOURS} hours (30 days) at a time."})
