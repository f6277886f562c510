"""The manifest renderer: every object validates against Kubernetes 1.30, and the GPU-specific rules hold."""

from __future__ import annotations

import json
import subprocess
import sys
from decimal import Decimal
from enum import StrEnum
from pathlib import Path

import pytest
import yaml

from allocations.decision.catalog import BUILTIN_CATALOG, GpuModelSpec, MigProfile
from allocations.decision.sla import DEFAULT_TIERS
from allocations.manifests import (
    ManifestError,
    PoolContext,
    TeamContext,
    check_mig_layout,
    is_request_owned,
    mig_config_name,
    object_key,
    pool_node_labels,
    render_limit_range,
    render_mig_parted_configmap,
    render_priority_classes,
    render_request_objects,
    render_resource_quota,
    render_team_objects,
    render_time_slicing_configmap,
    render_workload_objects,
    time_slicing_config,
    to_yaml,
    validate_device_plugin_config,
)
from allocations.manifests.gpu_operator import (
    validate_replica_devices,
    validate_replicated_resource,
    validate_replicated_resources,
)
from allocations.manifests.sizing import size_container
from tests.allocations import manifest_cases as mc

CASES = list(mc.matrix())
REPO_ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def shared_dir() -> Path:
    # The reference data is part of the task's inputs: a missing folder is a failure, not a skip.
    if not mc.SHARED_DIR.is_dir():
        pytest.fail(f"The shared reference folder is missing: {mc.SHARED_DIR}")
    return mc.SHARED_DIR


def _limit_range_max(objects: list[dict]) -> dict[str, str]:
    (limit_range,) = mc.by_kind(objects, "LimitRange")
    (item,) = limit_range["spec"]["limits"]
    return item["max"]


def _quantity(value: str) -> Decimal:
    """Parse the quantities the renderer writes: '8', '1500m', '16Gi', '4352Mi'."""
    for suffix, factor in (("m", Decimal("0.001")), ("Gi", Decimal(1024)), ("Mi", Decimal(1))):
        if value.endswith(suffix):
            return Decimal(value.removesuffix(suffix)) * factor
    return Decimal(value)


# --- The matrix: every workload type x strategy x GPU family -------------------------------------------------------


def test_the_matrix_covers_every_family_and_strategy() -> None:
    combos = {(c.model, c.strategy) for c in CASES}
    assert len(combos) == 8 * 2 + 5  # dedicated and time-slicing everywhere, MIG on the five MIG-capable models
    assert ("T4", "mig") not in combos
    assert ("A30", "mig") in combos
    assert len(CASES) == len(combos) * 5


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_every_rendered_object_validates_and_follows_the_contract(case: mc.Case) -> None:
    ctx = mc.context(case.model, case.strategy, case.workload_type)
    objects = render_request_objects(ctx)
    model = BUILTIN_CATALOG.get(case.model)

    for obj in objects:
        mc.validate(obj)
        mc.check_names_and_labels(obj)
        labels = obj["metadata"]["labels"]
        assert labels["app.kubernetes.io/managed-by"] == "gpu-portal"
        if obj["kind"] != "PriorityClass":
            assert labels["gpu-portal/team"] == "vision"
    keys = [object_key(obj) for obj in objects]
    assert len(set(keys)) == len(keys)

    work = mc.workload(objects)
    expected_kind = "Deployment" if case.workload_type in ("realtime_inference", "development") else "Job"
    assert work["kind"] == expected_kind
    assert work["metadata"]["name"] == "gpr-42"
    assert work["metadata"]["namespace"] == "team-vision"
    for meta in (work["metadata"], work["spec"]["template"]["metadata"]):
        assert meta["labels"]["gpu-portal/request"] == "42"
        assert meta["labels"]["gpu-portal/team"] == "vision"

    pod = work["spec"]["template"]["spec"]
    container = mc.main_container(work)
    resources = container["resources"]
    resource_name = ctx.allocation.resource_name
    assert resources["limits"][resource_name] == resources["requests"][resource_name] == str(ctx.allocation.quantity)
    gpu_keys = {k for k in resources["limits"] if "/" in k}
    assert gpu_keys == {resource_name}  # one kind of GPU resource per container

    product = pod["nodeSelector"]["nvidia.com/gpu.product"]
    if case.strategy == "time-slicing":
        assert product == f"{model.product_label}-SHARED"
        assert pod["nodeSelector"]["nvidia.com/gpu.replicas"] == "4"
    else:
        assert product == model.product_label
    assert pod["nodeSelector"]["gpu-portal/pool"] == ctx.pool.node_labels["gpu-portal/pool"]
    assert {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"} in pod["tolerations"]
    assert pod["priorityClassName"] == ctx.tier.priority_class_name
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert container["securityContext"]["capabilities"] == {"drop": ["ALL"]}

    # The workload passes the namespace's own LimitRange (the LimitRanger would refuse it otherwise).
    maximum = _limit_range_max(objects)
    for resource, bound in maximum.items():
        assert _quantity(resources["limits"].get(resource, "0")) <= _quantity(bound), resource

    # The multi-document YAML reads back as the same objects.
    assert list(yaml.safe_load_all(to_yaml(objects))) == objects


def test_request_objects_come_in_apply_order() -> None:
    objects = render_request_objects(mc.context("H100-80GB", "dedicated", "realtime_inference"))
    assert [obj["kind"] for obj in objects] == [
        "PriorityClass",
        "Namespace",
        "NetworkPolicy",
        "ResourceQuota",
        "LimitRange",
        "PodDisruptionBudget",
        "Service",
        "Deployment",
    ]
    owned = [obj["kind"] for obj in objects if is_request_owned(obj)]
    assert owned == ["PodDisruptionBudget", "Service", "Deployment"]
    assert object_key(objects[0]) == ("scheduling.k8s.io/v1", "PriorityClass", "", "gpu-portal-tier1-realtime")
    assert object_key(objects[-1]) == ("apps/v1", "Deployment", "team-vision", "gpr-42")


def test_rendering_without_a_pool_or_tier_still_validates() -> None:
    ctx = mc.context("T4", "time-slicing", "development", with_pool=False, tier=None)
    objects = render_request_objects(ctx)
    for obj in objects:
        mc.validate(obj)
    pod = mc.workload(objects)["spec"]["template"]["spec"]
    assert "priorityClassName" not in pod
    assert pod["nodeSelector"] == {"nvidia.com/gpu.product": "Tesla-T4-SHARED", "nvidia.com/gpu.replicas": "4"}
    assert pod["tolerations"] == [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]


def test_a_workload_type_enum_is_accepted_as_its_value() -> None:
    class WorkloadType(StrEnum):
        TRAINING = "training"

    ctx = mc.context(workload_type=WorkloadType.TRAINING)
    assert ctx.workload_type == "training"
    assert mc.workload(render_request_objects(ctx))["kind"] == "Job"


# --- Jobs and Deployments -------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("hours", "seconds"), [(24, 86_400), (12.5, 45_000), (Decimal("0.01"), 36), (0.0001, 1), (None, None)]
)
def test_job_deadline_comes_from_the_duration(hours: float | None, seconds: int | None) -> None:
    job = mc.workload(render_request_objects(mc.context(duration_hours=hours)))
    assert job["spec"].get("activeDeadlineSeconds") == seconds


def test_job_shape() -> None:
    job = mc.workload(render_request_objects(mc.context("A100-80GB", "dedicated", "training")))
    spec = job["spec"]
    assert spec["backoffLimit"] == 2
    assert spec["parallelism"] == spec["completions"] == 2
    assert spec["completionMode"] == "Indexed"
    assert spec["template"]["spec"]["restartPolicy"] == "Never"
    assert spec["podFailurePolicy"]["rules"][0]["onPodConditions"][0]["type"] == "DisruptionTarget"
    one = mc.spec_for(BUILTIN_CATALOG.get("L4"), "dedicated", "batch_inference", replicas=1)
    single = mc.workload(render_request_objects(mc.context("L4", "dedicated", "batch_inference", spec=one)))
    assert "completionMode" not in single["spec"]
    assert single["spec"]["parallelism"] == 1


def test_realtime_inference_gets_probes_a_port_and_a_service() -> None:
    objects = render_request_objects(mc.context("H100-80GB", "dedicated", "realtime_inference", port=9000))
    deployment = mc.workload(objects)
    container = mc.main_container(deployment)
    assert container["ports"] == [{"name": "http", "containerPort": 9000, "protocol": "TCP"}]
    for probe in ("startupProbe", "readinessProbe", "livenessProbe"):
        assert container[probe]["httpGet"]["port"] == "http"
    assert container["startupProbe"]["failureThreshold"] * container["startupProbe"]["periodSeconds"] == 600
    assert container["readinessProbe"]["httpGet"]["path"] == "/ready"
    # Tier 1: Guaranteed QoS, 8 cores and 16 GiB for one inference GPU (guide 002 §7.2).
    assert container["resources"]["requests"] == container["resources"]["limits"]
    assert (container["resources"]["limits"]["cpu"], container["resources"]["limits"]["memory"]) == ("8", "16Gi")
    assert deployment["spec"]["strategy"]["rollingUpdate"] == {"maxSurge": 0, "maxUnavailable": 1}
    (service,) = mc.by_kind(objects, "Service")
    assert service["spec"]["selector"] == deployment["spec"]["selector"]["matchLabels"]
    assert service["spec"]["selector"].items() <= deployment["spec"]["template"]["metadata"]["labels"].items()
    assert service["spec"]["ports"][0]["targetPort"] == "http"


def test_development_is_a_deployment_without_probes() -> None:
    deployment = mc.workload(render_request_objects(mc.context("T4", "time-slicing", "development")))
    container = mc.main_container(deployment)
    assert deployment["spec"]["strategy"] == {"type": "Recreate"}
    assert not {"startupProbe", "readinessProbe", "livenessProbe", "ports"} & container.keys()


@pytest.mark.parametrize(
    ("strategy", "workload_type", "tier", "expected"),
    [
        ("dedicated", "realtime_inference", mc.TIER1, {"maxUnavailable": 1}),
        ("dedicated", "realtime_inference", mc.TIER2, None),
        ("dedicated", "realtime_inference", None, None),
        ("time-slicing", "development", mc.TIER3, None),
        ("dedicated", "training", mc.TIER1, None),  # Jobs get none: only Deployments serve a tier-1 SLA
    ],
)
def test_a_pod_disruption_budget_only_for_tier1_deployments(strategy, workload_type, tier, expected) -> None:
    objects = render_request_objects(mc.context("A100-40GB", strategy, workload_type, tier=tier))
    budgets = mc.by_kind(objects, "PodDisruptionBudget")
    if expected is None:
        assert budgets == []
        return
    (budget,) = budgets
    assert {k: budget["spec"][k] for k in expected} == expected
    assert budget["spec"]["selector"]["matchLabels"]["gpu-portal/request"] == "42"


def test_a_single_replica_tier1_deployment_cannot_be_drained() -> None:
    spec = mc.spec_for(BUILTIN_CATALOG.get("L4"), "dedicated", "realtime_inference", replicas=1)
    objects = render_request_objects(mc.context("L4", "dedicated", "realtime_inference", spec=spec))
    (budget,) = mc.by_kind(objects, "PodDisruptionBudget")
    assert budget["spec"]["minAvailable"] == 1
    assert "maxUnavailable" not in budget["spec"]


def test_hpc_gets_topology_hints_and_guaranteed_qos() -> None:
    objects = render_request_objects(mc.context("H100-80GB", "dedicated", "hpc_simulation"))
    template = mc.workload(objects)["spec"]["template"]
    affinity = template["spec"]["affinity"]
    preferred = affinity["nodeAffinity"]["preferredDuringSchedulingIgnoredDuringExecution"][0]["preference"]
    assert preferred["matchExpressions"][0]["values"] == ["single-numa-node"]
    term = affinity["podAffinity"]["preferredDuringSchedulingIgnoredDuringExecution"][0]["podAffinityTerm"]
    assert term["topologyKey"] == "kubernetes.io/hostname"
    assert term["labelSelector"]["matchLabels"] == {"gpu-portal/request": "42"}
    assert template["metadata"]["annotations"]["gpu-portal/numa-alignment"] == "single-numa-node"
    resources = mc.main_container(mc.workload(objects))["resources"]
    # Guaranteed QoS with whole cores: what the static CPU manager and the Topology Manager act on.
    assert resources["requests"] == resources["limits"]
    assert resources["requests"]["cpu"] == "16"  # 2 GPUs x 8 cores
    assert resources["requests"]["memory"] == "64Gi"
    training = mc.workload(render_request_objects(mc.context("H100-80GB", "dedicated", "training")))
    assert "affinity" not in training["spec"]["template"]["spec"]


@pytest.mark.parametrize(
    ("workload_type", "topology_aware", "expected"),
    [
        ("hpc_simulation", None, True),  # the spec does not say: HPC gets the hints (guide 000 §4.1)
        ("hpc_simulation", False, False),
        ("training", None, False),
        ("training", True, True),
    ],
)
def test_topology_hints_follow_the_spec_or_the_workload_type(workload_type, topology_aware, expected) -> None:
    spec = mc.spec_for(BUILTIN_CATALOG.get("H200"), "dedicated", workload_type)
    if topology_aware is None:
        del spec["topology_aware"]
    else:
        spec["topology_aware"] = topology_aware
    work = mc.workload(render_request_objects(mc.context("H200", workload_type=workload_type, spec=spec)))
    assert ("affinity" in work["spec"]["template"]["spec"]) is expected
    resources = mc.main_container(work)["resources"]
    assert (resources["requests"] == resources["limits"]) is expected


def test_pod_security_context_follows_the_guide() -> None:
    pod = mc.workload(render_request_objects(mc.context()))["spec"]["template"]["spec"]
    assert pod["securityContext"] == {
        "runAsNonRoot": True,
        "runAsUser": 1000,
        "runAsGroup": 1000,
        "fsGroup": 1000,
        "seccompProfile": {"type": "RuntimeDefault"},
    }
    container = pod["containers"][0]
    assert container["securityContext"]["allowPrivilegeEscalation"] is False
    assert container["securityContext"]["capabilities"] == {"drop": ["ALL"]}
    assert pod["automountServiceAccountToken"] is False


def test_pool_taints_become_tolerations() -> None:
    pool = PoolContext(
        name="l4-spot",
        gpu_model="L4",
        product_label="NVIDIA-L4",
        taints=[
            {"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"},  # covered by the Exists toleration
            {"key": "cloud.google.com/gke-preemptible", "value": "true", "effect": "NoSchedule"},
            {"key": "gpu-portal/maintenance", "effect": "NoExecute"},
        ],
    )
    pod = mc.workload(render_request_objects(mc.context("L4", pool=pool)))["spec"]["template"]["spec"]
    assert pod["tolerations"] == [
        {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"},
        {"key": "cloud.google.com/gke-preemptible", "operator": "Equal", "value": "true", "effect": "NoSchedule"},
        {"key": "gpu-portal/maintenance", "operator": "Exists", "effect": "NoExecute"},
    ]


# --- CPU and memory sizing ------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("model", "strategy", "workload_type", "share", "requests", "limits"),
    [
        # Dedicated, 2 GPUs of training: 8-16 cores and 32-64 GB per GPU (guide 002 §7.2).
        ("A100-40GB", "dedicated", "training", "2", ("16", "64Gi"), ("32", "128Gi")),
        # One inference GPU: 4-8 cores, 8-16 GB.
        ("L4", "dedicated", "batch_inference", "1", ("4", "8Gi"), ("8", "16Gi")),
        # A 2g MIG slice is 2/7 of an A100 but 2/4 of an A30 (catalog geometry, as billing counts it).
        ("A100-40GB", "mig", "training", "0.285714", ("2300m", "9472Mi"), ("4600m", "18944Mi")),
        ("A30", "mig", "training", "0.5", ("4", "16Gi"), ("8", "32Gi")),
        # A quarter of a time-sliced T4 for a notebook: the floors apply.
        ("T4", "time-slicing", "development", "0.25", ("1", "4Gi"), ("2", "8Gi")),
    ],
)
def test_cpu_and_memory_follow_the_gpu_share(model, strategy, workload_type, share, requests, limits) -> None:
    ctx = mc.context(model, strategy, workload_type, tier=mc.TIER3 if strategy == "time-slicing" else mc.TIER2)
    work = mc.workload(render_request_objects(ctx))
    assert work["metadata"]["annotations"]["gpu-portal/gpu-share"] == share
    resources = mc.main_container(work)["resources"]
    assert (resources["requests"]["cpu"], resources["requests"]["memory"]) == requests
    assert (resources["limits"]["cpu"], resources["limits"]["memory"]) == limits


def test_guaranteed_sizing_uses_whole_cores() -> None:
    size = size_container("training", Decimal(2) / Decimal(7), guaranteed=True)
    assert size.guaranteed
    assert size.cpu_request_m == 3000  # 2/7 x 8 = 2.3 cores, rounded up to whole cores
    assert size.memory_request_mi == 9472  # 2/7 x 32 GiB, rounded up to 256 MiB
    inference = size_container("realtime_inference", Decimal(1), guaranteed=True)
    assert (inference.requests(), inference.limits()) == ({"cpu": "8", "memory": "16Gi"},) * 2
    eight = size_container("training", Decimal(8), guaranteed=True)
    assert eight.requests() == {"cpu": "64", "memory": "256Gi"}


# --- Namespace objects and PriorityClasses --------------------------------------------------------------------------


def test_team_objects_validate() -> None:
    team = TeamContext("nlp", "team-nlp", {"nvidia.com/gpu": 6, "nvidia.com/mig-1g.5gb": 14})
    objects = render_team_objects(team)
    assert [o["kind"] for o in objects] == ["Namespace", "NetworkPolicy", "ResourceQuota", "LimitRange"]
    for obj in objects:
        mc.validate(obj)
        mc.check_names_and_labels(obj)
        assert obj["metadata"]["labels"]["gpu-portal/team"] == "nlp"
        assert "gpu-portal/request" not in obj["metadata"]["labels"]
    assert objects[0]["metadata"]["labels"]["pod-security.kubernetes.io/enforce"] == "restricted"


def test_resource_quota_keys() -> None:
    quota = render_resource_quota(TeamContext("nlp", "team-nlp", {"nvidia.com/gpu": 6, "nvidia.com/mig-2g.10gb": 4}))
    assert quota["spec"]["hard"] == {
        "requests.nvidia.com/gpu": "6",
        "limits.nvidia.com/gpu": "6",
        "requests.nvidia.com/mig-2g.10gb": "4",
        "limits.nvidia.com/mig-2g.10gb": "4",
    }
    assert render_resource_quota(TeamContext("nlp", "team-nlp")) is None
    assert [o["kind"] for o in render_team_objects(TeamContext("nlp", "team-nlp"))] == [
        "Namespace",
        "NetworkPolicy",
        "LimitRange",
    ]


@pytest.mark.parametrize("resource", ["cpu", "memory", "pods", "requests.nvidia.com/gpu", "kubernetes.io/foo"])
def test_only_extended_resources_take_quotas(resource: str) -> None:
    with pytest.raises(ManifestError, match="extended resource"):
        TeamContext("nlp", "team-nlp", {resource: 4})


def test_limit_range_bounds_gpus_without_handing_them_out() -> None:
    limit_range = render_limit_range(TeamContext("nlp", "team-nlp", {"nvidia.com/gpu": 32, "nvidia.com/mig-1g.5gb": 7}))
    (item,) = limit_range["spec"]["limits"]
    assert item["type"] == "Container"
    assert item["max"]["nvidia.com/gpu"] == "8"  # min(quota, GPUs per node)
    assert item["max"]["nvidia.com/mig-1g.5gb"] == "7"
    # An explicit 0 default: otherwise the API server defaults it to max and gives every container 8 GPUs.
    for key in ("default", "defaultRequest"):
        assert item[key]["nvidia.com/gpu"] == "0"
        assert item[key]["nvidia.com/mig-1g.5gb"] == "0"
    assert "min" not in item
    assert (item["defaultRequest"]["cpu"], item["defaultRequest"]["memory"]) == ("4", "8Gi")
    assert (item["default"]["cpu"], item["default"]["memory"]) == ("8", "16Gi")
    small = render_limit_range(TeamContext("nlp", "team-nlp", {"nvidia.com/gpu": 2}))
    assert small["spec"]["limits"][0]["max"]["nvidia.com/gpu"] == "2"


def test_network_policy_denies_by_default() -> None:
    (policy,) = [o for o in render_team_objects(TeamContext("nlp", "team-nlp")) if o["kind"] == "NetworkPolicy"]
    spec = policy["spec"]
    assert spec["podSelector"] == {}
    assert spec["policyTypes"] == ["Ingress", "Egress"]
    assert spec["ingress"] == [{"from": [{"podSelector": {}}]}]
    ports = [p for rule in spec["egress"] for p in rule.get("ports", [])]
    assert {"protocol": "UDP", "port": 53} in ports
    assert {"protocol": "TCP", "port": 443} in ports
    assert {"to": [{"podSelector": {}}]} in spec["egress"]


def test_priority_classes_per_tier() -> None:
    classes = render_priority_classes(DEFAULT_TIERS)
    for obj in classes:
        mc.validate(obj)
        mc.check_names_and_labels(obj)
    by_name = {c["metadata"]["name"]: c for c in classes}
    assert by_name["gpu-portal-tier1-realtime"]["value"] == 1_000_000
    assert by_name["gpu-portal-tier1-realtime"]["preemptionPolicy"] == "PreemptLowerPriority"
    assert by_name["gpu-portal-tier2-batch"]["preemptionPolicy"] == "PreemptLowerPriority"
    # Tier 3 is preemptible: it waits for capacity and never evicts anyone itself.
    assert by_name["gpu-portal-tier3-development"]["preemptionPolicy"] == "Never"
    assert all(c["globalDefault"] is False for c in classes)


# --- Refusals -------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("strategy", "workload_type", "tier", "message"),
    [
        ("mig", "realtime_inference", mc.TIER1, "requires dedicated"),
        ("time-slicing", "batch_inference", mc.TIER2, "requires MIG or dedicated"),
    ],
)
def test_the_tier_floor_is_enforced(strategy, workload_type, tier, message) -> None:
    with pytest.raises(ManifestError, match=message):
        render_request_objects(mc.context("A100-40GB", strategy, workload_type, tier=tier))


def test_pool_mismatches_are_refused() -> None:
    a100 = BUILTIN_CATALOG.get("A100-40GB")
    with pytest.raises(ManifestError, match="has H100-80GB GPUs"):
        render_request_objects(mc.context(pool=mc.pool_for(BUILTIN_CATALOG.get("H100-80GB"), "dedicated")))
    with pytest.raises(ManifestError, match="shares GPUs by 'time-slicing'"):
        render_request_objects(mc.context(pool=mc.pool_for(a100, "time-slicing")))
    eight_way = PoolContext(
        name="a100-ts8", gpu_model="A100-40GB", product_label=a100.product_label,
        sharing_mode="time-slicing", time_slice_replicas=8,
    )  # fmt: skip
    with pytest.raises(ManifestError, match="priced for 4 replicas"):
        render_request_objects(mc.context("A100-40GB", "time-slicing", "development", pool=eight_way))
    other_layout = PoolContext(
        name="a100-3g", gpu_model="A100-40GB", product_label=a100.product_label,
        sharing_mode="mig", mig_devices={"3g.20gb": 2},
    )  # fmt: skip
    with pytest.raises(ManifestError, match=r"no '2g\.10gb' MIG devices"):
        render_request_objects(mc.context("A100-40GB", "mig", "training", pool=other_layout))


def test_selector_conflicts_are_refused() -> None:
    spec = mc.spec_for(BUILTIN_CATALOG.get("A100-40GB"), "dedicated", "training", node_selector={
        "nvidia.com/gpu.product": "Tesla-T4"
    })  # fmt: skip
    with pytest.raises(ManifestError, match="GPU product is 'NVIDIA-A100-SXM4-40GB'"):
        render_request_objects(mc.context(spec=spec))
    spec = mc.spec_for(BUILTIN_CATALOG.get("A100-40GB"), "dedicated", "training", node_selector={
        "gpu-portal/pool": "elsewhere"
    })  # fmt: skip
    with pytest.raises(ManifestError, match="Node label 'gpu-portal/pool'"):
        render_request_objects(mc.context(spec=spec))


def test_the_pools_board_variant_wins_over_the_catalog_label() -> None:
    # Same catalog model, another board: the spec (catalog) says SXM4, the pool's nodes are PCIe.
    pcie = PoolContext(name="a100-pcie", gpu_model="A100-40GB", product_label="NVIDIA-A100-PCIE-40GB")
    work = mc.workload(render_request_objects(mc.context(pool=pcie)))
    assert work["spec"]["template"]["spec"]["nodeSelector"]["nvidia.com/gpu.product"] == "NVIDIA-A100-PCIE-40GB"


def test_more_than_one_time_sliced_share_is_refused() -> None:
    spec = mc.spec_for(BUILTIN_CATALOG.get("T4"), "time-slicing", "development", quantity=2)
    with pytest.raises(ManifestError, match="one share"):
        render_request_objects(mc.context("T4", "time-slicing", "development", spec=spec))


def test_more_gpus_than_a_container_may_hold_are_refused() -> None:
    spec = mc.spec_for(BUILTIN_CATALOG.get("H200"), "dedicated", "training", quantity=12)
    with pytest.raises(ManifestError, match="exceeds the namespace's maximum of 8"):
        render_request_objects(mc.context("H200", spec=spec))


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"strategy": "mps"}, "Unknown strategy"),
        ({"resource_name": "nvidia.com/mig-1g.5gb"}, "dedicated allocation uses 'nvidia.com/gpu'"),
        ({"quantity": 0}, "spec.quantity"),
        ({"quantity": True}, "spec.quantity"),
        ({"replicas": "2"}, "spec.replicas"),
        ({"gpu_model": None}, "lacks gpu_model"),
        ({"gpu_model": "Z100"}, "Unknown GPU model 'Z100'"),
        ({"time_slice_replicas": 4}, "Only time-sliced"),
        ({"node_selector": {"bad key!": "x"}}, "not a valid label key"),
    ],
)
def test_bad_specs_are_refused(overrides: dict, message: str) -> None:
    spec = mc.spec_for(BUILTIN_CATALOG.get("A100-40GB"), "dedicated", "training", **overrides)
    with pytest.raises(ManifestError, match=message):
        render_request_objects(mc.context(spec=spec))


def test_mig_spec_must_name_a_profile_of_the_model() -> None:
    t4 = BUILTIN_CATALOG.get("T4")
    spec = mc.spec_for(t4, "dedicated", "training", strategy="mig", resource_name="nvidia.com/mig-1g.5gb")
    with pytest.raises(ManifestError, match="not MIG-capable"):
        render_request_objects(mc.context("T4", with_pool=False, spec=spec))
    a30 = BUILTIN_CATALOG.get("A30")
    spec = mc.spec_for(a30, "mig", "training", resource_name="nvidia.com/mig-2g.10gb", mig_profile="2g.10gb")
    with pytest.raises(ManifestError, match=r"A30 has no MIG profile '2g\.10gb'"):
        render_request_objects(mc.context("A30", with_pool=False, tier=mc.TIER2, spec=spec))
    spec = mc.spec_for(a30, "mig", "training", resource_name="nvidia.com/mig-1g.6gb")
    with pytest.raises(ManifestError, match="disagrees with mig_profile"):
        render_request_objects(mc.context("A30", spec=spec))


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"request_id": 0}, "request_id"),
        ({"workload_type": "gaming"}, "Unknown workload type"),
        ({"image": " "}, "container image"),
        ({"command": "python train.py"}, "list of strings"),
        ({"duration_hours": 0}, "duration_hours must be > 0"),
        ({"port": 70000}, "port"),
        ({"env": {"A=B": "x"}}, "variable names"),
    ],
)
def test_bad_contexts_are_refused(fields: dict, message: str) -> None:
    with pytest.raises(ManifestError, match=message):
        mc.context(**fields)


def test_bad_teams_and_pools_are_refused() -> None:
    with pytest.raises(ManifestError, match="not a DNS label"):
        TeamContext("nlp", "Team_NLP")
    with pytest.raises(ManifestError, match="whole number >= 0"):
        TeamContext("nlp", "team-nlp", {"nvidia.com/gpu": -1})
    with pytest.raises(ManifestError, match="Taint effect"):
        PoolContext(name="p", gpu_model="T4", product_label="Tesla-T4", taints=[{"key": "a", "effect": "Never"}])
    with pytest.raises(ManifestError, match="only MIG pools have MIG devices"):
        PoolContext(name="p", gpu_model="T4", product_label="Tesla-T4", mig_devices={"1g.5gb": 1})
    with pytest.raises(ManifestError, match="needs its MIG devices"):
        PoolContext(name="p", gpu_model="A30", product_label="NVIDIA-A30", sharing_mode="mig")


# --- Time-slicing: the device plugin ConfigMap ----------------------------------------------------------------------


def _ts_pool(name: str = "t4-ts", replicas: int = 4, **fields) -> PoolContext:
    return PoolContext(
        name=name,
        gpu_model=fields.pop("gpu_model", "T4"),
        product_label=fields.pop("product_label", "Tesla-T4"),
        sharing_mode="time-slicing",
        time_slice_replicas=replicas,
        **fields,
    )


def test_time_slicing_configmap_round_trips() -> None:
    configmap = render_time_slicing_configmap(
        [_ts_pool(), _ts_pool("l4-ts", 2, gpu_model="L4", product_label="NVIDIA-L4")]
    )
    mc.validate(configmap)
    mc.check_names_and_labels(configmap)
    assert configmap["metadata"]["namespace"] == "gpu-operator"
    assert set(configmap["data"]) == {"default", "t4-ts", "l4-ts"}
    assert yaml.safe_load(configmap["data"]["t4-ts"]) == {
        "version": "v1",
        "flags": {"migStrategy": "none"},
        "sharing": {
            "timeSlicing": {
                "renameByDefault": False,
                "failRequestsGreaterThanOne": True,
                "resources": [{"name": "nvidia.com/gpu", "replicas": 4}],
            }
        },
    }
    assert yaml.safe_load(configmap["data"]["l4-ts"])["sharing"]["timeSlicing"]["resources"][0]["replicas"] == 2
    assert yaml.safe_load(configmap["data"]["default"]) == {"version": "v1", "flags": {"migStrategy": "mixed"}}
    # Through the multi-document YAML too: the payload is a literal block that parses back to the same config.
    (reparsed,) = yaml.safe_load_all(to_yaml([configmap]))
    assert reparsed == configmap
    assert "t4-ts: |" in to_yaml([configmap])


def test_time_slicing_node_labels() -> None:
    assert pool_node_labels(_ts_pool()) == {"nvidia.com/device-plugin.config": "t4-ts"}
    a100 = _ts_pool("a100-ts", gpu_model="A100-40GB", product_label="NVIDIA-A100-SXM4-40GB")
    assert pool_node_labels(a100) == {
        "nvidia.com/device-plugin.config": "a100-ts",
        "nvidia.com/mig.config": "all-disabled",
    }


@pytest.mark.parametrize("replicas", [1, 0, -1])
def test_fewer_than_two_replicas_is_refused_with_the_plugins_message(replicas: int) -> None:
    with pytest.raises(ManifestError, match="number of replicas must be >= 2"):
        _ts_pool(replicas=replicas)
    config = time_slicing_config(_ts_pool())
    config["sharing"]["timeSlicing"]["resources"][0]["replicas"] = replicas
    with pytest.raises(ManifestError, match="number of replicas must be >= 2"):
        validate_device_plugin_config(config)


def test_renamed_shared_gpus_keep_the_product_label() -> None:
    pool = _ts_pool(rename_by_default=True)
    assert time_slicing_config(pool)["sharing"]["timeSlicing"]["renameByDefault"] is True
    spec = mc.spec_for(BUILTIN_CATALOG.get("T4"), "time-slicing", "development", resource_name="nvidia.com/gpu.shared")
    objects = render_request_objects(mc.context("T4", "time-slicing", "development", pool=pool, spec=spec))
    work = mc.workload(objects)
    assert work["spec"]["template"]["spec"]["nodeSelector"]["nvidia.com/gpu.product"] == "Tesla-T4"
    assert mc.main_container(work)["resources"]["limits"]["nvidia.com/gpu.shared"] == "1"
    with pytest.raises(ManifestError, match="another name"):
        render_request_objects(mc.context("T4", "time-slicing", "development", pool=_ts_pool(), spec=spec))


def test_a_time_slicing_configmap_refuses_other_pools() -> None:
    whole = PoolContext(name="t4", gpu_model="T4", product_label="Tesla-T4")
    with pytest.raises(ManifestError, match="not a time-slicing pool"):
        render_time_slicing_configmap([whole])
    with pytest.raises(ManifestError, match="used twice"):
        render_time_slicing_configmap([_ts_pool(), _ts_pool()])


def _validation_cases() -> list[dict]:
    path = mc.SHARED_DIR / "reference" / "timeslicing" / "validation-cases.yaml"
    if not path.is_file():
        return [{"id": "missing-reference", "level": "missing", "path": str(path)}]
    modelled = {"resource", "devices", "block", "config"}
    return [case for case in yaml.safe_load(path.read_text())["cases"] if case["level"] in modelled]


@pytest.mark.parametrize("case", _validation_cases(), ids=lambda case: case["id"])
def test_the_device_plugin_validation_cases(case: dict) -> None:
    """The accept/reject cases restated from k8s-device-plugin's own unit tests, run against our validator."""
    if case["level"] == "missing":
        pytest.fail(f"Reference file missing: {case['path']}")
    data = case["input"]
    if case["level"] == "resource" and "<" in str(data.get("name")):
        data = {**data, "name": "nvidia.com/" + "a" * 60}  # the case's placeholder for an over-long name
    check = {
        "resource": lambda: validate_replicated_resource(data),
        "devices": lambda: validate_replica_devices(json.loads(data)),
        "block": lambda: validate_replicated_resources(json.loads(data)),
        "config": lambda: validate_device_plugin_config(yaml.safe_load(data)),
    }[case["level"]]
    if case["expect"] == "ok":
        result = check()
        if "normalized" in case:
            assert result == case["normalized"]
        if "normalized_rename" in case:
            assert result[0]["rename"] == case["normalized_rename"]
        return
    with pytest.raises(ManifestError) as refused:
        check()
    expected = case.get("error") or case.get("error_prefix")
    if expected:
        assert str(refused.value).startswith(expected)


# --- MIG: the mig-parted ConfigMap ----------------------------------------------------------------------------------


def _mig_pool(name: str, model: str, devices: dict[str, int]) -> PoolContext:
    spec = BUILTIN_CATALOG.get(model)
    return PoolContext(
        name=name, gpu_model=model, product_label=spec.product_label, sharing_mode="mig", mig_devices=devices
    )


def test_mig_configmap_round_trips() -> None:
    pools = [
        _mig_pool("a100-mixed", "A100-40GB", {"3g.20gb": 1, "1g.5gb": 2, "2g.10gb": 1}),
        _mig_pool("a30-halves", "A30", {"2g.12gb": 2}),
    ]
    configmap = render_mig_parted_configmap(pools)
    mc.validate(configmap)
    mc.check_names_and_labels(configmap)
    config = yaml.safe_load(configmap["data"]["config.yaml"])
    assert config == {
        "version": "v1",
        "mig-configs": {
            "all-disabled": [{"devices": "all", "mig-enabled": False}],
            "gpu-portal-a100-mixed": [
                {"devices": "all", "mig-enabled": True, "mig-devices": {"1g.5gb": 2, "2g.10gb": 1, "3g.20gb": 1}}
            ],
            "gpu-portal-a30-halves": [{"devices": "all", "mig-enabled": True, "mig-devices": {"2g.12gb": 2}}],
        },
    }
    assert pool_node_labels(pools[0]) == {"nvidia.com/mig.config": "gpu-portal-a100-mixed"}
    (reparsed,) = yaml.safe_load_all(to_yaml([configmap]))
    assert reparsed == configmap


def test_a100_all_balanced_matches_nvidias_named_config(shared_dir: Path) -> None:
    reference_path = shared_dir / "reference" / "mig" / "named-configs-by-gpu.yaml"
    assert reference_path.is_file(), f"missing reference: {reference_path}"
    reference = yaml.safe_load(reference_path.read_text())["A100-40GB"]["named_configs"]["all-balanced"]
    pool = _mig_pool("all-balanced", "A100-40GB", {"3g.20gb": 1, "2g.10gb": 1, "1g.5gb": 2})
    config = yaml.safe_load(render_mig_parted_configmap([pool])["data"]["config.yaml"])
    (entry,) = config["mig-configs"][mig_config_name(pool)]
    assert entry == {"devices": "all", **reference}
    assert list(entry["mig-devices"]) == list(reference["mig-devices"])  # same order as NVIDIA's file


def _reference_layouts() -> list[tuple[str, str, dict[str, int]]]:
    path = mc.SHARED_DIR / "reference" / "mig" / "named-configs-by-gpu.yaml"
    if not path.is_file():
        return [("missing", str(path), {})]
    families = {
        "A100-40GB": ["A100-40GB"],
        "A100-80GB / H100-80GB (also A800-80GB, H800-80GB)": ["A100-80GB", "H100-80GB"],
        "H200-141GB / H200 NVL": ["H200"],
        "A30-24GB": ["A30"],
    }
    reference = yaml.safe_load(path.read_text())
    layouts = []
    for family, models in families.items():
        for config_name, config in reference[family]["named_configs"].items():
            if config.get("mig-devices"):
                layouts.extend((model, config_name, config["mig-devices"]) for model in models)
    return layouts


@pytest.mark.parametrize(("model", "config_name", "devices"), _reference_layouts(), ids=lambda v: str(v))
def test_every_nvidia_named_layout_of_our_models_is_accepted(model: str, config_name: str, devices: dict) -> None:
    if model == "missing":
        pytest.fail(f"Reference file missing: {config_name}")
    assert check_mig_layout(BUILTIN_CATALOG.get(model), devices) == devices


@pytest.mark.parametrize(
    ("model", "devices", "message"),
    [
        ("A100-40GB", {"3g.20gb": 3}, "at most 2 x '3g.20gb'"),
        ("A100-40GB", {"1g.5gb": 8}, "at most 7 x '1g.5gb'"),
        ("A100-40GB", {"5g.25gb": 1}, "A100-40GB has no MIG profile '5g.25gb'"),
        ("A100-40GB", {"2g.20gb": 1}, "has no MIG profile '2g.20gb'"),  # an A100-80GB profile
        ("A100-40GB", {"3g.20gb": 2, "1g.5gb": 1}, "needs 9 memory slices; the GPU has 8"),
        ("A100-40GB", {"4g.20gb": 1, "2g.10gb": 2}, "needs 8 compute slices; the GPU has 7"),
        ("A30", {"2g.12gb": 2, "1g.6gb": 1}, "needs 5 memory slices; the GPU has 4"),
        ("A100-40GB", {"1g.5gb": 0}, "whole number >= 1"),
        ("T4", {"1g.5gb": 1}, "not MIG-capable"),
    ],
)
def test_impossible_mig_layouts_are_refused(model: str, devices: dict, message: str) -> None:
    with pytest.raises(ManifestError, match=message.replace("+", r"\+")):
        check_mig_layout(BUILTIN_CATALOG.get(model), devices)


def test_a_mig_pool_with_an_impossible_layout_is_refused_at_render_time() -> None:
    pool = _mig_pool("a100-bad", "A100-40GB", {"3g.20gb": 3})
    with pytest.raises(ManifestError, match="at most 2"):
        render_mig_parted_configmap([pool])


def test_layouts_whose_start_slices_collide_are_refused() -> None:
    # Sums alone would accept this: 4 + 4 memory slices, 4 + 3 compute slices; but both profiles may only start at
    # slice 0 on this (made-up) GPU, so no placement exists.
    profiles = (
        MigProfile("4g.20gb", 20, 4, 4, 1, (0,)),
        MigProfile("3g.20gb", 20, 3, 4, 1, (0,)),
    )
    model = GpuModelSpec(
        name="X100", memory_gb=40, product_label="X100", tdp_watts=1, family="test",
        mig_compute_slices=7, mig_memory_slices=8, mig_profiles=profiles,
    )  # fmt: skip
    with pytest.raises(ManifestError, match="cannot be placed"):
        check_mig_layout(model, {"4g.20gb": 1, "3g.20gb": 1})
    assert check_mig_layout(model, {"4g.20gb": 1}) == {"4g.20gb": 1}


# --- Output and purity ----------------------------------------------------------------------------------------------


def test_to_yaml_is_a_multi_document_stream_without_anchors() -> None:
    objects = render_request_objects(mc.context("H100-80GB", "dedicated", "realtime_inference"))
    text = to_yaml(objects)
    assert text.count("---\n") == len(objects)
    assert "&id" not in text
    assert "*id" not in text
    assert "gpu-portal/request: '42'" in text  # the request id stays a string label
    assert list(yaml.safe_load_all(text)) == objects


def test_rendered_objects_do_not_share_state() -> None:
    objects = render_request_objects(mc.context("H100-80GB", "dedicated", "realtime_inference"))
    deployment = mc.workload(objects)
    deployment["spec"]["selector"]["matchLabels"]["tampered"] = "yes"
    (service,) = mc.by_kind(objects, "Service")
    assert "tampered" not in service["spec"]["selector"]


def test_the_module_imports_no_framework() -> None:
    code = (
        "import sys, allocations.manifests\n"
        "bad = sorted({m.split('.')[0] for m in sys.modules} & {'django', 'rest_framework', 'celery', 'kubernetes'})\n"
        "print(','.join(bad))"
    )
    result = subprocess.run([sys.executable, "-c", code], cwd=REPO_ROOT, capture_output=True, text=True, check=True)
    assert result.stdout.strip() == ""


def test_workload_objects_alone_carry_the_request_label() -> None:
    objects = render_workload_objects(mc.context("A30", "mig", "batch_inference"))
    assert [o["kind"] for o in objects] == ["Job"]
    assert all(is_request_owned(o) for o in objects)
