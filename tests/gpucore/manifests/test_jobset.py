"""A gang on a Kueue cluster with topology-aware scheduling: the pool's Topology, its ResourceFlavor naming it, and the
JobSet's pod set asking for one domain of the pool's level (crd_schemas/ and kueue_schemas/ validate them)."""

from __future__ import annotations

import dataclasses

import pytest

from gpucore.catalog import BUILTIN_CATALOG
from gpucore.manifests import (
    ClusterContext,
    ClusterQueueContext,
    FlavorQuota,
    ManifestError,
    TeamContext,
    render_cluster_objects,
    render_request_objects,
)
from gpucore.manifests.jobset import PREFERRED_TOPOLOGY_ANNOTATION, REQUIRED_TOPOLOGY_ANNOTATION
from gpucore.sla import DEFAULT_TIERS
from tests.gpucore.manifests import cases as mc
from tests.gpucore.manifests.kueue_validation import kueue_errors

BLOCK = "cloud.google.com/gce-topology-block"
H100 = BUILTIN_CATALOG.get("H100-80GB")


def _pool(*, required: bool):
    return dataclasses.replace(mc.pool_for(H100, "dedicated"), topology_level=BLOCK, topology_required=required)


def _gang(pool, *, kueue: bool = True) -> list[dict]:
    team = TeamContext("vision", "team-vision", {"nvidia.com/gpu": 16}, cluster_queue="vision" if kueue else None)
    spec = mc.spec_for(H100, "dedicated", "training", quantity=8, replicas=2)
    return render_request_objects(mc.context("H100-80GB", "dedicated", "training", spec=spec, team=team, pool=pool))


@pytest.mark.parametrize(
    ("required", "annotation"), [(True, REQUIRED_TOPOLOGY_ANNOTATION), (False, PREFERRED_TOPOLOGY_ANNOTATION)]
)
def test_a_gang_asks_kueue_for_one_domain_of_the_pools_level(required: bool, annotation: str) -> None:
    objects = _gang(_pool(required=required))
    for obj in objects:
        mc.validate(obj)
    jobset = mc.workload(objects)
    assert jobset["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] == "default"
    annotations = mc.pod_template(jobset)["metadata"]["annotations"]
    assert annotations[annotation] == BLOCK
    other = PREFERRED_TOPOLOGY_ANNOTATION if required else REQUIRED_TOPOLOGY_ANNOTATION
    assert other not in annotations


def test_no_topology_without_kueue_or_without_a_level() -> None:
    without_kueue = mc.pod_template(mc.workload(_gang(_pool(required=True), kueue=False)))
    without_level = mc.pod_template(mc.workload(_gang(mc.pool_for(H100, "dedicated"))))
    for template in (without_kueue, without_level):
        assert not any(key.startswith("kueue.x-k8s.io/podset-") for key in template["metadata"]["annotations"])


def test_the_kueue_cluster_defines_the_pools_topology_and_its_flavor_names_it() -> None:
    pool = _pool(required=True)
    queue = ClusterQueueContext(
        team=TeamContext("vision", "team-vision"),
        quotas=[FlavorQuota(flavor=pool.name, resource="nvidia.com/gpu", nominal=16)],
    )
    cluster = ClusterContext(name="gpu-east", scheduler="kueue", pools=[pool], tiers=DEFAULT_TIERS, queues=[queue])
    objects = render_cluster_objects(cluster)
    kinds = [obj["kind"] for obj in objects]
    # The Topology exists before the flavor that names it.
    assert kinds.index("Topology") < kinds.index("ResourceFlavor")
    (topology,) = [obj for obj in objects if obj["kind"] == "Topology"]
    (flavor,) = [obj for obj in objects if obj["kind"] == "ResourceFlavor"]
    assert topology["metadata"]["name"] == flavor["spec"]["topologyName"] == pool.name
    # kubernetes.io/hostname is the lowest level (Kueue's rule); the pool's block above it.
    assert topology["spec"]["levels"] == [{"nodeLabel": BLOCK}, {"nodeLabel": "kubernetes.io/hostname"}]
    for obj in (topology, flavor):
        assert kueue_errors(obj) == []
    # The CRD's CEL rules bite: hostname above another level is refused.
    broken = {**topology, "spec": {"levels": [{"nodeLabel": "kubernetes.io/hostname"}, {"nodeLabel": BLOCK}]}}
    assert any("lowest level" in error for error in kueue_errors(broken))


def test_a_topology_level_must_be_a_node_label_key() -> None:
    with pytest.raises(ManifestError, match="topology level"):
        dataclasses.replace(mc.pool_for(H100, "dedicated"), topology_level="not a label!")


def test_the_jobset_schema_refuses_what_the_controller_would() -> None:
    jobset = mc.workload(_gang(_pool(required=True)))
    assert kueue_errors(jobset) == []
    bad = {**jobset, "spec": {**jobset["spec"], "failurePolicy": {"maxRestarts": 3, "restartStrategy": "Sometimes"}}}
    assert any("restartStrategy" in error for error in kueue_errors(bad))
    misspelt = {**jobset, "spec": {**jobset["spec"], "replicatedJob": []}}
    assert any("replicatedJob" in error for error in kueue_errors(misspelt))
