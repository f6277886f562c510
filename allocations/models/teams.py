"""Teams, their members, SLA tiers, and quotas."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.validators import MinValueValidator
from django.db import models
from django.db.models import F, Q

from allocations.choices import IsolationFloor, Role
from allocations.models.clusters import Cluster, NodePool
from allocations.models.validators import dns_label_validator, resource_name_validator
from gpucore.manifests.namespace import PROTECTED_TIER_PRIORITY


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

    def clean(self) -> None:
        # Every non-preemptible tier shares one kube-scheduler priority; a preemptible one at or above it could not
        # be evicted by them, and would be refused when the PriorityClasses are rendered.
        if self.preemptible and self.priority_value >= PROTECTED_TIER_PRIORITY:
            raise ValidationError(
                {
                    "priority_value": (
                        f"A preemptible tier's priority must stay below {PROTECTED_TIER_PRIORITY:,}, the value every "
                        "non-preemptible tier's PriorityClass has."
                    )
                }
            )


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


class Quota(models.Model):
    """The most of one GPU resource a team may hold at once on a cluster or a node pool (or anywhere)."""

    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="quotas")
    cluster = models.ForeignKey(Cluster, on_delete=models.CASCADE, null=True, blank=True, related_name="quotas")
    node_pool = models.ForeignKey(NodePool, on_delete=models.CASCADE, null=True, blank=True, related_name="quotas")
    resource_name = models.CharField(max_length=63, validators=[resource_name_validator])
    limit = models.PositiveIntegerField(
        help_text="The nominal quota: units of the resource (GPUs, MIG slices or time-sliced shares) the team holds."
    )
    # Kueue's quota vocabulary (docs/reference-sources.md, "Kueue"); the cohort is every team's quota of the same
    # resource and scope on the cluster. Team-wide quotas belong to no cluster, hence no cohort and no limits.
    borrowing_limit = models.PositiveIntegerField(
        null=True,
        blank=True,
        help_text=(
            "Units a preemptible (tier 3) request may borrow beyond the nominal quota from other teams' unused "
            "quota on the cluster. Blank: no borrowing."
        ),
    )
    lending_limit = models.PositiveIntegerField(
        null=True,
        blank=True,
        help_text="The most of the unused nominal quota other teams may borrow. Blank: all of it.",
    )

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
            # Kueue's rules: a lending limit never exceeds the nominal quota; limits need a cohort (a cluster).
            models.CheckConstraint(
                condition=Q(lending_limit__isnull=True) | Q(lending_limit__lte=F("limit")),
                name="quota_lending_within_nominal",
            ),
            models.CheckConstraint(
                condition=Q(borrowing_limit__isnull=True, lending_limit__isnull=True)
                | Q(cluster__isnull=False)
                | Q(node_pool__isnull=False),
                name="quota_limits_need_a_cohort",
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

    @property
    def nominal(self) -> int:
        """The nominal quota (Kueue's ``nominalQuota``): what the team holds without borrowing."""
        return self.limit

    @property
    def in_cohort(self) -> bool:
        """Whether the quota belongs to a cluster's cohort (a cluster or pool quota), so it may borrow and lend."""
        return bool(self.cluster_id or self.node_pool_id)

    def clean(self) -> None:
        if self.cluster_id and self.node_pool_id:
            raise ValidationError({"node_pool": "A quota applies to a cluster or to a node pool, not both."})
        errors: dict[str, str] = {}
        if not self.in_cohort:
            for name in ("borrowing_limit", "lending_limit"):
                if getattr(self, name) is not None:
                    errors[name] = (
                        "Only a cluster or node pool quota can borrow or lend: a team-wide quota has no cohort."
                    )
        if self.lending_limit is not None and self.limit is not None and self.lending_limit > self.limit:
            errors["lending_limit"] = "The lending limit must be less than or equal to the nominal quota."
        if errors:
            raise ValidationError(errors)
