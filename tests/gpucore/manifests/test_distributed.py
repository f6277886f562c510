"""Distributed training (Indexed Job, headless Service, torchrun's environment) and other manifest rules:
callers of real-time inference from labelled namespaces, probe paths that match the image, media-extension MIG
resource names and the one-+me-per-GPU rule."""

from __future__ import annotations

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
        for version in VERSIONS:
            kubernetes_validate.validate(obj, version, strict=True)
    (service,) = mc.by_kind(objects, "Service")
    job = mc.workload(objects)
    assert service["metadata"]["name"] == job["metadata"]["name"] == "gpr-42"
    assert service["spec"]["clusterIP"] == "None"
    assert service["spec"]["publishNotReadyAddresses"] is True
    assert service["spec"]["selector"].items() <= job["spec"]["template"]["metadata"]["labels"].items()
    spec = job["spec"]
    assert spec["completionMode"] == "Indexed"
    assert spec["completions"] == spec["parallelism"] == 2
    assert spec["template"]["spec"]["subdomain"] == "gpr-42"
    container = mc.main_container(job)
    env = _env(container)
    index = {"fieldRef": {"fieldPath": "metadata.annotations['batch.kubernetes.io/job-completion-index']"}}
    # Pod 0 of the Indexed Job, gpr-42-0, is published by the headless Service as gpr-42-0.gpr-42.
    assert env["MASTER_ADDR"] == env["PET_MASTER_ADDR"] == "gpr-42-0.gpr-42"
    assert env["MASTER_PORT"] == env["PET_MASTER_PORT"] == "29500"
    assert env["WORLD_SIZE"] == env["PET_NNODES"] == "2"
    assert env["RANK"] == env["PET_NODE_RANK"] == index
    assert env["PET_NPROC_PER_NODE"] == "2"  # two GPUs per pod in this case
    assert {"name": "rendezvous", "containerPort": 29500, "protocol": "TCP"} in container["ports"]


def test_single_replica_and_batch_inference_need_no_rendezvous() -> None:
    one = mc.spec_for(BUILTIN_CATALOG.get("A100-40GB"), "dedicated", "training", replicas=1)
    objects = render_request_objects(mc.context(spec=one))
    assert mc.by_kind(objects, "Service") == []
    assert "subdomain" not in mc.workload(objects)["spec"]["template"]["spec"]
    assert "MASTER_ADDR" not in _env(mc.main_container(mc.workload(objects)))
    # Three independent batch workers: Indexed (each takes its shard) but no process group.
    batch = render_request_objects(mc.context("A100-40GB", "mig", "batch_inference"))
    assert mc.by_kind(batch, "Service") == []
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
