"""A DRA cluster end to end through the Kubernetes gateway and the API-server emulator over real HTTP: inventory sync
reads the driver's ResourceSlices onto the pool, and an approved request is applied as a ResourceClaimTemplate whose
selectors carry what the driver reported, referenced by the Job's pods."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from allocations.clusters.tasks import sync_inventory
from allocations.models import ClusterBackend, DeviceApi, NodePool
from allocations.requests.services import gpu_request_approve, gpu_request_submit
from tests.factories import DemoOrg
from tests.gpucore.manifests.dra_samples import SLICES, matching_devices
from tests.gpucore.manifests.dra_validation import validate_dra
from tests.integration.k8s_emulator import EmulatedCluster

pytestmark = [pytest.mark.integration, pytest.mark.django_db]

NAMESPACE = "team-vision"


@pytest.fixture
def emulated() -> Iterator[EmulatedCluster]:
    with EmulatedCluster.running() as running:
        yield running


@pytest.fixture
def dra_org(demo_org: DemoOrg, emulated: EmulatedCluster) -> DemoOrg:
    cluster = demo_org.cluster
    cluster.backend, cluster.api_endpoint, cluster.device_api = ClusterBackend.KUBERNETES, emulated.url, DeviceApi.DRA
    cluster.save(update_fields=["backend", "api_endpoint", "device_api"])
    for item in SLICES:
        emulated.put(item)
    return demo_org


def test_inventory_reads_the_drivers_resource_slices_onto_the_pool(dra_org: DemoOrg) -> None:
    result = sync_inventory(dra_org.cluster.pk)

    assert not result[dra_org.cluster.name].startswith("error"), result
    pool = NodePool.objects.get(pk=dra_org.pool.pk)
    assert pool.gpu_model.name == "H100-80GB"
    # Eight whole H100s on one node; what the driver reports, not the nominal 80 GB.
    assert pool.observed_dra["devices"] == {"gpu": 8}
    assert pool.observed_dra["nodes"] == 1
    assert pool.observed_dra["target"]["product_name"] == "NVIDIA H100 80GB HBM3"
    assert pool.observed_dra["target"]["memory_bytes"] == 81559 * 1024 * 1024


def test_an_approved_request_is_applied_as_a_claim_the_pods_reference(
    dra_org: DemoOrg, emulated: EmulatedCluster, django_capture_on_commit_callbacks
) -> None:
    sync_inventory(dra_org.cluster.pk)
    profile = {"workload_type": "training", "gpu_memory_gb": 40, "gpu_count": 4, "sla_tier": "tier2_batch"}
    request = gpu_request_submit(
        command=["python", "main.py"], acting_user=dra_org.member, team=dra_org.team, name="dra", profile_data=profile
    )
    with django_capture_on_commit_callbacks(execute=True):
        gpu_request_approve(request=request, acting_user=dra_org.approver)

    claim = emulated.get("ResourceClaimTemplate", f"gpr-{request.pk}-gpu", NAMESPACE)
    assert claim is not None
    validate_dra(
        {key: claim[key] for key in ("apiVersion", "kind", "metadata", "spec")}
        | {"metadata": {"name": claim["metadata"]["name"], "namespace": NAMESPACE}}
    )
    expressions = [
        s["cel"]["expression"] for s in claim["spec"]["spec"]["devices"]["requests"][0]["exactly"]["selectors"]
    ]
    assert "device.capacity['gpu.nvidia.com'].memory.compareTo(quantity('81559Mi')) >= 0" in expressions
    chosen = matching_devices(claim)
    assert chosen and {device.product_name for device in chosen} == {"NVIDIA H100 80GB HBM3"}
    job = emulated.get("Job", f"gpr-{request.pk}", NAMESPACE)
    pod = job["spec"]["template"]["spec"]
    assert pod["resourceClaims"] == [{"name": "gpu", "resourceClaimTemplateName": f"gpr-{request.pk}-gpu"}]
    assert "nvidia.com/gpu" not in pod["containers"][0]["resources"]["limits"]
    # Billing and quota count the same units as in device-plugin mode.
    request.refresh_from_db()
    assert request.spec["resource_name"] == "nvidia.com/gpu" and request.spec["quantity"] == 4
