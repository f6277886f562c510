"""Clusters GPU Portal deploys to, and their GPU node pools."""

from __future__ import annotations

from django.core.exceptions import ValidationError
from django.core.validators import MinValueValidator
from django.db import models

from allocations.choices import ClusterBackend, ClusterScheduler, DeviceApi, SharingMode
from allocations.models.catalog import GpuModel
from allocations.models.validators import dns_label_validator
from gpucore.catalog import mig_resource_name
from gpucore.manifests import ManifestError, check_mig_layout
from gpucore.manifests.gpu_operator import GPU_OPERATOR_NAMESPACE
from gpucore.manifests.naming import check_labels, is_int, is_label_key


def default_egress_tcp_ports() -> list[int]:
    """HTTPS only: model and package downloads."""
    return [443]


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
    prometheus_recording_rules = models.BooleanField(
        default=False,
        help_text=(
            "The cluster's Prometheus evaluates the portal's recording rules (in the cluster's PrometheusRule, or "
            "the rule file of docs/capacity-planning.md): the utilization and GPU health pulls read their stored "
            "minutes instead of evaluating subqueries, far cheaper at fleet size. Hours without them are read the old "
            "way."
        ),
    )
    scheduler = models.CharField(
        max_length=20,
        choices=ClusterScheduler.choices,
        default=ClusterScheduler.DEFAULT,
        help_text=(
            "Who admits GPU workloads: the default scheduler, Kueue with the portal's queues and quotas, or the KAI "
            "Scheduler with one queue per team."
        ),
    )
    device_api = models.CharField(
        max_length=20,
        choices=DeviceApi.choices,
        default=DeviceApi.DEVICE_PLUGIN,
        help_text=(
            "How pods ask for GPUs: device-plugin resources, or DRA ResourceClaimTemplates (Kubernetes 1.34+ with "
            "NVIDIA's DRA driver)."
        ),
    )
    monitoring_namespace = models.CharField(
        max_length=63,
        blank=True,
        validators=[dns_label_validator],
        help_text=(
            "Namespace of the GPU alert PrometheusRule and the dcgm-exporter ServiceMonitor among the cluster's "
            "objects (needs the Prometheus Operator), e.g. gpu-operator. Blank: not rendered."
        ),
    )
    monitoring_labels = models.JSONField(
        default=dict,
        blank=True,
        help_text=(
            "Extra labels on the PrometheusRule and ServiceMonitor, for the Prometheus Operator's selectors; a "
            'default kube-prometheus-stack selects its Helm release, e.g. {"release": "kube-prometheus-stack"}.'
        ),
    )
    gpu_operator_namespace = models.CharField(
        max_length=63,
        default=GPU_OPERATOR_NAMESPACE,
        validators=[dns_label_validator],
        help_text="Namespace the GPU Operator runs in and reads its ConfigMaps from (OpenShift: nvidia-gpu-operator).",
    )
    egress_tcp_ports = models.JSONField(
        default=default_egress_tcp_ports,
        blank=True,
        help_text=(
            "TCP ports team pods may reach outside their namespace besides DNS, e.g. [443] for model downloads. "
            "Empty: none."
        ),
    )
    is_active = models.BooleanField(default=True)
    inventory_error = models.TextField(
        blank=True, help_text="Why the last inventory sync failed; empty once a sync succeeds."
    )
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
        labels = self.monitoring_labels
        if not isinstance(labels, dict):
            raise ValidationError({"monitoring_labels": 'Give labels as an object, e.g. {"release": "kps"}.'})
        try:
            check_labels(labels, "monitoring_labels")
        except ManifestError as error:
            raise ValidationError({"monitoring_labels": str(error)}) from None
        ports = self.egress_tcp_ports
        if not isinstance(ports, list) or not all(is_int(p) and 1 <= p <= 65535 for p in ports):
            raise ValidationError({"egress_tcp_ports": "Give a list of TCP ports 1-65535, e.g. [443]."})
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
    rename_by_default = models.BooleanField(
        default=False,
        help_text=(
            "Time-slicing: advertise shares as nvidia.com/gpu.shared (the device plugin's renameByDefault), so "
            "quotas count shares apart from whole GPUs."
        ),
    )
    mig_devices = models.JSONField(
        default=dict, blank=True, help_text='MIG layout per GPU (MIG pools), e.g. {"1g.5gb": 2, "2g.10gb": 1}.'
    )
    # What the GPUs of nodes reconfigured by MIG plans run (written by the rollout and inventory sync):
    # [{"layout": {"7g.40gb": 1}, "gpus": 2}, ...]; the pool's other GPUs run ``mig_devices``.
    live_mig_layouts = models.JSONField(
        default=list, blank=True, help_text="Per-GPU MIG layouts of nodes reconfigured by MIG plans, with GPU counts."
    )
    node_labels = models.JSONField(default=dict, blank=True)
    topology_level = models.CharField(
        max_length=316,
        blank=True,
        help_text=(
            "Node label of the pool's network domain (rack or block) for Kueue's topology-aware scheduling, e.g. "
            "cloud.google.com/gce-topology-block: a multi-pod training or HPC gang asks for one domain. Blank: none."
        ),
    )
    dynamic_mig = models.BooleanField(
        default=False,
        help_text=(
            "DRA clusters whose NVIDIA driver runs its DynamicMIG feature (alpha upstream): no static layout is "
            "rolled out; the MIG planner's rule chooses the GPU for each new instance. Off by default."
        ),
    )
    topology_required = models.BooleanField(
        default=False,
        help_text="Wait until one topology domain fits the whole gang (otherwise one domain is preferred).",
    )
    taints = models.JSONField(
        default=list,
        blank=True,
        help_text='e.g. [{"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}]',
    )
    # Filled by inventory sync from the cluster (allocatable per resource name).
    observed_allocatable = models.JSONField(default=dict, blank=True)
    observed_at = models.DateTimeField(null=True, blank=True)
    # On a DRA cluster: what NVIDIA's DRA driver publishes for the pool's GPUs (ResourceSlices), read by inventory
    # sync: {"target": {product_name, memory_bytes, profile_memory_bytes}, "devices": {"gpu": n, "mig-1g.5gb": m}}.
    observed_dra = models.JSONField(default=dict, blank=True)
    # Filled by inventory sync: how the nodes' GPU Feature Discovery labels disagree with this configuration
    # ([{"problem", "fix", "nodes"}], gpucore.gfd_labels); approvals onto the pool are refused while any is listed.
    node_problems = models.JSONField(default=list, blank=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["cluster", "name"], name="unique_pool_per_cluster")]
        ordering = ["cluster__name", "name"]

    def __str__(self) -> str:
        return f"{self.cluster.name}/{self.name}"

    @property
    def gpu_total(self) -> int:
        return self.node_count * self.gpus_per_node

    def mig_gpu_layouts(self) -> list[tuple[dict[str, int], int]]:
        """Each per-GPU MIG layout the pool's GPUs run and on how many GPUs: those MIG plans rolled out, the
        configured layout on the rest."""
        live = [(dict(row["layout"]), int(row["gpus"])) for row in self.live_mig_layouts or []]
        rest = max(0, self.gpu_total - sum(gpus for _layout, gpus in live))
        return live + ([(dict(self.mig_devices), rest)] if self.mig_devices and rest else [])

    def mig_profiles(self) -> list[str]:
        """The MIG profiles the pool serves: its configured layout's, then those plans rolled out on its nodes (a
        profile the configured layout lacks is still offered, so its demand reaches the next plan)."""
        profiles = dict.fromkeys(self.mig_devices or {})
        for layout, _gpus in self.mig_gpu_layouts():
            profiles.update(dict.fromkeys(name for name, count in layout.items() if count))
        return list(profiles)

    def mig_layout_holding(self, profile: str | None) -> dict[str, int] | None:
        """The per-GPU layout an instance of ``profile`` sits in, which scales its GPU share: the configured one when
        it holds the profile, else the rolled-out one most GPUs run."""
        if profile in (self.mig_devices or {}):
            return dict(self.mig_devices)
        live = [(int(row["gpus"]), dict(row["layout"])) for row in self.live_mig_layouts or []]
        holding = [(gpus, layout) for gpus, layout in live if layout.get(profile or "")]
        return max(holding, key=lambda item: item[0])[1] if holding else None

    def capacity(self) -> dict[str, int]:
        """Schedulable units per resource name that this pool advertises: its configuration, with the layouts MIG
        plans rolled out on its nodes in place of the configured one there."""
        if self.sharing_mode == SharingMode.MIG:
            totals = dict.fromkeys(self.mig_profiles(), 0)
            for layout, gpus in self.mig_gpu_layouts():
                for name, count in layout.items():
                    totals[name] = totals.get(name, 0) + count * gpus
            return {mig_resource_name(name): count for name, count in totals.items()}
        if self.sharing_mode == SharingMode.TIME_SLICING:
            return {self.shared_resource_name: self.gpu_total * (self.time_slice_replicas or 0)}
        return {"nvidia.com/gpu": self.gpu_total}

    @property
    def shared_resource_name(self) -> str:
        """The resource a time-sliced share is requested as: ``nvidia.com/gpu.shared`` when renamed."""
        return "nvidia.com/gpu.shared" if self.rename_by_default else "nvidia.com/gpu"

    def clean(self) -> None:
        errors: dict[str, str] = {}
        if self.rename_by_default and self.sharing_mode != SharingMode.TIME_SLICING:
            errors["rename_by_default"] = "Only time-slicing pools rename their shares."
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
        if self.topology_level and not is_label_key(self.topology_level):
            errors["topology_level"] = "Give a node label key, e.g. cloud.google.com/gce-topology-block."
        if self.dynamic_mig and self.sharing_mode != SharingMode.MIG:
            errors["dynamic_mig"] = "Only a MIG pool can create its instances dynamically."
        if self.topology_required and not self.topology_level:
            errors["topology_required"] = "Only a pool with a topology level can require one domain."
        if not isinstance(self.taints, list) or not all(isinstance(t, dict) and "key" in t for t in self.taints):
            errors["taints"] = 'Taints must be a list of {"key", "value", "effect"} objects.'
        if errors:
            raise ValidationError(errors)

    def _mig_errors(self) -> dict[str, str]:
        # The same geometry check the renderer applies (names, counts, memory and compute slices, placements).
        model = getattr(self, "gpu_model", None)
        if model is None:
            return {}
        if not model.mig_capable:
            return {"sharing_mode": f"{model.name} is not MIG-capable."}
        if not isinstance(self.mig_devices, dict) or not self.mig_devices:
            return {"mig_devices": 'A MIG pool needs its layout per GPU, e.g. {"3g.20gb": 2}.'}
        try:
            check_mig_layout(model.to_spec(), self.mig_devices)
        except ManifestError as exc:
            return {"mig_devices": str(exc)}
        return {}
