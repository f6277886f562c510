"""MIG plans: proposed per-GPU layouts of a MIG node pool, their approval and node-by-node application."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.validators import MaxValueValidator, MinValueValidator
from django.db import models

from allocations.models.clusters import NodePool


class MigPlanStatus(models.TextChoices):
    PROPOSED = "proposed", "Proposed"
    APPROVED = "approved", "Approved"
    APPLYING = "applying", "Applying"
    APPLIED = "applied", "Applied"
    FAILED = "failed", "Failed"
    CANCELLED = "cancelled", "Cancelled"


class DrainPolicy(models.TextChoices):
    STOP = "stop", "Stop the rollout"
    EVICT = "evict", "Evict the remaining GPU pods"


# The plan's state machine: who may go where (services enforce it, an event records each step).
MIG_PLAN_TRANSITIONS: dict[str, set[str]] = {
    MigPlanStatus.PROPOSED: {MigPlanStatus.APPROVED, MigPlanStatus.CANCELLED},
    MigPlanStatus.APPROVED: {MigPlanStatus.APPLYING, MigPlanStatus.CANCELLED},
    MigPlanStatus.APPLYING: {MigPlanStatus.APPLIED, MigPlanStatus.FAILED},
    # A failed rollout may be resumed (after someone fixed the node) or abandoned.
    MigPlanStatus.FAILED: {MigPlanStatus.APPLYING, MigPlanStatus.CANCELLED},
    MigPlanStatus.APPLIED: set(),
    MigPlanStatus.CANCELLED: set(),
}


class NodeStep(models.TextChoices):
    """Where one node of a plan's rollout is; the task moves it forward and the row keeps it across restarts."""

    WAITING = "waiting", "Waiting"
    DRAINING = "draining", "Cordoned, waiting for GPU pods to finish"
    CONFIGURING = "configuring", "MIG manager applying the layout"
    DONE = "done", "Done"
    FAILED = "failed", "Failed"


class MigPlan(models.Model):
    """Proposed per-GPU MIG layouts for one pool, from its demand, and the record of applying them node by node."""

    pool = models.ForeignKey(NodePool, on_delete=models.CASCADE, related_name="mig_plans")
    status = models.CharField(
        max_length=12, choices=MigPlanStatus.choices, default=MigPlanStatus.PROPOSED, db_index=True
    )
    headroom_pct = models.PositiveSmallIntegerField(default=0, validators=[MaxValueValidator(500)])
    max_unavailable = models.PositiveSmallIntegerField(default=1, validators=[MinValueValidator(1)])
    drain_timeout_seconds = models.PositiveIntegerField(default=3600, validators=[MinValueValidator(1)])
    drain_policy = models.CharField(max_length=8, choices=DrainPolicy.choices, default=DrainPolicy.STOP)
    # What was planned: demand per profile (headroom included), and per GPU the current and proposed layouts.
    demand = models.JSONField(default=dict, blank=True)
    gpus = models.JSONField(
        default=list, blank=True, help_text="Per GPU: node, index, current, proposed, changed, hosts."
    )
    gpu_count = models.PositiveIntegerField(default=0, help_text="GPUs the demand needs (the exact optimum).")
    pool_gpus = models.PositiveIntegerField(default=0)
    gpus_changed = models.PositiveIntegerField(default=0)
    nodes_to_drain = models.JSONField(default=list, blank=True)
    requests_to_move = models.JSONField(default=list, blank=True)
    monthly_cost_delta = models.DecimalField(max_digits=14, decimal_places=4, null=True, blank=True)
    price_basis = models.CharField(max_length=200, blank=True, help_text="Where the GPU-hour price came from.")
    # Rollout: the step of each node to drain, when its drain began, and why the plan stopped.
    progress = models.JSONField(default=dict, blank=True)
    error = models.TextField(blank=True)
    task_id = models.CharField(max_length=255, blank=True)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+")
    approved_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    approved_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return f"MIG plan {self.pk} for {self.pool} ({self.status})"

    @property
    def gpus_freed(self) -> int:
        return max(0, self.pool_gpus - self.gpu_count)

    @property
    def gpus_needed(self) -> int:
        return max(0, self.gpu_count - self.pool_gpus)

    @property
    def unused_monthly_value(self) -> Decimal | None:
        """What the GPUs the plan leaves unused cost a month: a saving only once they are released or repurposed
        (the plan itself keeps them in the pool, in their layout)."""
        if self.monthly_cost_delta is None or self.monthly_cost_delta >= 0:
            return None
        return -self.monthly_cost_delta

    @property
    def added_monthly_cost(self) -> Decimal | None:
        """What the GPUs the plan needs beyond the pool's cost a month."""
        if self.monthly_cost_delta is None or self.monthly_cost_delta <= 0:
            return None
        return self.monthly_cost_delta

    def node_layouts(self) -> dict[str, list[dict[str, int]]]:
        """The proposed layout of every GPU of every node that changes, by node and GPU index."""
        result: dict[str, list[dict[str, int]]] = {}
        for gpu in sorted(self.gpus, key=lambda g: (g.get("node") or "", g.get("index") or 0)):
            if gpu.get("node"):
                result.setdefault(gpu["node"], []).append(dict(gpu["proposed"]))
        return {node: layouts for node, layouts in result.items() if node in self.nodes_to_drain}


class MigPlanEvent(models.Model):
    """An append-only record of one step of a MIG plan: a status change or a node's progress, with who and why."""

    plan = models.ForeignKey(MigPlan, on_delete=models.CASCADE, related_name="events")
    actor = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    actor_label = models.CharField(max_length=150)
    at = models.DateTimeField(auto_now_add=True, db_index=True)
    from_status = models.CharField(max_length=12, choices=MigPlanStatus.choices, blank=True)
    to_status = models.CharField(max_length=12, choices=MigPlanStatus.choices)
    node = models.CharField(max_length=253, blank=True)
    message = models.TextField(blank=True)

    class Meta:
        ordering = ["at", "id"]

    def __str__(self) -> str:
        return f"plan {self.plan_id}: {self.from_status or '-'} -> {self.to_status} {self.node} {self.message}"

    def save(self, *args: Any, **kwargs: Any) -> None:
        if self.pk is not None and not self._state.adding:
            raise ValidationError("MIG plan events are append-only.")
        super().save(*args, **kwargs)


class MigNodeLayout(models.Model):
    """The per-GPU MIG layouts a node of a pool runs since a plan was applied there, and its named config."""

    pool = models.ForeignKey(NodePool, on_delete=models.CASCADE, related_name="mig_node_layouts")
    node = models.CharField(max_length=253)
    gpus = models.JSONField(default=list, blank=True, help_text="Per GPU index, its layout: [{'3g.20gb': 2}, ...].")
    config_name = models.CharField(max_length=63)
    plan = models.ForeignKey(MigPlan, on_delete=models.SET_NULL, null=True, blank=True, related_name="+")
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["pool", "node"], name="unique_mig_node_layout")]
        ordering = ["pool", "node"]

    def __str__(self) -> str:
        return f"{self.pool}: {self.node} = {self.config_name}"


class DynamicMigInstance(models.Model):
    """One MIG instance the dynamic MIG policy placed for a request on a pool whose DRA driver creates instances on
    demand: the GPU it chose, which the request's claim then selects."""

    pool = models.ForeignKey(NodePool, on_delete=models.CASCADE, related_name="dynamic_mig_instances")
    request = models.ForeignKey(
        "allocations.GpuRequest", on_delete=models.CASCADE, related_name="dynamic_mig_instances"
    )
    node = models.CharField(max_length=253)
    gpu_uuid = models.CharField(max_length=100, help_text="The GPU's uuid as the DRA driver publishes it.")
    profile = models.CharField(max_length=32)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["pool", "node", "gpu_uuid", "id"]

    def __str__(self) -> str:
        return f"{self.pool}: {self.profile} on {self.node}/{self.gpu_uuid} for request {self.request_id}"
