"""What provisioning feeds the renderer from pools and settings: renamed time-sliced shares (their own resource and
quota), probe paths of the default image (TCP for an image the requester chose), and the inference callers' label."""

from __future__ import annotations

import pytest
from django.core.exceptions import ImproperlyConfigured, ValidationError

from allocations.clusters.rendering import gpu_request_render
from allocations.models import GpuModel, Quota
from allocations.requests.services import gpu_request_submit
from portal.settings.env import env_labels
from tests.factories import NodePoolFactory, QuotaFactory

pytestmark = pytest.mark.django_db(transaction=True)

SERVING = {"workload_type": "realtime_inference", "gpu_memory_gb": 40, "sla_tier": "tier1_realtime", "replicas": 2}


def by_kind(objects: list[dict], kind: str) -> list[dict]:
    return [o for o in objects if o["kind"] == kind]


def test_renamed_shares_are_their_own_resource_and_quota(demo_org) -> None:
    # 8 H100s and 16 T4 shares: with renameByDefault, two quota lines, not one 'requests.nvidia.com/gpu: 24'.
    NodePoolFactory(
        cluster=demo_org.cluster,
        name="t4-shared",
        gpu_model=GpuModel.objects.get(name="T4"),
        sharing_mode="time-slicing",
        time_slice_replicas=4,
        rename_by_default=True,
    )
    QuotaFactory(team=demo_org.team, cluster=demo_org.cluster, resource_name="nvidia.com/gpu.shared", limit=16)
    request = gpu_request_submit(
        command=["python", "main.py"],
        acting_user=demo_org.member,
        team=demo_org.team,
        name="notebook",
        profile_data={
            "workload_type": "development",
            "gpu_memory_gb": 3,
            "sla_tier": "tier3_development",
            "gpu_model": "T4",
        },
    )
    assert (request.node_pool.name, request.resource_name) == ("t4-shared", "nvidia.com/gpu.shared")
    objects = gpu_request_render(request=request)
    (quota,) = by_kind(objects, "ResourceQuota")
    assert quota["spec"]["hard"]["requests.nvidia.com/gpu"] == "8"
    assert quota["spec"]["hard"]["requests.nvidia.com/gpu.shared"] == "16"
    container = next(o for o in objects if o["kind"] == "Deployment")["spec"]["template"]["spec"]["containers"][0]
    assert container["resources"]["limits"]["nvidia.com/gpu.shared"] == "1"
    assert request.node_pool.capacity() == {"nvidia.com/gpu.shared": 2 * 8 * 4}


def test_only_time_slicing_pools_rename_shares(demo_org) -> None:
    demo_org.pool.rename_by_default = True
    with pytest.raises(ValidationError) as excinfo:
        demo_org.pool.full_clean()
    assert "rename_by_default" in excinfo.value.message_dict


def test_the_default_image_gets_its_probe_paths_and_a_chosen_image_tcp_probes(demo_org, settings) -> None:
    settings.PORTAL_INFERENCE_CALLER_NAMESPACE_LABELS = {"gpu-portal/inference-caller": "true"}
    Quota.objects.filter(team=demo_org.team).update(limit=16)
    default = gpu_request_submit(
        command=["python", "main.py"], acting_user=demo_org.member, team=demo_org.team, name="t", profile_data=SERVING
    )
    chosen = gpu_request_submit(
        command=["python", "main.py"],
        acting_user=demo_org.member,
        team=demo_org.team,
        name="v",
        profile_data=SERVING,
        image="registry.example.com/vllm:0.6",
    )
    probes = {}
    for request in (default, chosen):
        objects = gpu_request_render(request=request)
        (deployment,) = by_kind(objects, "Deployment")
        probes[request.name] = deployment["spec"]["template"]["spec"]["containers"][0]["readinessProbe"]
        policies = by_kind(objects, "NetworkPolicy")
        assert policies[-1]["spec"]["ingress"][0]["from"] == [
            {"namespaceSelector": {"matchLabels": {"gpu-portal/inference-caller": "true"}}}
        ]
    assert probes["t"]["httpGet"]["path"] == "/v2/health/ready"  # Triton, the default inference image
    assert probes["v"] == {"tcpSocket": {"port": "http"}, "periodSeconds": 5, "failureThreshold": 3}


def test_caller_labels_from_the_environment(monkeypatch) -> None:
    monkeypatch.setenv("CALLERS", "team=ingress, gpu-portal/inference-caller=true")
    assert env_labels("CALLERS", "") == {"team": "ingress", "gpu-portal/inference-caller": "true"}
    monkeypatch.setenv("CALLERS", "")
    assert env_labels("CALLERS", "a=b") == {}
    monkeypatch.delenv("CALLERS")
    assert env_labels("CALLERS", "a=b") == {"a": "b"}
    monkeypatch.setenv("CALLERS", "ingress-nginx")
    with pytest.raises(ImproperlyConfigured, match="key=value"):
        env_labels("CALLERS", "")
