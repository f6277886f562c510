"""Builders for the manifest tests: contexts for every workload type x strategy x GPU family, and object checks."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import kubernetes_validate

from gpucore.catalog import BUILTIN_CATALOG, GpuModelSpec
from gpucore.manifests import PoolContext, TeamContext, WorkloadContext
from gpucore.manifests.naming import is_dns_label, is_dns_subdomain, is_label_key, is_label_value
from gpucore.sla import DEFAULT_TIERS_BY_SLUG, SlaTierSpec
from tests.gpucore.manifests.kueue_validation import SCHEMA_DIRS, validate_kueue

KUBERNETES_VERSION = "1.30.0"
# The oldest and a recent release the rendered objects must be valid in.
KUBERNETES_VERSIONS = (KUBERNETES_VERSION, "1.33.0")
# The shared reference folder sits beside the repository root (/work/main -> /work/shared).
SHARED_DIR = Path(__file__).resolve().parents[3].parent / "shared"
FAMILIES = ("A100-40GB", "A100-80GB", "H100-80GB", "H200", "A30", "L4", "T4", "V100-32GB")
WORKLOAD_TYPES = ("training", "batch_inference", "realtime_inference", "development", "hpc_simulation")
STRATEGIES = ("dedicated", "mig", "time-slicing")
TIME_SLICE_REPLICAS = 4
REPLICAS = {"training": 2, "batch_inference": 3, "realtime_inference": 2, "development": 1, "hpc_simulation": 2}

TIER1 = DEFAULT_TIERS_BY_SLUG["tier1_realtime"]
TIER2 = DEFAULT_TIERS_BY_SLUG["tier2_batch"]
TIER3 = DEFAULT_TIERS_BY_SLUG["tier3_development"]


def validate(obj: Mapping[str, Any], versions: tuple[str, ...] = KUBERNETES_VERSIONS) -> None:
    """Validate against the Kubernetes 1.30 and 1.33 OpenAPI schemas (or ``versions``), strictly (a CRD kind against
    its CRD's schema, a JobSet's Job template also as a batch/v1 Job); fail with a short, readable message."""
    if obj.get("apiVersion") in SCHEMA_DIRS:
        validate_kueue(obj)
        if obj["kind"] == "JobSet":
            for replicated in obj["spec"]["replicatedJobs"]:
                meta = {"name": f"{obj['metadata']['name']}-{replicated['name']}-0", "namespace": "x"}
                job = {"apiVersion": "batch/v1", "kind": "Job", "metadata": meta, **replicated["template"]}
                validate(job, versions)
        return
    for version in versions:
        try:
            kubernetes_validate.validate(dict(obj), version, strict=True)
        except kubernetes_validate.ValidationError as error:
            path = "/".join(str(p) for p in error.path)
            name = obj.get("metadata", {}).get("name")
            raise AssertionError(
                f"{obj.get('kind')} {name} (Kubernetes {version}): {error.message} at {path}"
            ) from None


def check_names_and_labels(obj: Mapping[str, Any]) -> None:
    """What the schema does not check: object names, label keys and values, annotation keys."""
    meta = obj["metadata"]
    kind = obj["kind"]
    if kind in ("Namespace", "Service"):
        assert is_dns_label(meta["name"]), meta["name"]
    else:
        assert is_dns_subdomain(meta["name"]), meta["name"]
    if "namespace" in meta:
        assert is_dns_label(meta["namespace"])
    for key, value in meta.get("labels", {}).items():
        assert is_label_key(key), key
        assert is_label_value(value), (key, value)
    for key, value in meta.get("annotations", {}).items():
        assert is_label_key(key), key
        assert isinstance(value, str), (key, value)


def team(quotas: Mapping[str, int] | None = None) -> TeamContext:
    """The team every case renders for."""
    return TeamContext(
        slug="vision",
        namespace="team-vision",
        quotas=quotas if quotas is not None else {"nvidia.com/gpu": 16},
    )


def mig_profile_for(model: GpuModelSpec) -> str:
    """A mid-sized MIG profile of a model: the second recommendable one (2g.10gb on A100-40GB, 2g.12gb on A30)."""
    return model.recommendable_profiles()[1].name


def pool_for(model: GpuModelSpec, strategy: str) -> PoolContext:
    """A pool of a model sharing its GPUs the way a strategy needs."""
    common = {
        "gpu_model": model.name,
        "product_label": model.product_label,
        "node_labels": {"gpu-portal/pool": f"{model.name.lower()}-{strategy}"},
        "taints": [{"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}],
    }
    if strategy == "dedicated":
        return PoolContext(name=f"{model.name.lower()}-whole", **common)
    if strategy == "mig":
        profile = model.profile(mig_profile_for(model))
        return PoolContext(
            name=f"{model.name.lower()}-mig",
            sharing_mode="mig",
            mig_devices={profile.name: profile.max_instances},
            **common,
        )
    return PoolContext(
        name=f"{model.name.lower()}-ts",
        sharing_mode="time-slicing",
        time_slice_replicas=TIME_SLICE_REPLICAS,
        **common,
    )


def spec_for(model: GpuModelSpec, strategy: str, workload_type: str, /, **overrides: Any) -> dict[str, Any]:
    """A frozen Recommendation as the decision framework would write it."""
    spec: dict[str, Any] = {
        "strategy": strategy,
        "resource_name": "nvidia.com/gpu",
        "quantity": 1,
        "replicas": REPLICAS.get(workload_type, 1),
        "gpu_model": model.name,
        "mig_profile": None,
        "time_slice_replicas": None,
        "node_selector": dict(model.node_selector),
        "topology_aware": workload_type == "hpc_simulation",
        "rationale": ["not read by the renderer"],
    }
    if strategy == "dedicated" and workload_type in ("training", "hpc_simulation"):
        spec["quantity"] = 2
    if strategy == "mig":
        spec["mig_profile"] = mig_profile_for(model)
        spec["resource_name"] = f"nvidia.com/mig-{spec['mig_profile']}"
    if strategy == "time-slicing":
        spec["time_slice_replicas"] = TIME_SLICE_REPLICAS
    spec.update(overrides)
    return spec


def tier_for(strategy: str, workload_type: str) -> SlaTierSpec:
    """The highest tier whose isolation floor a strategy meets (tier 1 only for real-time serving)."""
    if strategy == "dedicated":
        return TIER1 if workload_type == "realtime_inference" else TIER2
    return TIER2 if strategy == "mig" else TIER3


def context(
    model_name: str = "A100-40GB",
    strategy: str = "dedicated",
    workload_type: str = "training",
    *,
    with_pool: bool = True,
    spec: Mapping[str, Any] | None = None,
    **overrides: Any,
) -> WorkloadContext:
    """A request context for one case; keyword overrides replace WorkloadContext fields."""
    model = BUILTIN_CATALOG.get(model_name)
    spec = spec if spec is not None else spec_for(model, strategy, workload_type)
    quotas = {"nvidia.com/gpu": 16}
    if spec["resource_name"] != "nvidia.com/gpu":
        quotas[spec["resource_name"]] = 14
    fields: dict[str, Any] = {
        "request_id": 42,
        "name": "Fine-tune ResNet (run 3)",
        "workload_type": workload_type,
        "image": "registry.example.com/ml/pytorch:2.4-cuda12",
        "command": ["python", "train.py"],
        "spec": spec,
        "team": team(quotas),
        "tier": tier_for(strategy, workload_type),
        "pool": pool_for(model, strategy) if with_pool else None,
        "duration_hours": 24,
    }
    fields.update(overrides)
    return WorkloadContext(**fields)


@dataclass(frozen=True)
class Case:
    """One cell of the matrix."""

    model: str
    strategy: str
    workload_type: str

    @property
    def id(self) -> str:
        return f"{self.model}-{self.strategy}-{self.workload_type}"


def matrix() -> Iterator[Case]:
    """Every workload type x strategy x GPU family where the strategy applies (MIG only on MIG-capable models)."""
    for model_name in FAMILIES:
        model = BUILTIN_CATALOG.get(model_name)
        for strategy in STRATEGIES:
            if strategy == "mig" and not model.mig_capable:
                continue
            for workload_type in WORKLOAD_TYPES:
                yield Case(model_name, strategy, workload_type)


def by_kind(objects: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    """The objects of one kind."""
    return [obj for obj in objects if obj["kind"] == kind]


def workload(objects: list[dict[str, Any]]) -> dict[str, Any]:
    """The one Job, JobSet or Deployment among rendered objects."""
    (found,) = [obj for obj in objects if obj["kind"] in ("Job", "JobSet", "Deployment")]
    return found


def job_spec(obj: Mapping[str, Any]) -> dict[str, Any]:
    """The Job spec of a Job, or of a JobSet's one replicated job."""
    if obj["kind"] == "JobSet":
        (replicated,) = obj["spec"]["replicatedJobs"]
        return replicated["template"]["spec"]
    return dict(obj["spec"])


def pod_template(obj: Mapping[str, Any]) -> dict[str, Any]:
    """The pod template of a Deployment, a Job or a JobSet."""
    return job_spec(obj)["template"] if obj["kind"] in ("Job", "JobSet") else obj["spec"]["template"]


def main_container(obj: Mapping[str, Any]) -> dict[str, Any]:
    """The single container of a workload's pod template."""
    (container,) = pod_template(obj)["spec"]["containers"]
    return container
