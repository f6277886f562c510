"""What the manifest renderer is given: frozen contexts and the parsed Recommendation (names, labels: ``naming``).

Pure: no Django, no Kubernetes client. The Django side builds these from ``Team``, ``NodePool``, ``SlaTier`` and
``GpuRequest`` rows; everything here validates what Kubernetes or the NVIDIA components would refuse later, so a
bad input fails at render time with a message that names the field.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from types import MappingProxyType
from typing import Any

from gpucore.catalog import mig_profile_of_resource
from gpucore.manifests.naming import (
    DEVICE_APIS,
    GPU_RESOURCE,
    SHARED_GPU_RESOURCE,
    TAINT_EFFECTS,
    WORKLOAD_TYPES,
    ManifestError,
    check_labels,
    is_dns_label,
    is_dns_subdomain,
    is_extended_resource,
    is_int,
    is_label_key,
    is_label_value,
)
from gpucore.sla import SlaTierSpec
from gpucore.vocabulary import SharingMode, Strategy

_ENV_NAME = re.compile(r"^[-._a-zA-Z][-._a-zA-Z0-9]*$")


def _frozen_mapping(value: Mapping[str, Any] | None, what: str) -> Mapping[str, Any]:
    if value is None:
        return MappingProxyType({})
    if not isinstance(value, Mapping):
        raise ManifestError(f"{what} must be a mapping, not {type(value).__name__}.")
    return MappingProxyType(dict(value))


@dataclass(frozen=True, slots=True)
class Taint:
    """A node taint of a pool, which the pool's workloads must tolerate."""

    key: str
    value: str | None = None
    effect: str = "NoSchedule"

    def __post_init__(self) -> None:
        if not is_label_key(self.key):
            raise ManifestError(f"Taint key '{self.key}' is not a valid key.")
        if self.value is not None and not is_label_value(self.value):
            raise ManifestError(f"Taint value '{self.value}' (for '{self.key}') is not a valid value.")
        if self.effect not in TAINT_EFFECTS:
            raise ManifestError(f"Taint effect '{self.effect}' is not one of {', '.join(TAINT_EFFECTS)}.")

    @classmethod
    def from_mapping(cls, data: Mapping[str, Any]) -> Taint:
        """Build a taint from ``{"key", "value", "effect"}`` as ``NodePool.taints`` stores it."""
        return cls(key=data["key"], value=data.get("value") or None, effect=data.get("effect") or "NoSchedule")


@dataclass(frozen=True, slots=True)
class TeamContext:
    """A team as its namespace needs it: slug, namespace, quotas keyed by Kubernetes resource name."""

    slug: str
    namespace: str
    quotas: Mapping[str, int] = field(default_factory=dict)
    # All GPUs of a container sit on one node (guide 003, "Multi-GPU Workloads"); 8 is the largest GPU count per
    # node in the catalog's HGX/DGX-class servers, so a container asking for more could never be scheduled.
    max_gpus_per_container: int = 8
    # The team's Kueue ClusterQueue when its cluster runs Kueue: the namespace gets a LocalQueue ``default`` pointing
    # at it and every Job carries ``kueue.x-k8s.io/queue-name: default`` (docs/kubernetes-and-kueue.md).
    cluster_queue: str | None = None
    # The team's KAI Scheduler leaf queue when its cluster runs KAI: every pod carries ``schedulerName:
    # kai-scheduler`` and ``kai.scheduler/queue: <queue>`` (docs/dra-and-kai.md).
    kai_queue: str | None = None
    # Units per resource a preemptible request may borrow beyond the nominal quota (Kueue's ``borrowingLimit``): the
    # portal admits such a request, so the namespace's ResourceQuota must let its pods in too.
    borrowing: Mapping[str, int] = field(default_factory=dict)
    # TCP ports pods may reach anywhere besides DNS and their own namespace (the cluster's setting): HTTPS by default,
    # for model and package downloads; empty: none.
    egress_tcp_ports: Sequence[int] = (443,)

    def __post_init__(self) -> None:
        if not is_label_value(self.slug) or not self.slug:
            raise ManifestError(f"Team slug '{self.slug}' cannot be a label value.")
        if not is_dns_label(self.namespace):
            raise ManifestError(f"Namespace '{self.namespace}' is not a DNS label.")
        quotas = _frozen_mapping(self.quotas, "Team quotas")
        for resource, amount in quotas.items():
            # Quotas are whole units of extended resources (GPU quotas); CPU and memory would need units.
            if not is_extended_resource(resource):
                raise ManifestError(f"Quota resource '{resource}' is not an extended resource like 'nvidia.com/gpu'.")
            if not is_int(amount) or amount < 0:
                raise ManifestError(f"Quota for '{resource}' must be a whole number >= 0, not {amount!r}.")
        borrowing = _frozen_mapping(self.borrowing, "Team borrowing limits")
        for resource, amount in borrowing.items():
            if resource not in quotas:
                raise ManifestError(f"Borrowing limit for '{resource}' without a quota for it.")
            if not is_int(amount) or amount < 0:
                raise ManifestError(f"Borrowing limit for '{resource}' must be a whole number >= 0, not {amount!r}.")
        object.__setattr__(self, "borrowing", borrowing)
        ports = tuple(self.egress_tcp_ports)
        if not all(is_int(port) and 1 <= port <= 65535 for port in ports):
            raise ManifestError(f"Egress TCP ports must be whole numbers 1-65535, not {list(ports)!r}.")
        object.__setattr__(self, "egress_tcp_ports", tuple(sorted(set(ports))))
        if not is_int(self.max_gpus_per_container) or self.max_gpus_per_container < 1:
            raise ManifestError("max_gpus_per_container must be a whole number >= 1.")
        if self.cluster_queue is not None and not is_dns_subdomain(self.cluster_queue):
            raise ManifestError(f"ClusterQueue name '{self.cluster_queue}' is not a DNS subdomain.")
        if self.kai_queue is not None and not (is_dns_subdomain(self.kai_queue) and is_label_value(self.kai_queue)):
            raise ManifestError(f"KAI queue name '{self.kai_queue}' is not a DNS subdomain.")
        if self.kai_queue is not None and self.cluster_queue is not None:
            raise ManifestError("A team's cluster runs Kueue or KAI, not both.")
        object.__setattr__(self, "quotas", quotas)

    def ceiling(self, resource: str) -> int | None:
        """The most units of ``resource`` the team may hold at once: nominal plus borrowing (``None``: no quota)."""
        quota = self.quotas.get(resource)
        return None if quota is None else quota + self.borrowing.get(resource, 0)


@dataclass(frozen=True, slots=True, kw_only=True)
class PoolContext:
    """A node pool: its GPU model, how its GPUs are shared, and the labels and taints of its nodes."""

    name: str
    gpu_model: str
    product_label: str
    sharing_mode: SharingMode | str = SharingMode.NONE
    time_slice_replicas: int | None = None
    node_labels: Mapping[str, str] = field(default_factory=dict)
    taints: Sequence[Taint | Mapping[str, Any]] = ()
    mig_devices: Mapping[str, int] = field(default_factory=dict)
    # The per-GPU layouts MIG plans rolled out on the pool's nodes, the most used first: they serve profiles the
    # configured layout lacks, and scale those instances' GPU share.
    live_mig_layouts: Sequence[Mapping[str, int]] = ()
    # renameByDefault of the device plugin: shared GPUs are advertised as nvidia.com/gpu.shared and GFD leaves the
    # product label alone (docs/reference-sources.md#time-slicing).
    rename_by_default: bool = False
    # The node label naming the pool's network domain (rack or block) for Kueue's topology-aware scheduling, e.g.
    # ``cloud.google.com/gce-topology-block``; a distributed job then asks for one domain of it: required (wait
    # until one domain fits the gang) or preferred (one domain if possible). None: no topology.
    topology_level: str | None = None
    topology_required: bool = False

    def __post_init__(self) -> None:
        if self.topology_level is not None and not is_label_key(self.topology_level):
            raise ManifestError(f"Pool '{self.name}': topology level '{self.topology_level}' is not a node label key.")
        # The pool name becomes a ConfigMap key and a node label value (nvidia.com/device-plugin.config).
        if not is_dns_label(self.name):
            raise ManifestError(f"Pool name '{self.name}' is not a DNS label.")
        if not is_label_value(self.product_label) or not self.product_label:
            raise ManifestError(f"Product label '{self.product_label}' is not a valid label value.")
        try:
            mode = SharingMode(self.sharing_mode)
        except ValueError:
            raise ManifestError(f"Unknown sharing mode '{self.sharing_mode}'.") from None
        object.__setattr__(self, "sharing_mode", mode)
        labels = _frozen_mapping(self.node_labels, "Pool node labels")
        check_labels(labels, f"Pool '{self.name}' node labels")
        object.__setattr__(self, "node_labels", labels)
        taints = tuple(t if isinstance(t, Taint) else Taint.from_mapping(t) for t in self.taints)
        object.__setattr__(self, "taints", taints)
        devices = _frozen_mapping(self.mig_devices, "MIG devices")
        object.__setattr__(self, "mig_devices", devices)
        live = tuple(_frozen_mapping(layout, "MIG layouts") for layout in self.live_mig_layouts)
        object.__setattr__(self, "live_mig_layouts", live)

        replicas = self.time_slice_replicas
        if mode is SharingMode.TIME_SLICING:
            # The device plugin's own check and message (docs/reference-sources.md#time-slicing).
            if not is_int(replicas) or replicas < 2:
                raise ManifestError(
                    f"Pool '{self.name}': number of replicas must be >= 2 (time_slice_replicas={replicas!r})."
                )
        elif replicas is not None:
            raise ManifestError(f"Pool '{self.name}': only time-slicing pools have time_slice_replicas.")
        if mode is SharingMode.MIG and not devices:
            raise ManifestError(f"Pool '{self.name}': a MIG pool needs its MIG devices per GPU, e.g. {{'3g.20gb': 2}}.")
        if mode is not SharingMode.MIG and devices:
            raise ManifestError(f"Pool '{self.name}': only MIG pools have MIG devices.")

    def mig_layout_holding(self, profile: str | None) -> Mapping[str, int] | None:
        """The per-GPU layout an instance of ``profile`` sits in: the configured one, else the first rolled out."""
        if profile is None:
            return None
        if profile in self.mig_devices:
            return self.mig_devices
        return next((layout for layout in self.live_mig_layouts if layout.get(profile)), None)


@dataclass(frozen=True, slots=True)
class AllocationSpec:
    """The allocation part of a frozen recommendation (docs/api.md, "Recommendations"), checked for consistency."""

    strategy: Strategy
    resource_name: str
    quantity: int
    replicas: int
    gpu_model: str
    mig_profile: str | None = None
    time_slice_replicas: int | None = None
    node_selector: Mapping[str, str] = field(default_factory=dict)
    # Optional in a frozen recommendation: None (absent) lets the renderer decide by workload type.
    topology_aware: bool | None = None

    @classmethod
    def from_mapping(cls, spec: Mapping[str, Any]) -> AllocationSpec:
        """Parse the Recommendation JSON frozen on a request; fields the renderer does not need are ignored."""
        if not isinstance(spec, Mapping):
            raise ManifestError("The request spec must be a mapping (the frozen Recommendation).")
        missing = [k for k in ("strategy", "resource_name", "quantity", "gpu_model") if spec.get(k) in (None, "")]
        if missing:
            raise ManifestError(f"The request spec lacks {', '.join(missing)}.")
        return cls(
            strategy=spec["strategy"],
            resource_name=spec["resource_name"],
            quantity=spec["quantity"],
            replicas=spec.get("replicas", 1),
            gpu_model=spec["gpu_model"],
            mig_profile=spec.get("mig_profile") or None,
            time_slice_replicas=spec.get("time_slice_replicas"),
            node_selector=spec.get("node_selector") or {},
            topology_aware=None if spec.get("topology_aware") is None else bool(spec["topology_aware"]),
        )

    def __post_init__(self) -> None:
        try:
            object.__setattr__(self, "strategy", Strategy(self.strategy))
        except ValueError:
            raise ManifestError(f"Unknown strategy '{self.strategy}'.") from None
        for name in ("quantity", "replicas"):
            value = getattr(self, name)
            if not is_int(value) or value < 1:
                raise ManifestError(f"spec.{name} must be a whole number >= 1, not {value!r}.")
        selector = _frozen_mapping(self.node_selector, "spec.node_selector")
        check_labels(selector, "spec.node_selector")
        object.__setattr__(self, "node_selector", selector)
        if self.strategy is Strategy.MIG:
            profile = mig_profile_of_resource(self.resource_name)
            if profile is None:
                raise ManifestError(f"A MIG allocation needs 'nvidia.com/mig-<profile>', not '{self.resource_name}'.")
            if self.mig_profile is None:
                object.__setattr__(self, "mig_profile", profile)
            elif profile != self.mig_profile:
                raise ManifestError(
                    f"resource_name '{self.resource_name}' disagrees with mig_profile '{self.mig_profile}'."
                )
        elif self.mig_profile is not None:
            raise ManifestError(f"Only MIG allocations have a mig_profile (strategy is {self.strategy}).")
        if self.strategy is Strategy.DEDICATED and self.resource_name != GPU_RESOURCE:
            raise ManifestError(f"A dedicated allocation uses '{GPU_RESOURCE}', not '{self.resource_name}'.")
        if self.strategy is Strategy.TIME_SLICING:
            if self.resource_name not in (GPU_RESOURCE, SHARED_GPU_RESOURCE):
                raise ManifestError(f"A time-sliced allocation uses '{GPU_RESOURCE}', not '{self.resource_name}'.")
            replicas = self.time_slice_replicas
            if not is_int(replicas) or replicas < 2:
                raise ManifestError(f"spec.time_slice_replicas: number of replicas must be >= 2, not {replicas!r}.")
        elif self.time_slice_replicas is not None:
            raise ManifestError(f"Only time-sliced allocations have time_slice_replicas (strategy is {self.strategy}).")


@dataclass(frozen=True, slots=True, kw_only=True)
class WorkloadContext:
    """Everything one GPU request renders from: the frozen spec, the team, the SLA tier and the target pool."""

    request_id: int
    name: str
    workload_type: str
    image: str
    spec: Mapping[str, Any]
    team: TeamContext
    command: Sequence[str] = ()
    args: Sequence[str] = ()
    env: Mapping[str, str] = field(default_factory=dict)
    duration_hours: float | Decimal | None = None
    tier: SlaTierSpec | None = None
    pool: PoolContext | None = None
    # Serving port and HTTP probe paths of real-time inference. The defaults are Triton's (the default inference
    # image, nvcr.io/nvidia/tritonserver, serves HTTP on 8000 with /v2/health/live and /v2/health/ready); None
    # probes the port over TCP instead, for an image whose health endpoints are not known.
    port: int = 8000
    health_path: str | None = "/v2/health/live"
    readiness_path: str | None = "/v2/health/ready"
    # Namespaces (by a label selector) whose pods may call a real-time inference Service: the ingress controller and
    # callers in other namespaces. Empty: only the team's own namespace (the namespace's default policy).
    caller_namespace_selector: Mapping[str, str] = field(default_factory=dict)
    # torchrun's default rendezvous port (MASTER_PORT) for multi-replica training and HPC.
    rendezvous_port: int = 29500
    # How pods ask for GPUs on the cluster: device-plugin resources, or a DRA ResourceClaimTemplate (``dra``) whose
    # selectors use what the driver reports for the pool (``dra_target``, a ``dra.DraTarget``; None: the catalog's).
    device_api: str = "device-plugin"
    dra_target: Any = None
    # Dynamic MIG: the GPUs (the driver's uuids) the portal's policy chose for the request's MIG instances; the claim
    # selects a slice of one of them. Empty: any GPU the scheduler finds.
    dynamic_mig_gpus: Sequence[str] = ()
    # The replica's peak GPU memory (GiB, the request's gpu_memory_gb): inference gets at least as much host memory.
    model_memory_gib: Decimal | None = None
    allocation: AllocationSpec = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if not is_int(self.request_id) or self.request_id < 1:
            raise ManifestError(f"request_id must be a whole number >= 1, not {self.request_id!r}.")
        workload_type = str(self.workload_type)  # a StrEnum member renders as its value
        if workload_type not in WORKLOAD_TYPES:
            raise ManifestError(f"Unknown workload type '{workload_type}'. Known: {', '.join(WORKLOAD_TYPES)}.")
        object.__setattr__(self, "workload_type", workload_type)
        if not isinstance(self.image, str) or not self.image.strip():
            raise ManifestError("The workload needs a container image.")
        for what in ("command", "args"):
            value = getattr(self, what)
            if isinstance(value, str) or not all(isinstance(part, str) for part in value):
                raise ManifestError(f"{what} must be a list of strings, e.g. ['python', 'train.py'].")
            object.__setattr__(self, what, tuple(value))
        env = _frozen_mapping(self.env, "env")
        if not all(isinstance(k, str) and _ENV_NAME.match(k) and isinstance(v, str) for k, v in env.items()):
            raise ManifestError("env must map variable names (letters, digits, '_', '-', '.') to strings.")
        object.__setattr__(self, "env", env)
        if self.duration_hours is not None and not Decimal(str(self.duration_hours)) > 0:
            raise ManifestError(f"duration_hours must be > 0, not {self.duration_hours!r}.")
        for name in ("port", "rendezvous_port"):
            value = getattr(self, name)
            if not is_int(value) or not 1 <= value <= 65535:
                raise ManifestError(f"{name} must be 1-65535, not {value!r}.")
        for name in ("health_path", "readiness_path"):
            path = getattr(self, name)
            if path is not None and (not isinstance(path, str) or not path.startswith("/")):
                raise ManifestError(f"{name} must be an HTTP path starting with '/', not {path!r}.")
        callers = _frozen_mapping(self.caller_namespace_selector, "caller_namespace_selector")
        check_labels(callers, "caller_namespace_selector")
        object.__setattr__(self, "caller_namespace_selector", callers)
        object.__setattr__(self, "allocation", AllocationSpec.from_mapping(self.spec))
        if self.device_api not in DEVICE_APIS:
            raise ManifestError(f"Unknown device API '{self.device_api}': expected one of {', '.join(DEVICE_APIS)}.")

    @property
    def topology_aware(self) -> bool:
        """Whether the pod gets NUMA/topology hints: as the spec says, else for HPC (guide 000 §4.1 "+ Affinity")."""
        if self.allocation.topology_aware is not None:
            return self.allocation.topology_aware
        return self.workload_type == "hpc_simulation"
