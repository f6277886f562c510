"""Dynamic MIG as a pool's admission policy on a DRA cluster, through the Kubernetes emulator: inventory sync reads the
driver's GPUs from ResourceSlices shaped like its DynamicMIG mode (every profile and placement, per GPU), approvals
place each instance by the policy (partitioned GPUs first, whole ones kept whole), the claim selects a slice of the
chosen GPU, and the pool page shows the policy beside what the driver reports."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from django.core.exceptions import ValidationError
from django.db import transaction
from django.urls import reverse

from allocations.clusters.rendering import workload_context
from allocations.clusters.tasks import sync_inventory
from allocations.mig_plans.services import mig_plan_create
from allocations.models import (
    ClusterBackend,
    DeviceApi,
    DynamicMigInstance,
    GpuModel,
    GpuRequest,
    NodePool,
    RequestStatus,
    SharingMode,
)
from allocations.requests.services import require_pool_capacity
from gpucore.dra_inventory import devices_from_slices
from gpucore.manifests import render_request_objects
from tests.factories import DemoOrg, GpuRequestFactory, NodePoolFactory
from tests.gpucore.manifests.dra_samples import A100_40, matching_devices
from tests.gpucore.manifests.dra_validation import validate_dra
from tests.integration.k8s_emulator import EmulatedCluster

pytestmark = [pytest.mark.integration, pytest.mark.django_db]

NODE = "a100-dyn-1"
GPU_A, GPU_B = "GPU-5e1a0000-0000-0000-0000-00000000000a", "GPU-5e1a0000-0000-0000-0000-00000000000b"
# Memory slices of each placement the driver advertises on an A100-40GB (its DynamicMIG mode lists them all).
PLACEMENTS = {"1g.5gb": 7, "2g.10gb": 3, "3g.20gb": 2, "7g.40gb": 1}
MEMORY = {"1g.5gb": "4864Mi", "2g.10gb": "9856Mi", "3g.20gb": "19968Mi", "7g.40gb": "40192Mi"}


def _dynamic_slice() -> dict[str, Any]:
    devices: list[dict[str, Any]] = []
    for index, uuid in enumerate((GPU_A, GPU_B)):
        devices.append(
            {
                "name": f"gpu-{index}",
                "attributes": {
                    "type": {"string": "gpu"},
                    "productName": {"string": A100_40},
                    "uuid": {"string": uuid},
                },
                "capacity": {"memory": {"value": "40Gi"}},
            }
        )
        for profile, count in PLACEMENTS.items():
            for start in range(count):
                devices.append(
                    {
                        "name": f"gpu-{index}-mig-{profile.replace('.', '')}-{start}",
                        "attributes": {
                            "type": {"string": "mig"},
                            "productName": {"string": A100_40},
                            "profile": {"string": profile},
                            "parentUUID": {"string": uuid},
                        },
                        "capacity": {"memory": {"value": MEMORY[profile]}},
                    }
                )
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceSlice",
        "metadata": {"name": f"{NODE}-gpu.nvidia.com-d8s2q"},
        "spec": {
            "driver": "gpu.nvidia.com",
            "nodeName": NODE,
            "pool": {"name": NODE, "generation": 1, "resourceSliceCount": 1},
            "devices": devices,
        },
    }


@pytest.fixture
def emulated() -> Iterator[EmulatedCluster]:
    with EmulatedCluster.running() as running:
        running.put(_dynamic_slice())
        yield running


@pytest.fixture
def dynamic_pool(demo_org: DemoOrg, emulated: EmulatedCluster) -> NodePool:
    cluster = demo_org.cluster
    cluster.backend, cluster.api_endpoint, cluster.device_api = ClusterBackend.KUBERNETES, emulated.url, DeviceApi.DRA
    cluster.save(update_fields=["backend", "api_endpoint", "device_api"])
    pool = NodePoolFactory(
        cluster=cluster,
        name="a100-dyn",
        gpu_model=GpuModel.objects.get(name="A100-40GB"),
        node_count=1,
        gpus_per_node=2,
        sharing_mode=SharingMode.MIG,
        mig_devices={"1g.5gb": 7},
        dynamic_mig=True,
    )
    result = sync_inventory(cluster.pk)
    assert not result[cluster.name].startswith("error"), result
    return NodePool.objects.select_related("cluster", "gpu_model").get(pk=pool.pk)


def _mig_request(demo_org: DemoOrg, pool: NodePool, profile: str) -> GpuRequest:
    """A request for one ``profile`` instance on the pool, its frozen spec as the decision framework writes it."""
    return GpuRequestFactory(
        team=demo_org.team,
        cluster=pool.cluster,
        node_pool=pool,
        status=RequestStatus.PENDING_APPROVAL,
        gpu_memory_gb=4,
        spec={
            "strategy": "mig",
            "resource_name": f"nvidia.com/mig-{profile}",
            "quantity": 1,
            "replicas": 1,
            "gpu_model": "A100-40GB",
            "mig_profile": profile,
            "time_slice_replicas": None,
            "node_selector": {"nvidia.com/gpu.product": "NVIDIA-A100-SXM4-40GB"},
        },
        resource_name=f"nvidia.com/mig-{profile}",
        resource_units=1,
    )


def _admit(demo_org: DemoOrg, pool: NodePool, profile: str) -> GpuRequest:
    request = _mig_request(demo_org, pool, profile)
    with transaction.atomic():
        require_pool_capacity(request)
        GpuRequest.objects.filter(pk=request.pk).update(status=RequestStatus.APPROVED)
    request.refresh_from_db()
    return request


def _placed(request: GpuRequest) -> list[str]:
    return list(DynamicMigInstance.objects.filter(request=request).values_list("gpu_uuid", flat=True))


def test_inventory_keeps_the_gpus_the_policy_chooses_among(dynamic_pool: NodePool) -> None:
    assert dynamic_pool.observed_dra["gpus"] == [{"node": NODE, "uuid": GPU_A}, {"node": NODE, "uuid": GPU_B}]
    assert dynamic_pool.observed_dra["devices"] == {f"mig-{p}": 2 * n for p, n in sorted(PLACEMENTS.items())}


def test_approvals_fill_a_partitioned_gpu_keep_one_whole_and_refuse_what_fits_nowhere(
    demo_org: DemoOrg, dynamic_pool: NodePool
) -> None:
    first = _admit(demo_org, dynamic_pool, "3g.20gb")
    second = _admit(demo_org, dynamic_pool, "1g.5gb")
    assert _placed(first) == _placed(second) == [GPU_A]  # the partitioned GPU first; GPU B stays whole
    whole = _admit(demo_org, dynamic_pool, "7g.40gb")
    assert _placed(whole) == [GPU_B]
    late = _mig_request(demo_org, dynamic_pool, "3g.20gb")
    with pytest.raises(ValidationError) as refused, transaction.atomic():
        require_pool_capacity(late)
    assert "No GPU of node pool" in str(refused.value) and "3g.20gb" in str(refused.value)
    assert not DynamicMigInstance.objects.filter(request=late).exists()
    # Released: its instance no longer counts, and the same request now fits on GPU B.
    GpuRequest.objects.filter(pk=whole.pk).update(status=RequestStatus.RELEASED)
    with transaction.atomic():
        require_pool_capacity(late)
    assert _placed(late) == [GPU_B]


def test_the_claim_selects_a_slice_of_the_gpu_the_policy_chose(demo_org: DemoOrg, dynamic_pool: NodePool) -> None:
    _admit(demo_org, dynamic_pool, "3g.20gb")
    request = _admit(demo_org, dynamic_pool, "1g.5gb")
    objects = render_request_objects(workload_context(request))
    (claim,) = [obj for obj in objects if obj["kind"] == "ResourceClaimTemplate"]
    validate_dra(claim)
    chosen = matching_devices(claim, devices_from_slices([_dynamic_slice()]))
    assert chosen and {(device.parent_uuid, device.profile) for device in chosen} == {(GPU_A, "1g.5gb")}


def test_off_by_default_the_claim_may_take_any_gpu(demo_org: DemoOrg, dynamic_pool: NodePool) -> None:
    NodePool.objects.filter(pk=dynamic_pool.pk).update(dynamic_mig=False)
    pool = NodePool.objects.select_related("cluster", "gpu_model").get(pk=dynamic_pool.pk)
    assert NodePool._meta.get_field("dynamic_mig").default is False
    request = _admit(demo_org, pool, "1g.5gb")
    assert _placed(request) == []
    objects = render_request_objects(workload_context(request))
    (claim,) = [obj for obj in objects if obj["kind"] == "ResourceClaimTemplate"]
    chosen = matching_devices(claim, devices_from_slices([_dynamic_slice()]))
    assert {device.parent_uuid for device in chosen} == {GPU_A, GPU_B}


def test_the_pool_page_shows_the_policy_beside_the_driver_report(
    demo_org: DemoOrg, dynamic_pool: NodePool, client
) -> None:
    first = _admit(demo_org, dynamic_pool, "3g.20gb")
    client.force_login(demo_org.platform_admin)
    page = client.get(reverse("allocations:mig-pool", args=[dynamic_pool.cluster.name, dynamic_pool.name]))
    assert page.status_code == 200
    html = page.content.decode()
    assert 'id="dynamic-policy"' in html and 'id="dynamic-driver"' in html and "alpha upstream" in html
    policy = html[html.index('id="dynamic-policy"') : html.index('id="dynamic-driver"')]
    assert GPU_A in policy and "1\u00d7 3g.20gb" in policy and f"#{first.pk}" in policy
    # The next 1g.5gb joins the partitioned GPU; the next 7g.40gb has to open the whole one.
    gpu_a, gpu_b = f"{NODE}/{GPU_A}", f"{NODE}/{GPU_B}"
    assert f'<code>1g.5gb</code>: <code title="{gpu_a}">{gpu_a}</code></li>' in policy
    assert f'<code>7g.40gb</code>: <code title="{gpu_b}">{gpu_b}</code> <span class="muted">(opens a whole' in policy
    driver = html[html.index('id="dynamic-driver"') :]
    assert "2 GPUs of A100-40GB" in driver and '<code>mig-1g.5gb</code></td><td class="num">14' in driver
    assert 'id="new-plan"' not in html  # nothing to plan: no static layout
    with pytest.raises(ValidationError, match="no layout to plan"):
        mig_plan_create(acting_user=demo_org.approver, pool=dynamic_pool)
