"""KAI Scheduler: a cluster with ``scheduler: kai`` renders a parent Queue and one leaf Queue per team, validated
against KAI's Queue CRD (crd_schemas/queue.v2.json), and every workload pod is handed to kai-scheduler with its
queue."""

from __future__ import annotations

from decimal import Decimal

import pytest

from gpucore.catalog import BUILTIN_CATALOG
from gpucore.manifests import ClusterContext, ManifestError, TeamContext, render_cluster_objects, render_request_objects
from gpucore.manifests.kai import KaiQueueContext
from gpucore.sla import DEFAULT_TIERS
from tests.gpucore.manifests import cases as mc
from tests.gpucore.manifests.kueue_validation import kueue_errors

VISION = TeamContext("vision", "team-vision", kai_queue="vision")
NLP = TeamContext("nlp", "team-nlp", kai_queue="nlp")


def kai_cluster() -> ClusterContext:
    return ClusterContext(
        name="gpu-west",
        scheduler="kai",
        pools=[mc.pool_for(BUILTIN_CATALOG.get("H100-80GB"), "dedicated")],
        tiers=DEFAULT_TIERS,
        kai_queues=[
            KaiQueueContext(team=VISION, gpu_quota=Decimal(8), gpu_limit=Decimal(12), over_quota_weight=2),
            # MIG slices and time-sliced shares count as the fraction of a GPU they bill.
            KaiQueueContext(team=NLP, gpu_quota=Decimal("3.5"), gpu_limit=None),
        ],
    )


def test_a_kai_cluster_renders_a_parent_and_one_leaf_queue_per_team() -> None:
    objects = render_cluster_objects(kai_cluster())
    queues = {obj["metadata"]["name"]: obj for obj in objects if obj["kind"] == "Queue"}
    assert list(queues) == ["gpu-portal", "vision", "nlp"]
    for queue in queues.values():
        assert queue["apiVersion"] == "scheduling.run.ai/v2"
        assert kueue_errors(queue) == [], queue
        mc.check_names_and_labels(queue)
    assert "parentQueue" not in queues["gpu-portal"]["spec"]
    vision, nlp = queues["vision"]["spec"], queues["nlp"]["spec"]
    assert vision["parentQueue"] == nlp["parentQueue"] == "gpu-portal"
    assert vision["resources"]["gpu"] == {"quota": 8, "limit": 12, "overQuotaWeight": 2}
    assert nlp["resources"]["gpu"] == {"quota": 3.5, "limit": -1, "overQuotaWeight": 1}
    # Only GPUs are budgeted by KAI; CPU and memory are the namespace quota's business.
    assert vision["resources"]["cpu"] == {"quota": 0, "limit": -1, "overQuotaWeight": 1}
    # No Kueue objects on a KAI cluster.
    assert not any(obj["apiVersion"].startswith("kueue.x-k8s.io/") for obj in objects)


def test_the_queue_schema_catches_what_kai_would_refuse() -> None:
    (_, vision, _) = [obj for obj in render_cluster_objects(kai_cluster()) if obj["kind"] == "Queue"]
    bad = {**vision, "spec": {**vision["spec"], "resources": {"gpu": {"quota": "eight"}}}}
    assert any("quota" in error for error in kueue_errors(bad))
    misspelt = {**vision, "spec": {**vision["spec"], "parent": "gpu-portal"}}
    assert any("parent" in error for error in kueue_errors(misspelt))


@pytest.mark.parametrize("workload_type", ["training", "realtime_inference", "development", "batch_inference"])
def test_every_workload_pod_goes_to_kai_with_its_queue(workload_type: str) -> None:
    team = TeamContext("vision", "team-vision", {"nvidia.com/gpu": 16}, kai_queue="vision")
    objects = render_request_objects(mc.context("H100-80GB", "dedicated", workload_type, team=team))
    for obj in objects:
        mc.validate(obj)
    work = mc.workload(objects)
    template = mc.pod_template(work)
    assert template["spec"]["schedulerName"] == "kai-scheduler"
    for labels in (template["metadata"]["labels"], work["metadata"]["labels"]):
        assert labels["kai.scheduler/queue"] == "vision"
        # Portal priorities are all >= 100, which KAI would read as non-preemptible: the tier says it.
        assert labels["kai.scheduler/preemptibility"] == "non-preemptible"
    assert not any(key.startswith("kueue.x-k8s.io/") for key in work["metadata"]["labels"])


def test_a_preemptible_tier_is_preemptible_for_kai() -> None:
    team = TeamContext("vision", "team-vision", {"nvidia.com/gpu": 16}, kai_queue="vision")
    ctx = mc.context("T4", "time-slicing", "development", team=team, tier=mc.TIER3)
    labels = mc.pod_template(mc.workload(render_request_objects(ctx)))["metadata"]["labels"]
    assert labels["kai.scheduler/preemptibility"] == "preemptible"


def test_without_kai_no_scheduler_name_or_queue() -> None:
    template = mc.pod_template(mc.workload(render_request_objects(mc.context("H100-80GB", "dedicated", "training"))))
    assert "schedulerName" not in template["spec"]
    assert "kai.scheduler/queue" not in template["metadata"]["labels"]


def test_bad_kai_inputs_are_refused_with_the_field() -> None:
    with pytest.raises(ManifestError, match="Kueue or KAI"):
        TeamContext("vision", "team-vision", cluster_queue="vision", kai_queue="vision")
    with pytest.raises(ManifestError, match="below its quota"):
        KaiQueueContext(team=VISION, gpu_quota=Decimal(8), gpu_limit=Decimal(4))
    with pytest.raises(ManifestError, match=">= 0"):
        KaiQueueContext(team=VISION, gpu_quota=Decimal(-1))
    with pytest.raises(ManifestError, match="unique"):
        render_cluster_objects(
            ClusterContext(
                name="x",
                scheduler="kai",
                kai_queues=[KaiQueueContext(team=VISION, gpu_quota=1), KaiQueueContext(team=VISION, gpu_quota=2)],
            )
        )
