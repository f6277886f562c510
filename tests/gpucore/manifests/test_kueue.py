"""Kueue objects and the cluster's own objects: rendered from pools, quotas and tiers, and accepted by the Kueue CRDs'
schemas and CEL rules (kueue_schemas/, from the kueue repository) and by Kubernetes 1.30 and 1.33 for core kinds."""

from __future__ import annotations

import copy

import pytest

from gpucore.manifests import (
    ClusterContext,
    ClusterQueueContext,
    FlavorQuota,
    ManifestError,
    PoolContext,
    TeamContext,
    render_cluster_objects,
    render_cluster_queue,
    render_request_objects,
    render_resource_quota,
    to_yaml,
)
from gpucore.manifests.kueue import flavor_node_labels, queue_objects_for
from gpucore.sla import DEFAULT_TIERS
from tests.gpucore.manifests import cases as mc
from tests.gpucore.manifests.kueue_validation import kueue_errors, validate_kueue

TAINT = {"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}
H100 = PoolContext(
    name="h100-whole",
    gpu_model="H100-80GB",
    product_label="NVIDIA-H100-80GB-HBM3",
    node_labels={"gpu-portal/pool": "h100-whole"},
    taints=[TAINT, {"key": "dedicated", "effect": "NoExecute"}],
)
A100_MIG = PoolContext(
    name="a100-mig",
    gpu_model="A100-40GB",
    product_label="NVIDIA-A100-SXM4-40GB",
    sharing_mode="mig",
    mig_devices={"3g.20gb": 1, "1g.5gb+me": 1, "1g.5gb": 2},
)
T4_SHARED = PoolContext(
    name="t4-shared",
    gpu_model="T4",
    product_label="Tesla-T4",
    sharing_mode="time-slicing",
    time_slice_replicas=4,
    rename_by_default=True,
)
VISION = ClusterQueueContext(
    team=TeamContext("vision", "team-vision"),
    quotas=[
        FlavorQuota(flavor="h100-whole", resource="nvidia.com/gpu", nominal=8, borrowing_limit=4, lending_limit=2),
        FlavorQuota(flavor="t4-shared", resource="nvidia.com/gpu.shared", nominal=16),
        FlavorQuota(flavor="a100-mig", resource="nvidia.com/mig-1g.5gb.me", nominal=1),
    ],
)
NLP = ClusterQueueContext(
    team=TeamContext("nlp", "team-nlp"),
    quotas=[
        FlavorQuota(flavor="h100-whole", resource="nvidia.com/gpu", nominal=4, lending_limit=4),
        FlavorQuota(flavor="a100-mig", resource="nvidia.com/mig-3g.20gb", nominal=2),
    ],
)


def cluster(scheduler: str = "kueue", **overrides) -> ClusterContext:
    """The cluster of these tests: three pools, two teams, the default SLA tiers."""
    fields = {
        "name": "gpu-east",
        "scheduler": scheduler,
        "pools": [H100, A100_MIG, T4_SHARED],
        "tiers": DEFAULT_TIERS,
        "queues": [VISION, NLP],
    }
    fields.update(overrides)
    return ClusterContext(**fields)


def validate_any(obj: dict) -> None:
    """Kueue kinds against the Kueue schemas; the rest against Kubernetes 1.30 and 1.33, strictly."""
    mc.check_names_and_labels(obj)
    mc.validate(obj)  # Kueue and JobSet kinds against their CRDs, the rest strictly at 1.30 and 1.33


def test_a_kueue_cluster_renders_every_object_and_each_one_validates() -> None:
    objects = render_cluster_objects(cluster())
    kinds = [obj["kind"] for obj in objects]
    assert kinds == [
        *["PriorityClass"] * 3,
        "ConfigMap",
        "ConfigMap",
        *["WorkloadPriorityClass"] * 3,
        *["ResourceFlavor"] * 3,
        "ClusterQueue",
        "ClusterQueue",
        "Namespace",
        "LocalQueue",
        "Namespace",
        "LocalQueue",
    ]
    for obj in objects:
        validate_any(obj)
        assert obj["metadata"]["labels"]["app.kubernetes.io/managed-by"] == "gpu-portal"
    # The YAML the endpoint serves reads back as JSON-equal documents.
    assert to_yaml(objects).count("\n---") == len(objects) - 1


def test_a_default_scheduler_cluster_has_no_kueue_objects() -> None:
    objects = render_cluster_objects(cluster("default"))
    assert [obj["kind"] for obj in objects] == [*["PriorityClass"] * 3, "ConfigMap", "ConfigMap"]
    for obj in objects:
        validate_any(obj)


def test_cluster_queue_carries_the_quotas_per_flavor_in_the_cohort() -> None:
    queues = {o["metadata"]["name"]: o for o in render_cluster_objects(cluster()) if o["kind"] == "ClusterQueue"}
    vision = queues["vision"]["spec"]
    assert vision["cohortName"] == "gpu-east"
    assert vision["namespaceSelector"] == {"matchLabels": {"kubernetes.io/metadata.name": "team-vision"}}
    assert vision["preemption"] == {
        "reclaimWithinCohort": "Any",
        "borrowWithinCohort": {"policy": "Never"},
        "withinClusterQueue": "Never",
    }
    (group,) = vision["resourceGroups"]
    # Whole GPUs first; every flavor lists every covered resource in that order (0 where the pool has none).
    assert group["coveredResources"] == ["nvidia.com/gpu", "nvidia.com/gpu.shared", "nvidia.com/mig-1g.5gb.me"]
    flavors = {flavor["name"]: flavor["resources"] for flavor in group["flavors"]}
    assert list(flavors) == ["h100-whole", "t4-shared", "a100-mig"]
    for resources in flavors.values():
        assert [r["name"] for r in resources] == group["coveredResources"]
    assert flavors["h100-whole"][0] == {
        "name": "nvidia.com/gpu",
        "nominalQuota": 8,
        "borrowingLimit": 4,
        "lendingLimit": 2,
    }
    # No borrowing limit in the portal means no borrowing: 0, never Kueue's unlimited null.
    assert flavors["t4-shared"][1] == {"name": "nvidia.com/gpu.shared", "nominalQuota": 16, "borrowingLimit": 0}
    assert flavors["t4-shared"][0] == {"name": "nvidia.com/gpu", "nominalQuota": 0, "borrowingLimit": 0}
    assert queues["nlp"]["spec"]["resourceGroups"][0]["flavors"][0]["resources"][0]["lendingLimit"] == 4


def test_resource_flavors_select_what_the_pods_select() -> None:
    flavors = {o["metadata"]["name"]: o for o in render_cluster_objects(cluster()) if o["kind"] == "ResourceFlavor"}
    assert flavors["h100-whole"]["spec"] == {
        "nodeLabels": {"gpu-portal/pool": "h100-whole", "nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3"},
        "tolerations": [
            {"key": "nvidia.com/gpu", "operator": "Equal", "value": "present", "effect": "NoSchedule"},
            {"key": "dedicated", "operator": "Exists", "effect": "NoExecute"},
        ],
    }
    # Renamed shares keep the plain product label (GFD adds -SHARED only without renameByDefault).
    assert flavors["t4-shared"]["spec"]["nodeLabels"] == {
        "nvidia.com/gpu.replicas": "4",
        "nvidia.com/gpu.product": "Tesla-T4",
    }
    # Kueue assigns a flavor only when its nodeLabels agree with the pod's nodeSelector: they are the same labels.
    for strategy, model in (("dedicated", "A100-40GB"), ("mig", "A100-40GB"), ("time-slicing", "T4")):
        ctx = mc.context(model, strategy, "training")
        pod = mc.pod_template(mc.workload(render_request_objects(ctx)))["spec"]
        assert flavor_node_labels(ctx.pool).items() <= pod["nodeSelector"].items()


def test_local_queue_and_priority_classes() -> None:
    objects = render_cluster_objects(cluster())
    local = [o for o in objects if o["kind"] == "LocalQueue"]
    assert [(o["metadata"]["namespace"], o["metadata"]["name"], o["spec"]) for o in local] == [
        ("team-vision", "default", {"clusterQueue": "vision"}),
        ("team-nlp", "default", {"clusterQueue": "nlp"}),
    ]
    classes = {o["metadata"]["name"]: o["value"] for o in objects if o["kind"] == "WorkloadPriorityClass"}
    assert classes == {tier.priority_class_name: tier.priority_value for tier in DEFAULT_TIERS}
    assert len(set(classes.values())) == 3


def test_a_job_on_a_kueue_cluster_is_queued_by_label_only() -> None:
    team = TeamContext("vision", "team-vision", {"nvidia.com/gpu": 16}, cluster_queue="vision")
    objects = render_request_objects(mc.context("A100-40GB", "dedicated", "training", team=team))
    assert [o["kind"] for o in objects][-4:] == ["LocalQueue", "PodDisruptionBudget", "Service", "JobSet"]
    job = mc.workload(objects)
    assert job["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] == "default"
    assert job["metadata"]["labels"]["kueue.x-k8s.io/priority-class"] == "gpu-portal-tier2-batch"
    # Not on the pods (Kueue's pod integration would queue each pod alone), and never 'suspend' (Kueue owns it).
    assert not any(key.startswith("kueue.x-k8s.io/") for key in mc.pod_template(job)["metadata"]["labels"])
    assert "suspend" not in job["spec"]
    for obj in objects:
        validate_any(obj)
    # A Deployment is not queued (docs/kubernetes-and-kueue.md, "Kueue mode": Jobs carry the label), and without
    # Kueue nothing is.
    serving = mc.workload(render_request_objects(mc.context("A100-40GB", "dedicated", "realtime_inference", team=team)))
    assert "kueue.x-k8s.io/queue-name" not in serving["metadata"]["labels"]
    plain = render_request_objects(mc.context("A100-40GB", "dedicated", "training"))
    assert "LocalQueue" not in [o["kind"] for o in plain]
    assert "kueue.x-k8s.io/queue-name" not in mc.workload(plain)["metadata"]["labels"]


def test_a_request_takes_its_teams_queue_objects_first() -> None:
    objects = render_cluster_objects(cluster())
    needed = queue_objects_for(objects, team_slug="nlp")
    assert [(o["kind"], o["metadata"]["name"]) for o in needed if o["kind"] == "ClusterQueue"] == [
        ("ClusterQueue", "nlp")
    ]
    assert {o["kind"] for o in needed} == {"WorkloadPriorityClass", "ResourceFlavor", "ClusterQueue"}


# --- What the API server (CEL rules, schema) and Kueue's webhook refuse ----------------------------------------------


def test_a_limit_without_a_cohort_is_refused_by_the_renderer_and_by_the_crds_cel_rule() -> None:
    with pytest.raises(ManifestError, match="must be nil when cohort is empty"):
        render_cluster_queue(VISION, cohort=None)
    alone = ClusterQueueContext(
        team=TeamContext("solo", "team-solo"),
        quotas=[FlavorQuota(flavor="h100-whole", resource="nvidia.com/gpu", nominal=2)],
    )
    queue = render_cluster_queue(alone, cohort=None)
    assert "cohortName" not in queue["spec"]
    assert "borrowingLimit" not in queue["spec"]["resourceGroups"][0]["flavors"][0]["resources"][0]
    validate_kueue(queue)
    # The same object with a borrowing limit and no cohort: the CRD's x-kubernetes-validations rule refuses it.
    broken = copy.deepcopy(queue)
    broken["spec"]["resourceGroups"][0]["flavors"][0]["resources"][0]["borrowingLimit"] = 1
    assert kueue_errors(broken) == [".spec: borrowingLimit must be nil when cohort is empty"]
    broken["spec"]["cohortName"] = "gpu-east"
    assert kueue_errors(broken) == []


def test_lending_more_than_the_nominal_quota_is_refused() -> None:
    with pytest.raises(ManifestError, match="must be less than or equal to the nominalQuota"):
        FlavorQuota(flavor="h100-whole", resource="nvidia.com/gpu", nominal=12, lending_limit=13)
    with pytest.raises(ManifestError, match="whole number >= 0"):
        FlavorQuota(flavor="h100-whole", resource="nvidia.com/gpu", nominal=-1)
    with pytest.raises(ManifestError, match="two quotas for one flavor"):
        ClusterQueueContext(team=VISION.team, quotas=[VISION.quotas[0], VISION.quotas[0]])
    with pytest.raises(ManifestError, match="flavors with no node pool"):
        render_cluster_objects(cluster(pools=[H100, T4_SHARED]))


def test_the_validator_refuses_what_the_api_server_refuses() -> None:
    # Each mutation breaks one rule of the CRD; the validator must say so (it is not a test that cannot fail).
    queue = render_cluster_queue(VISION, cohort="gpu-east")
    assert kueue_errors(queue) == []
    cases = {
        # v1beta1's field name is unknown in v1beta2 (strict field validation).
        "spec.cohort": lambda q: q["spec"].update(cohort="gpu-east"),
        "flavors size": lambda q: q["spec"]["resourceGroups"][0]["flavors"][0]["resources"].pop(),
        "enum": lambda q: q["spec"]["preemption"].update(withinClusterQueue="Sometimes"),
        "borrowWithinCohort": lambda q: q["spec"]["preemption"].update(
            reclaimWithinCohort="Never", borrowWithinCohort={"policy": "LowerPriority"}
        ),
        "quantity": lambda q: q["spec"]["resourceGroups"][0]["flavors"][0]["resources"][0].update(nominalQuota="x"),
    }
    for what, mutate in cases.items():
        broken = copy.deepcopy(queue)
        mutate(broken)
        assert kueue_errors(broken), what
    flavor = render_cluster_objects(cluster())[8]
    assert flavor["kind"] == "ResourceFlavor"
    flavor["spec"]["tolerations"].append({"operator": "Equal", "value": "x"})  # Equal needs a key (CEL)
    assert any("operator" in error or "Exists" in error for error in kueue_errors(flavor))


def test_shares_and_whole_gpus_are_counted_apart_when_shares_are_renamed() -> None:
    # 8 H100s and 16 T4 shares: with renameByDefault the namespace quota no longer adds them into one number.
    quota = render_resource_quota(
        TeamContext("vision", "team-vision", {"nvidia.com/gpu": 8, "nvidia.com/gpu.shared": 16})
    )
    assert quota["spec"]["hard"]["requests.nvidia.com/gpu"] == "8"
    assert quota["spec"]["hard"]["requests.nvidia.com/gpu.shared"] == "16"
    mc.validate(quota)


def test_the_setup_docs_give_kueues_quota_check_setting_by_version() -> None:
    # The ClusterQueues cover GPUs only: Kueue before v0.19 ignores quotaCheckStrategy and leaves every Job Pending.
    from pathlib import Path

    text = (Path(__file__).resolve().parents[3] / "docs" / "kubernetes-and-kueue.md").read_text()
    assert "**Kueue v0.19 and later**: `resources.quotaCheckStrategy:\nIgnoreUndeclared`" in text
    assert "**Kueue v0.15 to v0.18** ignore that field" in text
    assert "`resources.excludeResourcePrefixes: [cpu, memory]`" in text
    assert "before v0.18" not in text
