"""A cluster's own objects through the GitOps gateway: the beat task writes them (one file each), idempotently, and a
cluster that cannot be rendered does not stop the others; a request on a Kueue cluster carries its team's queue."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from allocations.clusters.tasks import apply_cluster_objects
from allocations.models import ClusterScheduler, NodePool, Quota
from allocations.requests.services import gpu_request_approve, gpu_request_submit
from tests.factories import ClusterFactory, NodePoolFactory, QuotaFactory

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def gitops_root(settings, tmp_path: Path) -> Path:
    settings.PORTAL_GITOPS_ROOT = tmp_path / "gitops"
    return settings.PORTAL_GITOPS_ROOT


@pytest.fixture
def kueue_demo(demo_org):
    demo_org.cluster.scheduler = ClusterScheduler.KUEUE
    demo_org.cluster.save()
    Quota.objects.all().delete()
    QuotaFactory(team=demo_org.team, cluster=demo_org.cluster, limit=8, borrowing_limit=2)
    QuotaFactory(team=demo_org.other_team, node_pool=demo_org.pool, limit=4)
    return demo_org


def test_the_task_writes_each_object_once_and_a_second_run_changes_nothing(gitops_root, kueue_demo) -> None:
    assert apply_cluster_objects() == {"demo": "15 objects applied, 0 drifted"}
    tree = gitops_root / "demo"
    files = {str(p.relative_to(tree)) for p in tree.rglob("*.yaml")}
    assert {
        "cluster/clusterqueues/vision.yaml",
        "cluster/clusterqueues/nlp.yaml",
        "cluster/resourceflavors/h100.yaml",
        "cluster/workloadpriorityclasses/gpu-portal-tier2-batch.yaml",
        "cluster/priorityclasses/gpu-portal-tier2-batch.yaml",
        "namespaces/team-vision/localqueue-default.yaml",
        "namespaces/gpu-operator/configmap-gpu-portal-device-plugin-config.yaml",
        "namespaces/gpu-operator/configmap-gpu-portal-mig-parted-config.yaml",
    } <= files
    queue = yaml.safe_load((tree / "cluster/clusterqueues/vision.yaml").read_text())
    assert queue["spec"]["resourceGroups"][0]["flavors"][0]["resources"][0]["borrowingLimit"] == 2
    stamps = {p: p.stat().st_mtime_ns for p in tree.rglob("*.yaml")}
    assert apply_cluster_objects(kueue_demo.cluster.pk) == {"demo": "15 objects applied, 0 drifted"}
    assert {p: p.stat().st_mtime_ns for p in tree.rglob("*.yaml")} == stamps


def test_a_cluster_that_cannot_be_rendered_is_reported_and_skipped(gitops_root, kueue_demo) -> None:
    broken = ClusterFactory(name="broken")
    pool = NodePoolFactory(cluster=broken, name="a100")
    NodePool.objects.filter(pk=pool.pk).update(sharing_mode="mig", mig_devices={"7g.80gb": 1, "1g.10gb": 1})
    results = apply_cluster_objects()
    assert results["demo"].startswith("15 objects applied")
    assert results["broken"].startswith("error: ")
    assert not (gitops_root / "broken").exists()


def test_a_request_on_a_kueue_cluster_brings_its_teams_queue(
    gitops_root, kueue_demo, django_capture_on_commit_callbacks
):
    request = gpu_request_submit(
        command=["python", "main.py"],
        acting_user=kueue_demo.member,
        team=kueue_demo.team,
        name="train",
        profile_data={"workload_type": "training", "gpu_memory_gb": 40, "sla_tier": "tier2_batch"},
    )
    with django_capture_on_commit_callbacks(execute=True):
        gpu_request_approve(request=request, acting_user=kueue_demo.approver)
    request.refresh_from_db()
    kinds = [(o["kind"], o["metadata"]["name"]) for o in request.manifests]
    assert ("ClusterQueue", "vision") in kinds and ("ClusterQueue", "nlp") not in kinds
    assert (
        kinds.index(("ClusterQueue", "vision"))
        < kinds.index(("LocalQueue", "default"))
        < kinds.index(("Job", f"gpr-{request.pk}"))
    )
    job = yaml.safe_load((gitops_root / "demo" / f"namespaces/team-vision/job-gpr-{request.pk}.yaml").read_text())
    assert job["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] == "default"


@pytest.fixture
def kai_demo(demo_org):
    demo_org.cluster.scheduler = ClusterScheduler.KAI
    demo_org.cluster.save()
    Quota.objects.all().delete()
    QuotaFactory(team=demo_org.team, cluster=demo_org.cluster, limit=8, borrowing_limit=2)
    QuotaFactory(team=demo_org.other_team, node_pool=demo_org.pool, limit=4)
    return demo_org


def test_a_kai_cluster_writes_a_parent_and_team_queues_and_its_workloads_name_them(
    gitops_root, kai_demo, django_capture_on_commit_callbacks
) -> None:
    apply_cluster_objects()
    tree = gitops_root / "demo"
    files = {str(p.relative_to(tree)) for p in tree.rglob("*.yaml")}
    assert {"cluster/queues/gpu-portal.yaml", "cluster/queues/vision.yaml", "cluster/queues/nlp.yaml"} <= files
    assert not any("clusterqueues" in name for name in files)
    vision = yaml.safe_load((tree / "cluster/queues/vision.yaml").read_text())
    # Nominal 8 GPUs, 2 more borrowable: KAI's quota and limit, in GPUs.
    assert vision["spec"]["parentQueue"] == "gpu-portal"
    assert vision["spec"]["resources"]["gpu"] == {"quota": 8, "limit": 10, "overQuotaWeight": 1}
    nlp = yaml.safe_load((tree / "cluster/queues/nlp.yaml").read_text())
    assert nlp["spec"]["resources"]["gpu"] == {"quota": 4, "limit": 4, "overQuotaWeight": 0}

    request = gpu_request_submit(
        command=["python", "main.py"],
        acting_user=kai_demo.member,
        team=kai_demo.team,
        name="train",
        profile_data={"workload_type": "training", "gpu_memory_gb": 40, "sla_tier": "tier2_batch"},
    )
    with django_capture_on_commit_callbacks(execute=True):
        gpu_request_approve(request=request, acting_user=kai_demo.approver)
    request.refresh_from_db()
    kinds = [(o["kind"], o["metadata"]["name"]) for o in request.manifests]
    assert kinds[:2] == [("Queue", "gpu-portal"), ("Queue", "vision")]
    job = yaml.safe_load((tree / f"namespaces/team-vision/job-gpr-{request.pk}.yaml").read_text())
    pod = job["spec"]["template"]
    assert pod["spec"]["schedulerName"] == "kai-scheduler"
    assert pod["metadata"]["labels"]["kai.scheduler/queue"] == "vision"
    assert "kueue.x-k8s.io/queue-name" not in job["metadata"]["labels"]
