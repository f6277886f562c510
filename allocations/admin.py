"""Django admin for platform admins: teams, the catalog, clusters and pools, quotas, requests and their events."""

from __future__ import annotations

from collections.abc import Callable

from django import forms
from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied, ValidationError
from django.db.models import Count, QuerySet
from django.http import HttpRequest

from allocations.clusters.placement import gpu_price
from allocations.clusters.services import CLUSTER_FIELDS, cluster_inventory_sync_queue, cluster_objects_apply_queue
from allocations.lifecycle import InvalidTransition
from allocations.models import (
    AllocationExtension,
    Cluster,
    ClusterBackend,
    GpuModel,
    GpuRequest,
    Membership,
    MigProfileDefinition,
    NodePool,
    Quota,
    RequestEvent,
    SlaTier,
    Team,
)
from allocations.requests.services import gpu_request_reapply, gpu_request_release
from allocations.selectors import user_is_approver
from audit.admin import AuditedAdminMixin


def _reason(error: Exception) -> str:
    """One readable sentence from a service error, for an admin message."""
    if isinstance(error, ValidationError):
        return " ".join(error.messages)
    return str(error) or "not allowed"


class SecretReferenceWidget(forms.PasswordInput):
    """A password box that never renders the stored value back; leaving it empty keeps the current one."""

    def __init__(self) -> None:
        super().__init__(render_value=False, attrs={"autocomplete": "off", "placeholder": "unchanged"})


class ClusterAdminForm(forms.ModelForm):
    class Meta:
        model = Cluster
        fields = ["name", *CLUSTER_FIELDS]  # the same fields the clusters API writes
        widgets = {
            "kubeconfig_secret_ref": SecretReferenceWidget(),
            "prometheus_auth_secret_ref": SecretReferenceWidget(),
        }

    def __init__(self, *args: object, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)
        for name in ("kubeconfig_secret_ref", "prometheus_auth_secret_ref"):
            stored = bool(self.instance.pk and getattr(self.instance, name))
            self.fields[name].help_text += " A value is stored." if stored else " No value stored."

    def _keep_secret(self, name: str) -> str:
        # An empty box means "unchanged", so editing other fields never wipes the reference.
        value = self.cleaned_data.get(name, "")
        if not value and self.instance.pk:
            return getattr(self.instance, name)
        return value

    def clean_kubeconfig_secret_ref(self) -> str:
        return self._keep_secret("kubeconfig_secret_ref")

    def clean_prometheus_auth_secret_ref(self) -> str:
        return self._keep_secret("prometheus_auth_secret_ref")


class MembershipInline(admin.TabularInline):
    model = Membership
    extra = 1
    autocomplete_fields = ["user"]


class QuotaInline(admin.TabularInline):
    model = Quota
    extra = 1
    fields = ["resource_name", "limit", "borrowing_limit", "lending_limit", "cluster", "node_pool"]


@admin.register(Team)
class TeamAdmin(AuditedAdminMixin, admin.ModelAdmin):
    list_display = ["name", "slug", "namespace", "cost_center", "monthly_gpu_hour_budget", "member_count"]
    search_fields = ["name", "slug", "namespace", "cost_center"]
    list_filter = ["auto_approve_tiers"]
    prepopulated_fields = {"slug": ["name"]}
    filter_horizontal = ["auto_approve_tiers"]
    inlines = [MembershipInline, QuotaInline]

    def get_queryset(self, request: HttpRequest) -> QuerySet[Team]:
        return super().get_queryset(request).annotate(member_count=Count("memberships", distinct=True))

    @admin.display(ordering="member_count", description="Members")
    def member_count(self, obj: Team) -> int:
        return obj.member_count


@admin.register(Membership)
class MembershipAdmin(AuditedAdminMixin, admin.ModelAdmin):
    list_display = ["user", "team", "role", "created_at"]
    list_filter = ["role", "team"]
    search_fields = ["user__username", "user__email", "team__name", "team__slug"]
    autocomplete_fields = ["user", "team"]


@admin.register(SlaTier)
class SlaTierAdmin(AuditedAdminMixin, admin.ModelAdmin):
    list_display = [
        "name",
        "slug",
        "isolation_floor",
        "latency_p99_ms",
        "availability_pct",
        "priority_class_name",
        "preemptible",
        "price_multiplier",
    ]
    list_filter = ["isolation_floor", "preemptible"]
    search_fields = ["name", "slug", "priority_class_name"]


class MigProfileInline(admin.TabularInline):
    model = MigProfileDefinition
    extra = 0
    fields = ["name", "memory_gb", "compute_slices", "memory_slices", "max_instances", "recommendable"]


@admin.register(GpuModel)
class GpuModelAdmin(AuditedAdminMixin, admin.ModelAdmin):
    list_display = [
        "name",
        "family",
        "memory_gb",
        "mig_capable",
        "tdp_watts",
        "purchase_price",
        "list_hourly_price",
        "product_label",
    ]
    list_filter = ["mig_capable", "family"]
    search_fields = ["name", "product_label", "aliases"]
    inlines = [MigProfileInline]


@admin.register(MigProfileDefinition)
class MigProfileDefinitionAdmin(admin.ModelAdmin):
    list_display = ["gpu_model", "name", "memory_gb", "compute_slices", "memory_slices", "max_instances"]
    list_filter = ["gpu_model", "recommendable"]
    search_fields = ["name", "gpu_model__name"]


class NodePoolInline(admin.StackedInline):
    model = NodePool
    extra = 0
    fields = [
        ("name", "gpu_model"),
        ("node_count", "gpus_per_node"),
        ("sharing_mode", "time_slice_replicas", "rename_by_default"),
        "mig_devices",
        "node_labels",
        ("topology_level", "topology_required"),
        "dynamic_mig",
        "taints",
        "gpu_price",
    ]
    readonly_fields = ["gpu_price"]

    @admin.display(description="GPU price")
    def gpu_price(self, obj: NodePool) -> str:
        return _gpu_price_text(obj)


def _gpu_price_text(pool: NodePool) -> str:
    """What one GPU of the pool's model costs per hour and on which basis, or that it has no price (never silent)."""
    if pool.pk is None or pool.gpu_model_id is None:
        return "—"
    return gpu_price(pool.gpu_model).text


@admin.register(Cluster)
class ClusterAdmin(AuditedAdminMixin, admin.ModelAdmin):
    form = ClusterAdminForm
    list_display = ["name", "backend", "scheduler", "api_endpoint", "prometheus_url", "pool_count", "is_active"]
    list_filter = ["backend", "scheduler", "prometheus_recording_rules", "is_active"]
    search_fields = ["name", "description", "api_endpoint"]
    inlines = [NodePoolInline]

    def get_queryset(self, request: HttpRequest) -> QuerySet[Cluster]:
        return super().get_queryset(request).annotate(pool_count=Count("node_pools"))

    @admin.display(ordering="pool_count", description="Node pools")
    def pool_count(self, obj: Cluster) -> int:
        return obj.pool_count

    def has_sync_permission(self, request: HttpRequest) -> bool:
        return user_is_approver(request.user)

    @admin.action(description="Sync inventory now (Kubernetes clusters)", permissions=["sync"])
    def sync_inventory(self, request: HttpRequest, queryset: QuerySet[Cluster]) -> None:
        """Queue the inventory sync task; it reads every active Kubernetes cluster, so one run covers the selection."""
        clusters = list(queryset.order_by("name"))
        skipped = [c.name for c in clusters if c.backend != ClusterBackend.KUBERNETES or not c.is_active]
        try:
            cluster_inventory_sync_queue(acting_user=request.user)
        except PermissionDenied as exc:
            self.message_user(request, _reason(exc), messages.ERROR)
            return
        synced = [c.name for c in clusters if c.name not in skipped]
        if synced:
            self.message_user(request, f"Inventory sync queued for {', '.join(synced)}.", messages.SUCCESS)
        if skipped:
            self.message_user(
                request,
                f"Not synced (GitOps tree or inactive: the portal cannot read their nodes): {', '.join(skipped)}.",
                messages.WARNING,
            )

    @admin.action(
        description="Apply cluster objects now (priority classes, GPU Operator configs, Kueue)", permissions=["sync"]
    )
    def apply_cluster_objects(self, request: HttpRequest, queryset: QuerySet[Cluster]) -> None:
        """Queue the apply of each selected cluster's own objects (the same task beat runs every five minutes)."""
        names = []
        for cluster in queryset.order_by("name"):
            try:
                cluster_objects_apply_queue(acting_user=request.user, cluster=cluster)
            except PermissionDenied as exc:
                self.message_user(request, _reason(exc), messages.ERROR)
                return
            names.append(cluster.name)
        if names:
            self.message_user(request, f"Cluster objects queued for {', '.join(names)}.", messages.SUCCESS)

    actions = ["sync_inventory", "apply_cluster_objects"]


@admin.register(NodePool)
class NodePoolAdmin(AuditedAdminMixin, admin.ModelAdmin):
    list_display = [
        "__str__",
        "gpu_model",
        "node_count",
        "gpus_per_node",
        "sharing_mode",
        "time_slice_replicas",
        "gpu_price",
    ]
    readonly_fields = ["gpu_price"]

    @admin.display(description="GPU price")
    def gpu_price(self, obj: NodePool) -> str:
        return _gpu_price_text(obj)

    list_filter = ["cluster", "gpu_model", "sharing_mode"]
    search_fields = ["name", "cluster__name", "gpu_model__name"]
    list_select_related = ["cluster", "gpu_model"]


@admin.register(Quota)
class QuotaAdmin(AuditedAdminMixin, admin.ModelAdmin):
    list_display = ["team", "resource_name", "limit", "borrowing_limit", "lending_limit", "cluster", "node_pool"]
    list_filter = ["team", "cluster", "resource_name"]
    search_fields = ["team__name", "team__slug", "resource_name"]
    list_select_related = ["team", "cluster", "node_pool__cluster"]


class RequestEventInline(admin.TabularInline):
    model = RequestEvent
    extra = 0
    can_delete = False
    fields = ["at", "actor_label", "from_status", "to_status", "comment"]
    readonly_fields = fields

    def has_add_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return False


@admin.register(GpuRequest)
class GpuRequestAdmin(AuditedAdminMixin, admin.ModelAdmin):
    list_display = [
        "id",
        "name",
        "team",
        "requester",
        "workload_type",
        "sla_tier",
        "resource_name",
        "resource_units",
        "status",
        "created_at",
    ]
    list_filter = ["status", "team", "sla_tier", "workload_type", "cluster"]
    search_fields = ["name", "purpose", "requester__username", "team__name", "team__slug"]
    list_select_related = ["team", "requester", "sla_tier"]
    date_hierarchy = "created_at"
    inlines = [RequestEventInline]
    # Status only changes through the lifecycle services, which write the event log.
    readonly_fields = [
        "status",
        "status_detail",
        "spec",
        "resource_name",
        "resource_units",
        "last_task_id",
        "created_at",
        "updated_at",
        "submitted_at",
        "approved_at",
        "activated_at",
        "ended_at",
    ]
    autocomplete_fields = ["team", "requester"]
    actions = ["reapply_to_cluster", "release_requests"]

    def has_approve_permission(self, request: HttpRequest) -> bool:
        return user_is_approver(request.user)

    def _each(
        self, request: HttpRequest, queryset: QuerySet[GpuRequest], service: Callable[..., GpuRequest], done: str
    ) -> None:
        """Run a lifecycle service on each selected request on its own, with one message per request."""
        for gpu_request in queryset.select_related("team", "node_pool").order_by("pk"):
            label = f"#{gpu_request.pk} {gpu_request.name}"
            try:
                service(request=gpu_request, acting_user=request.user, comment=f"{done.capitalize()} from the admin")
            except (PermissionDenied, ValidationError, InvalidTransition) as exc:
                self.message_user(request, f"{label}: not {done}: {_reason(exc)}", messages.ERROR)
                continue
            gpu_request.refresh_from_db(fields=["status", "status_detail"])
            now = gpu_request.get_status_display().lower()
            if gpu_request.status == "failed":
                self.message_user(
                    request, f"{label}: {done}, but it failed: {gpu_request.status_detail}", messages.ERROR
                )
            else:
                self.message_user(request, f"{label}: {done}; now {now}.", messages.SUCCESS)

    @admin.action(description="Re-apply to the cluster (failed or active requests)", permissions=["approve"])
    def reapply_to_cluster(self, request: HttpRequest, queryset: QuerySet[GpuRequest]) -> None:
        """Hand each request back to provisioning through ``gpu_request_reapply`` (quota re-checked when failed)."""
        self._each(request, queryset, gpu_request_reapply, "re-applied")

    @admin.action(description="Release (give the GPUs back)", permissions=["approve"])
    def release_requests(self, request: HttpRequest, queryset: QuerySet[GpuRequest]) -> None:
        """Release each request through ``gpu_request_release``; its workload is deleted from the cluster."""
        self._each(request, queryset, gpu_request_release, "released")


@admin.register(RequestEvent)
class RequestEventAdmin(admin.ModelAdmin):
    list_display = ["request", "at", "actor_label", "from_status", "to_status", "comment"]
    list_filter = ["to_status", "from_status"]
    search_fields = ["request__name", "actor_label", "comment"]
    list_select_related = ["request"]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return False


@admin.register(AllocationExtension)
class AllocationExtensionAdmin(admin.ModelAdmin):
    list_display = ["request", "hours", "status", "requested_by", "decided_by", "created_at", "decided_at"]
    list_filter = ["status"]
    search_fields = ["request__name", "reason", "requested_by__username", "decision_comment"]
    list_select_related = ["request", "requested_by", "decided_by"]
    # Decisions go through the approval queue (services: permissions, expiry update, event, email), not a form.
    readonly_fields = [
        "request",
        "requested_by",
        "hours",
        "reason",
        "status",
        "decided_by",
        "decided_at",
        "decision_comment",
        "created_at",
    ]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False


# Registered on import: the admin pages of templates and quota increase requests.
from allocations import admin_presets  # noqa: E402, F401
