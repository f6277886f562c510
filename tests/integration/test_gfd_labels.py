"""Inventory sync reads GPU Feature Discovery's node labels (the API-server emulator over real HTTP, Node objects as
GFD labels them) and shows a pool whose nodes disagree with its configuration on the cluster page and in the
clusters API, with the fix; approvals onto such a pool are refused with that reason."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from django.core.exceptions import ValidationError
from django.urls import reverse

from allocations.clusters.tasks import sync_inventory
from allocations.models import ClusterBackend, GpuModel, NodePool, RequestStatus
from allocations.requests.services import gpu_request_approve, gpu_request_submit
from gpucore.vocabulary import SharingMode
from tests.factories import DemoOrg, NodePoolFactory
from tests.integration.k8s_emulator import EmulatedCluster

pytestmark = [pytest.mark.integration, pytest.mark.django_db]

H100 = "NVIDIA-H100-80GB-HBM3"
A100 = "NVIDIA-A100-SXM4-40GB"
TRAINING = {"workload_type": "training", "gpu_memory_gb": 40, "gpu_count": 2, "sla_tier": "tier2_batch"}


@pytest.fixture
def emulated(demo_org: DemoOrg) -> Iterator[EmulatedCluster]:
    with EmulatedCluster.running() as running:
        cluster = demo_org.cluster
        cluster.backend, cluster.api_endpoint = ClusterBackend.KUBERNETES, running.url
        cluster.save(update_fields=["backend", "api_endpoint"])
        yield running


def gpu_node(name: str, labels: dict[str, str], allocatable: dict[str, str]) -> dict[str, Any]:
    """A node as the kubelet, the device plugin and GPU Feature Discovery report it."""
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": labels},
        "spec": {},
        "status": {
            "allocatable": {"cpu": "63500m", "memory": "503Gi", **allocatable},
            "conditions": [{"type": "Ready", "status": "True"}],
        },
    }


def dedicated_h100(name: str, **extra: str) -> dict[str, Any]:
    labels = {"nvidia.com/gpu.product": H100, "nvidia.com/gpu.count": "8", "nvidia.com/mig.strategy": "single"}
    return gpu_node(name, {**labels, **extra}, {"nvidia.com/gpu": "8"})


@pytest.fixture
def mig_pool(demo_org: DemoOrg) -> NodePool:
    return NodePoolFactory(
        cluster=demo_org.cluster,
        name="a100-mig",
        gpu_model=GpuModel.objects.get(name="A100-40GB"),
        node_count=1,
        sharing_mode=SharingMode.MIG,
        mig_devices={"3g.20gb": 1, "2g.10gb": 1, "1g.5gb": 2},
        node_labels={"pool": "a100-mig"},
    )


def test_a_mig_pool_under_the_single_strategy_is_a_problem_with_its_fix(
    demo_org: DemoOrg, emulated: EmulatedCluster, mig_pool: NodePool, client, api_client
) -> None:
    # The GPU Operator's default mig.strategy=single with a mixed layout: GFD labels the product MIG-INVALID and the
    # device plugin advertises no nvidia.com/mig-* resource.
    emulated.put(
        gpu_node(
            "gpu-mig-0",
            {
                "pool": "a100-mig",
                "nvidia.com/gpu.product": f"{A100}-MIG-INVALID",
                "nvidia.com/mig.strategy": "single",
                "nvidia.com/mig.config": "gpu-portal-a100-mig",
                "nvidia.com/mig.config.state": "success",
            },
            {"nvidia.com/gpu": "0"},
        )
    )
    emulated.put(dedicated_h100("gpu-h100-0"))
    emulated.put(dedicated_h100("gpu-h100-1"))

    assert sync_inventory(demo_org.cluster.pk) == {"demo": "3 nodes, 0 unmatched"}

    mig_pool.refresh_from_db()
    problems = {p["problem"]: p for p in mig_pool.node_problems}
    strategy = problems["the nodes run the MIG strategy single, the portal needs mixed"]
    assert strategy["nodes"] == ["gpu-mig-0"]
    assert "--set mig.strategy=mixed" in strategy["fix"]
    assert "the nodes advertise no nvidia.com/mig-* resources, so no MIG pod can be scheduled" in problems
    demo_org.pool.refresh_from_db()
    assert demo_org.pool.node_problems == []  # the dedicated H100 nodes agree with their pool

    api_client.force_authenticate(demo_org.approver)
    answer = api_client.get("/api/v1/clusters/demo/").json()
    assert answer["inventory_error"] == ""
    assert set(answer["pool_problems"]) == {"a100-mig"}
    assert answer["pool_problems"]["a100-mig"][0]["fix"] == strategy["fix"]
    pool_answer = api_client.get("/api/v1/clusters/demo/node-pools/a100-mig/").json()
    assert pool_answer["node_problems"] == mig_pool.node_problems

    client.force_login(demo_org.approver)
    page = client.get(reverse("allocations:cluster-detail", args=["demo"])).content.decode()
    assert 'id="node-problems-a100-mig"' in page
    assert "The nodes run the MIG strategy single, the portal needs mixed" in page
    assert "--set mig.strategy=mixed" in page
    assert 'id="node-problems-h100"' not in page


def test_nodes_that_agree_again_clear_the_problem(
    demo_org: DemoOrg, emulated: EmulatedCluster, mig_pool: NodePool
) -> None:
    labels = {"pool": "a100-mig", "nvidia.com/gpu.product": f"{A100}-MIG-INVALID", "nvidia.com/mig.strategy": "single"}
    emulated.put(gpu_node("gpu-mig-0", labels, {}))
    sync_inventory(demo_org.cluster.pk)
    mig_pool.refresh_from_db()
    assert mig_pool.node_problems  # a node with no GPU resource at all is still read through its GFD labels

    fixed = {"pool": "a100-mig", "nvidia.com/gpu.product": A100, "nvidia.com/mig.strategy": "mixed"}
    emulated.put(
        gpu_node(
            "gpu-mig-0",
            {**fixed, "nvidia.com/mig.config.state": "success"},
            {"nvidia.com/mig-3g.20gb": "8", "nvidia.com/mig-2g.10gb": "8", "nvidia.com/mig-1g.5gb": "16"},
        )
    )
    sync_inventory(demo_org.cluster.pk)
    mig_pool.refresh_from_db()
    assert mig_pool.node_problems == []


def test_approval_onto_a_pool_whose_nodes_disagree_is_refused_with_the_reason(
    demo_org: DemoOrg, emulated: EmulatedCluster
) -> None:
    # The dedicated H100 pool's nodes are time-sliced four ways by a device-plugin config: each "GPU" is a quarter.
    emulated.put(dedicated_h100("gpu-h100-0", **{"nvidia.com/gpu.replicas": "4"}))
    emulated.put(dedicated_h100("gpu-h100-1"))
    sync_inventory(demo_org.cluster.pk)

    request = gpu_request_submit(
        command=["python", "main.py"],
        acting_user=demo_org.member,
        team=demo_org.team,
        name="train",
        profile_data=TRAINING,
    )
    assert request.node_pool_id == demo_org.pool.pk
    with pytest.raises(ValidationError) as refused:
        gpu_request_approve(request=request, acting_user=demo_org.approver)
    message = refused.value.message_dict["node_pool"][0]
    assert "the nodes share each GPU 4 ways (time-slicing), the pool is configured for dedicated GPUs" in message
    assert "(nodes gpu-h100-0)" in message
    assert "Fix: Remove the nodes' nvidia.com/device-plugin.config label" in message
    request.refresh_from_db()
    assert request.status == RequestStatus.PENDING_APPROVAL

    emulated.put(dedicated_h100("gpu-h100-0"))  # the label removed: the next sync clears it
    sync_inventory(demo_org.cluster.pk)
    assert gpu_request_approve(request=request, acting_user=demo_org.approver).status == RequestStatus.APPROVED


def test_an_unreadable_cluster_shows_why_on_its_page_and_in_the_api(demo_org: DemoOrg, client, api_client) -> None:
    cluster = demo_org.cluster
    cluster.backend, cluster.api_endpoint = ClusterBackend.KUBERNETES, "http://127.0.0.1:9"
    cluster.save(update_fields=["backend", "api_endpoint"])
    sync_inventory(cluster.pk)
    cluster.refresh_from_db()
    assert cluster.inventory_error

    api_client.force_authenticate(demo_org.approver)
    assert api_client.get("/api/v1/clusters/demo/").json()["inventory_error"] == cluster.inventory_error
    client.force_login(demo_org.approver)
    page = client.get(reverse("allocations:cluster-detail", args=["demo"])).content.decode()
    assert 'id="inventory-error"' in page
    assert "The last inventory sync could not read this cluster" in page
