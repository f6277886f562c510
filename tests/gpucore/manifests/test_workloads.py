"""The manifest renderer, per request: the workload-type x strategy x GPU-family matrix validates against
Kubernetes 1.30, Jobs and Deployments follow the GPU-specific rules, CPU/memory sizing, and the YAML output."""

from __future__ import annotations

import subprocess
import sys
from decimal import Decimal
from enum import StrEnum
from pathlib import Path

import pytest
import yaml

from gpucore.catalog import BUILTIN_CATALOG
from gpucore.manifests import (
    PoolContext,
    is_request_owned,
    object_key,
    render_request_objects,
    render_workload_objects,
    to_yaml,
)
from gpucore.manifests.sizing import size_container
from tests.gpucore.manifests import cases as mc

CASES = list(mc.matrix())
REPO_ROOT = Path(__file__).resolve().parents[3]


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
    if case.workload_type in ("training", "hpc_simulation") and ctx.allocation.replicas > 1:
        expected_kind = "JobSet"  # a gang that restarts as one
    assert work["kind"] == expected_kind
    assert work["metadata"]["name"] == "gpr-42"
    assert work["metadata"]["namespace"] == "team-vision"
    for meta in (work["metadata"], mc.pod_template(work)["metadata"]):
        assert meta["labels"]["gpu-portal/request"] == "42"
        assert meta["labels"]["gpu-portal/team"] == "vision"

    pod = mc.pod_template(work)["spec"]
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
    pod = mc.pod_template(mc.workload(objects))["spec"]
    assert "priorityClassName" not in pod
    assert pod["nodeSelector"] == {"nvidia.com/gpu.product": "Tesla-T4-SHARED", "nvidia.com/gpu.replicas": "4"}
    assert pod["tolerations"] == [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]


def test_a_workload_type_enum_is_accepted_as_its_value() -> None:
    class WorkloadType(StrEnum):
        TRAINING = "training"

    ctx = mc.context(workload_type=WorkloadType.TRAINING)
    assert ctx.workload_type == "training"
    assert mc.workload(render_request_objects(ctx))["kind"] == "JobSet"  # two workers: a gang


# --- Jobs and Deployments -------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("hours", "seconds"), [(24, 86_400), (12.5, 45_000), (Decimal("0.01"), 36), (0.0001, 1), (None, None)]
)
def test_job_deadline_comes_from_the_duration(hours: float | None, seconds: int | None) -> None:
    job = mc.workload(render_request_objects(mc.context(duration_hours=hours)))
    assert mc.job_spec(job).get("activeDeadlineSeconds") == seconds


def test_job_shape() -> None:
    job = mc.workload(render_request_objects(mc.context("A100-80GB", "dedicated", "batch_inference")))
    spec = job["spec"]
    assert spec["backoffLimit"] == 2
    assert spec["parallelism"] == spec["completions"] == 3
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
    # The default inference image is Triton: its liveness and readiness endpoints (guide 004 serves tritonserver).
    assert container["livenessProbe"]["httpGet"]["path"] == "/v2/health/live"
    assert container["startupProbe"]["httpGet"]["path"] == "/v2/health/live"
    assert container["readinessProbe"]["httpGet"]["path"] == "/v2/health/ready"
    # Tier 1: Guaranteed QoS, 8 cores and 16 GiB for one inference GPU (guide 002 §7.2).
    assert container["resources"]["requests"] == container["resources"]["limits"]
    assert (container["resources"]["limits"]["cpu"], container["resources"]["limits"]["memory"]) == ("8", "16Gi")
    assert deployment["spec"]["strategy"]["rollingUpdate"] == {"maxSurge": 0, "maxUnavailable": 1}
    (service,) = mc.by_kind(objects, "Service")
    assert service["spec"]["selector"] == deployment["spec"]["selector"]["matchLabels"]
    assert service["spec"]["selector"].items() <= mc.pod_template(deployment)["metadata"]["labels"].items()
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
        # Multi-pod Jobs of tiers 1-2 (guide 002 §7.3): one pod at a time, an integer minAvailable (Jobs have no
        # scale subresource, so maxUnavailable would not work); tier 3 is preemptible and gets none.
        ("dedicated", "training", mc.TIER1, {"minAvailable": 1}),
        ("dedicated", "hpc_simulation", mc.TIER2, {"minAvailable": 1}),
        ("mig", "batch_inference", mc.TIER2, {"minAvailable": 2}),
        ("time-slicing", "batch_inference", mc.TIER3, None),
    ],
)
def test_pod_disruption_budgets_for_tier1_deployments_and_tier1_2_jobs(strategy, workload_type, tier, expected) -> None:
    objects = render_request_objects(mc.context("A100-40GB", strategy, workload_type, tier=tier))
    budgets = mc.by_kind(objects, "PodDisruptionBudget")
    if expected is None:
        assert budgets == []
        return
    (budget,) = budgets
    assert {k: budget["spec"][k] for k in expected} == expected
    assert budget["spec"]["selector"]["matchLabels"]["gpu-portal/request"] == "42"


@pytest.mark.parametrize("workload_type", ["realtime_inference", "training", "hpc_simulation", "batch_inference"])
@pytest.mark.parametrize("replicas", [1, 2, 3, 8])
@pytest.mark.parametrize("tier", [mc.TIER1, mc.TIER2, mc.TIER3, None], ids=lambda t: t.slug if t else "none")
def test_no_budget_ever_blocks_a_drain(workload_type: str, replicas: int, tier) -> None:
    # 'minAvailable' equal to the pods (or 'maxUnavailable: 0') blocks every drain of their nodes: never rendered.
    strategy = "time-slicing" if tier is mc.TIER3 else "dedicated"
    spec = mc.spec_for(BUILTIN_CATALOG.get("L4"), strategy, workload_type, replicas=replicas)
    objects = render_request_objects(mc.context("L4", strategy, workload_type, spec=spec, tier=tier))
    for budget in mc.by_kind(objects, "PodDisruptionBudget"):
        mc.validate(budget)
        assert budget["spec"].get("minAvailable", 0) < replicas
        assert budget["spec"].get("maxUnavailable", 1) >= 1
        assert budget["spec"]["unhealthyPodEvictionPolicy"] == "AlwaysAllow"
    if replicas == 1:
        assert mc.by_kind(objects, "PodDisruptionBudget") == []


def test_tier1_2_jobs_tell_the_autoscaler_not_to_evict_them() -> None:
    for tier, expected in ((mc.TIER1, "false"), (mc.TIER2, "false"), (mc.TIER3, None)):
        strategy = "time-slicing" if tier is mc.TIER3 else "dedicated"
        job = mc.workload(render_request_objects(mc.context("L4", strategy, "training", tier=tier)))
        annotations = mc.pod_template(job)["metadata"]["annotations"]
        assert annotations.get("cluster-autoscaler.kubernetes.io/safe-to-evict") == expected


def test_hpc_gets_topology_hints_and_guaranteed_qos() -> None:
    objects = render_request_objects(mc.context("H100-80GB", "dedicated", "hpc_simulation"))
    template = mc.pod_template(mc.workload(objects))
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
    assert "affinity" not in mc.pod_template(training)["spec"]


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
    assert ("affinity" in mc.pod_template(work)["spec"]) is expected
    resources = mc.main_container(work)["resources"]
    assert (resources["requests"] == resources["limits"]) is expected


def test_pod_security_context_follows_the_guide() -> None:
    pod = mc.pod_template(mc.workload(render_request_objects(mc.context())))["spec"]
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
    pod = mc.pod_template(mc.workload(render_request_objects(mc.context("L4", pool=pool))))["spec"]
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
        "import sys, gpucore.manifests\n"
        "bad = sorted({m.split('.')[0] for m in sys.modules} & {'django', 'rest_framework', 'celery', 'kubernetes'})\n"
        "print(','.join(bad))"
    )
    result = subprocess.run([sys.executable, "-c", code], cwd=REPO_ROOT, capture_output=True, text=True, check=True)
    assert result.stdout.strip() == ""


def test_workload_objects_alone_carry_the_request_label() -> None:
    objects = render_workload_objects(mc.context("A30", "mig", "batch_inference"))
    assert [o["kind"] for o in objects] == ["PodDisruptionBudget", "Job"]  # tier 2, three pods
    assert all(is_request_owned(o) for o in objects)
