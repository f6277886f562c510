"""Distributed training (Indexed Job, headless Service, torchrun's environment) and other manifest rules:
callers of real-time inference from labelled namespaces, probe paths that match the image, media-extension MIG
resource names and the one-+me-per-GPU rule."""

from __future__ import annotations

import re

import kubernetes_validate
import pytest

from gpucore.catalog import BUILTIN_CATALOG, mig_profile_of_resource, mig_resource_name
from gpucore.manifests import (
    ManifestError,
    PoolContext,
    check_mig_layout,
    render_mig_parted_configmap,
    render_request_objects,
)
from gpucore.manifests.contexts import AllocationSpec
from tests.gpucore.manifests import cases as mc

VERSIONS = ("1.30.0", "1.33.0")


def _env(container: dict) -> dict[str, object]:
    return {item["name"]: item.get("value", item.get("valueFrom")) for item in container["env"]}


@pytest.mark.parametrize("workload_type", ["training", "hpc_simulation"])
def test_a_two_replica_job_gets_rendezvous_for_torchrun(workload_type: str) -> None:
    objects = render_request_objects(mc.context("H100-80GB", "dedicated", workload_type))
    for obj in objects:
        mc.validate(obj)
    (service,) = mc.by_kind(objects, "Service")
    jobset = mc.workload(objects)
    assert jobset["kind"] == "JobSet" and jobset["apiVersion"] == "jobset.x-k8s.io/v1alpha2"
    assert service["metadata"]["name"] == jobset["metadata"]["name"] == "gpr-42"
    assert service["spec"]["clusterIP"] == "None"
    assert service["spec"]["publishNotReadyAddresses"] is True
    assert service["spec"]["selector"].items() <= mc.pod_template(jobset)["metadata"]["labels"].items()
    # The request's own Service is the JobSet's subdomain, so the JobSet controller creates no second one.
    assert jobset["spec"]["network"] == {
        "enableDNSHostnames": True,
        "subdomain": "gpr-42",
        "publishNotReadyAddresses": True,
    }
    (replicated,) = jobset["spec"]["replicatedJobs"]
    assert replicated["name"] == "worker" and replicated["replicas"] == 1
    spec = mc.job_spec(jobset)
    assert spec["completionMode"] == "Indexed"
    assert spec["completions"] == spec["parallelism"] == 2
    assert "subdomain" not in mc.pod_template(jobset)["spec"]  # the JobSet's pod webhook sets it
    container = mc.main_container(jobset)
    env = _env(container)
    index = {"fieldRef": {"fieldPath": "metadata.annotations['batch.kubernetes.io/job-completion-index']"}}
    # Pod 0 of the JobSet's one Job (gpr-42-worker-0) is gpr-42-worker-0-0, published as gpr-42-worker-0-0.gpr-42.
    assert env["MASTER_ADDR"] == env["PET_MASTER_ADDR"] == "gpr-42-worker-0-0.gpr-42"
    assert env["MASTER_PORT"] == env["PET_MASTER_PORT"] == "29500"
    assert env["WORLD_SIZE"] == env["PET_NNODES"] == "2"
    assert env["RANK"] == env["PET_NODE_RANK"] == index
    assert env["PET_NPROC_PER_NODE"] == "2"  # two GPUs per pod in this case
    assert {"name": "rendezvous", "containerPort": 29500, "protocol": "TCP"} in container["ports"]


def test_one_lost_worker_restarts_the_whole_gang_a_bounded_number_of_times() -> None:
    # 2 x 8-GPU training on H100s.
    model = BUILTIN_CATALOG.get("H100-80GB")
    spec = mc.spec_for(model, "dedicated", "training", quantity=8, replicas=2)
    objects = render_request_objects(mc.context("H100-80GB", "dedicated", "training", spec=spec))
    jobset = mc.workload(objects)
    mc.validate(jobset)
    job = mc.job_spec(jobset)
    # Any failed pod fails the Job at once (no per-pod retry that rejoins a rendezvous its peers have left) ...
    assert job["backoffLimit"] == 0
    assert mc.main_container(jobset)["resources"]["limits"]["nvidia.com/gpu"] == "8"
    policy = jobset["spec"]["failurePolicy"]
    # ... and the JobSet recreates every Job: the gang restarts as one, at most three times for real failures.
    assert 1 <= policy["maxRestarts"] <= 5
    assert policy["restartStrategy"] == "Recreate"
    # A drain or a preemption fails the Job through its podFailurePolicy (reason PodFailurePolicy): the gang restarts
    # without spending a restart; everything else falls through to a counted RestartJobSet.
    assert job["podFailurePolicy"]["rules"] == [
        {"action": "FailJob", "onPodConditions": [{"type": "DisruptionTarget", "status": "True"}]}
    ]
    first, last = policy["rules"]
    assert first["action"] == "RestartJobSetAndIgnoreMaxRestarts"
    assert first["onJobFailureReasons"] == ["PodFailurePolicy"]
    assert last["action"] == "RestartJobSet" and "onJobFailureReasons" not in last
    # The CRD's rule-name pattern.
    assert all(re.fullmatch(r"[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?", rule["name"]) for rule in policy["rules"])
    # The tier-2 gang keeps its PodDisruptionBudget: a drain takes one pod at a time.
    (pdb,) = mc.by_kind(objects, "PodDisruptionBudget")
    assert pdb["spec"]["minAvailable"] == 1
    assert pdb["spec"]["selector"]["matchLabels"].items() <= mc.pod_template(jobset)["metadata"]["labels"].items()
    assert job["activeDeadlineSeconds"] == 24 * 3600


def test_single_replica_and_batch_inference_stay_plain_jobs() -> None:
    one = mc.spec_for(BUILTIN_CATALOG.get("A100-40GB"), "dedicated", "training", replicas=1)
    objects = render_request_objects(mc.context(spec=one))
    assert mc.by_kind(objects, "Service") == []
    job = mc.workload(objects)
    assert job["kind"] == "Job"
    assert job["spec"]["backoffLimit"] == 2
    assert job["spec"]["podFailurePolicy"]["rules"][0]["action"] == "Ignore"
    assert "subdomain" not in mc.pod_template(job)["spec"]
    assert "MASTER_ADDR" not in _env(mc.main_container(job))
    # Three independent batch workers: Indexed (each takes its shard) but no process group.
    batch = render_request_objects(mc.context("A100-40GB", "mig", "batch_inference"))
    assert mc.by_kind(batch, "Service") == []
    assert mc.workload(batch)["kind"] == "Job"
    assert mc.workload(batch)["spec"]["completionMode"] == "Indexed"


def test_the_users_own_environment_wins() -> None:
    ctx = mc.context("H100-80GB", "dedicated", "training", env={"MASTER_PORT": "23456"})
    env = [item["name"] for item in mc.main_container(mc.workload(render_request_objects(ctx)))["env"]]
    assert env.count("MASTER_PORT") == 1
    assert _env(mc.main_container(mc.workload(render_request_objects(ctx))))["MASTER_PORT"] == "23456"


# --- Real-time inference: callers from labelled namespaces, probes that match the image -------------------------------


def test_inference_is_reachable_from_the_namespaces_the_admin_labelled() -> None:
    callers = {"gpu-portal/inference-caller": "true"}
    objects = render_request_objects(
        mc.context("H100-80GB", "dedicated", "realtime_inference", caller_namespace_selector=callers, port=9000)
    )
    policies = mc.by_kind(objects, "NetworkPolicy")
    assert [p["metadata"]["name"] for p in policies] == ["gpu-portal-default", "gpr-42"]
    policy = policies[1]
    for version in VERSIONS:
        kubernetes_validate.validate(policy, version, strict=True)
    assert policy["metadata"]["labels"]["gpu-portal/request"] == "42"  # released with the request
    assert policy["spec"]["podSelector"]["matchLabels"]["gpu-portal/request"] == "42"
    assert policy["spec"]["ingress"] == [
        {"from": [{"namespaceSelector": {"matchLabels": callers}}], "ports": [{"protocol": "TCP", "port": 9000}]}
    ]
    # Only serving gets it; without a selector only the namespace's own default policy applies.
    training = mc.context("H100-80GB", "dedicated", "training", caller_namespace_selector=callers)
    assert len(mc.by_kind(render_request_objects(training), "NetworkPolicy")) == 1
    plain = render_request_objects(mc.context("H100-80GB", "dedicated", "realtime_inference"))
    assert len(mc.by_kind(plain, "NetworkPolicy")) == 1
    with pytest.raises(ManifestError, match="caller_namespace_selector"):
        mc.context(caller_namespace_selector={"bad key!": "x"})


def test_an_image_without_known_health_endpoints_is_probed_over_tcp() -> None:
    ctx = mc.context("L4", "dedicated", "realtime_inference", health_path=None, readiness_path=None)
    container = mc.main_container(mc.workload(render_request_objects(ctx)))
    for probe in ("startupProbe", "readinessProbe", "livenessProbe"):
        assert container[probe]["tcpSocket"] == {"port": "http"}
        assert "httpGet" not in container[probe]
    kubernetes_validate.validate(mc.workload(render_request_objects(ctx)), "1.30.0", strict=True)
    with pytest.raises(ManifestError, match="health_path"):
        mc.context(health_path="v2/health")


# --- Media-extension MIG profiles ------------------------------------------------------------------------------------


def test_media_extension_profiles_use_the_device_plugins_resource_names() -> None:
    assert mig_resource_name("1g.5gb+me") == "nvidia.com/mig-1g.5gb.me"
    assert mig_resource_name("2g.10gb") == "nvidia.com/mig-2g.10gb"
    assert mig_profile_of_resource("nvidia.com/mig-1g.5gb.me") == "1g.5gb+me"
    assert mig_profile_of_resource("nvidia.com/mig-1g.5gb+me") is None  # '+' is not valid in a resource name
    assert BUILTIN_CATALOG.get("A100-40GB").profile("1g.5gb+me").resource_name == "nvidia.com/mig-1g.5gb.me"
    spec = AllocationSpec(
        strategy="mig", resource_name="nvidia.com/mig-1g.5gb.me", quantity=1, replicas=1, gpu_model="A100-40GB"
    )
    assert spec.mig_profile == "1g.5gb+me"
    pool = PoolContext(
        name="a100-media",
        gpu_model="A100-40GB",
        product_label="NVIDIA-A100-SXM4-40GB",
        sharing_mode="mig",
        mig_devices={"1g.5gb+me": 1, "1g.5gb": 6},
    )
    ctx = mc.context(
        "A100-40GB",
        "mig",
        "batch_inference",
        pool=pool,
        spec=mc.spec_for(
            BUILTIN_CATALOG.get("A100-40GB"),
            "mig",
            "batch_inference",
            resource_name="nvidia.com/mig-1g.5gb.me",
            mig_profile="1g.5gb+me",
            replicas=1,
        ),
        team=mc.team({"nvidia.com/gpu": 4, "nvidia.com/mig-1g.5gb.me": 2}),
    )
    objects = render_request_objects(ctx)
    for obj in objects:
        mc.validate(obj)
    assert mc.main_container(mc.workload(objects))["resources"]["limits"]["nvidia.com/mig-1g.5gb.me"] == "1"
    (quota,) = mc.by_kind(objects, "ResourceQuota")
    assert quota["spec"]["hard"]["requests.nvidia.com/mig-1g.5gb.me"] == "2"
    # mig-parted keeps NVIDIA's profile name.
    assert "1g.5gb+me: 1" in render_mig_parted_configmap([pool])["data"]["config.yaml"]


def test_at_most_one_media_extension_instance_per_gpu() -> None:
    a30 = BUILTIN_CATALOG.get("A30")
    assert check_mig_layout(a30, {"1g.6gb+me": 1, "1g.6gb": 2})
    with pytest.raises(ManifestError, match=r"at most one media-extension \(\+me\) instance"):
        check_mig_layout(a30, {"1g.6gb+me": 1, "2g.12gb+me": 1})
    with pytest.raises(ManifestError, match=r"at most 1 x '1g.5gb\+me'"):
        check_mig_layout(BUILTIN_CATALOG.get("A100-40GB"), {"1g.5gb+me": 2})
