"""A Kueue cluster end to end against the API server emulator over real HTTP (the official client, server-side apply):
the cluster receives its Kueue objects, and a two-pod training request its queue, headless Service and queued Job.

What the emulator cannot prove (admission by Kueue itself, CEL rules, defaulting) is covered offline by the schema
tests (tests/gpucore/manifests/test_kueue.py); here every live object is validated again as the server stored it.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import kubernetes_validate
import pytest

from allocations.clusters.gateways.base import PermanentGatewayError
from allocations.clusters.rendering import cluster_objects_apply
from allocations.models import ClusterBackend, ClusterScheduler, Quota, RequestStatus
from allocations.requests.services import gpu_request_approve, gpu_request_submit
from tests.factories import QuotaFactory
from tests.gpucore.manifests.kueue_validation import validate_kueue
from tests.integration.k8s_emulator import EmulatedCluster

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]

SERVER_FIELDS = ("uid", "creationTimestamp", "resourceVersion")


@pytest.fixture
def emulated() -> Iterator[EmulatedCluster]:
    with EmulatedCluster.running() as running:
        yield running


def on_emulator(org, url: str) -> None:
    """Point the demo cluster at the emulator, run it with Kueue, and give both teams cluster quotas."""
    cluster = org.cluster
    cluster.backend, cluster.api_endpoint, cluster.scheduler = ClusterBackend.KUBERNETES, url, ClusterScheduler.KUEUE
    cluster.full_clean()
    cluster.save()
    Quota.objects.all().delete()
    QuotaFactory(team=org.team, cluster=cluster, limit=8, borrowing_limit=4)
    QuotaFactory(team=org.other_team, cluster=cluster, limit=4, lending_limit=4)


def as_sent(obj: dict[str, Any]) -> dict[str, Any]:
    """A live object without the fields the server adds, to validate what the portal wrote."""
    meta = {k: v for k, v in obj["metadata"].items() if k not in SERVER_FIELDS}
    return {**obj, "metadata": meta}


def validate_live(obj: dict[str, Any]) -> None:
    """Kueue and JobSet kinds against their CRDs' schemas, the rest against Kubernetes 1.30 and 1.33 (strict)."""
    if obj["apiVersion"].startswith(("kueue.x-k8s.io/", "jobset.x-k8s.io/")):
        validate_kueue(as_sent(obj))
    else:
        for version in ("1.30.0", "1.33.0"):
            kubernetes_validate.validate(as_sent(obj), version, strict=True)


def test_a_kueue_cluster_receives_its_queues_and_a_gang_of_two_training_pods(
    demo_org, emulated: EmulatedCluster, django_capture_on_commit_callbacks
) -> None:
    on_emulator(demo_org, emulated.url)

    result = cluster_objects_apply(cluster=demo_org.cluster)

    assert {ref.kind for ref in result.applied} >= {"ResourceFlavor", "ClusterQueue", "LocalQueue"}
    # Every cluster object as the server stored it validates: Kueue's schemas and CEL rules, Kubernetes 1.30 and 1.33.
    for ref in result.applied:
        stored = emulated.get(ref.kind, ref.name, ref.namespace)
        assert stored, f"{ref.kind} {ref.name} was not stored"
        validate_live(stored)
    flavor = emulated.get("ResourceFlavor", "h100")
    assert flavor["spec"]["nodeLabels"]["nvidia.com/gpu.product"] == "NVIDIA-H100-80GB-HBM3"
    queue = emulated.get("ClusterQueue", "vision")
    assert queue["spec"]["cohortName"] == "demo"
    (resources,) = [flavor["resources"] for flavor in queue["spec"]["resourceGroups"][0]["flavors"]]
    assert resources == [{"name": "nvidia.com/gpu", "nominalQuota": 8, "borrowingLimit": 4}]
    assert emulated.get("LocalQueue", "default", "team-nlp")["spec"] == {"clusterQueue": "nlp"}
    assert (
        emulated.get("WorkloadPriorityClass", "gpu-portal-tier3-development")["value"]
        < emulated.get("WorkloadPriorityClass", "gpu-portal-tier1-realtime")["value"]
    )

    request = gpu_request_submit(
        command=["python", "main.py"],
        acting_user=demo_org.member,
        team=demo_org.team,
        name="ddp",
        profile_data={"workload_type": "training", "gpu_memory_gb": 40, "replicas": 2, "sla_tier": "tier2_batch"},
    )
    with django_capture_on_commit_callbacks(execute=True):
        gpu_request_approve(request=request, acting_user=demo_org.approver)
    request.refresh_from_db()
    # No pods yet: Kueue holds the Job (suspended) until the whole gang fits; the portal reports it Pending.
    assert request.status == RequestStatus.PROVISIONING, request.status_detail
    assert request.status_detail.startswith("Pending")

    name = f"gpr-{request.pk}"
    jobset = emulated.get("JobSet", name, "team-vision")
    assert jobset["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] == "default"
    assert jobset["metadata"]["labels"]["kueue.x-k8s.io/priority-class"] == "gpu-portal-tier2-batch"
    job = jobset["spec"]["replicatedJobs"][0]["template"]
    assert job["spec"]["completionMode"] == "Indexed" and job["spec"]["parallelism"] == 2
    assert jobset["spec"]["network"]["subdomain"] == name
    service = emulated.get("Service", name, "team-vision")
    assert service["spec"]["clusterIP"] == "None"
    env = {item["name"]: item.get("value") for item in job["spec"]["template"]["spec"]["containers"][0]["env"]}
    assert env["MASTER_ADDR"] == f"{name}-worker-0-0.{name}" and env["WORLD_SIZE"] == "2"

    # On the wire: the team's queue is applied before the JobSet that names it.
    patches = [r.url.path for r in emulated.requests if r.method.value == "PATCH"]
    assert patches.index("/apis/kueue.x-k8s.io/v1beta2/clusterqueues/vision") < patches.index(
        f"/apis/jobset.x-k8s.io/v1alpha2/namespaces/team-vision/jobsets/{name}"
    )
    live = [emulated.get(o["kind"], o["metadata"]["name"], o["metadata"].get("namespace")) for o in request.manifests]
    assert all(live)
    for obj in live:
        validate_live(obj)


def test_a_cluster_without_kueue_installed_is_told_so(demo_org) -> None:
    with EmulatedCluster.running(serve_kueue=False) as emulated:
        on_emulator(demo_org, emulated.url)
        with pytest.raises(
            PermanentGatewayError, match=r"does not serve WorkloadPriorityClass in kueue\.x-k8s\.io/v1beta2"
        ):
            cluster_objects_apply(cluster=demo_org.cluster)
