"""What the SLA tiers promise, as the rendered pods keep it: tier-1 serving replicas spread over nodes."""

from __future__ import annotations

import pytest

from gpucore.catalog import BUILTIN_CATALOG
from gpucore.manifests import render_request_objects
from tests.gpucore.manifests import cases as mc

VERSIONS = (*mc.KUBERNETES_VERSIONS, "1.35.0")


def _deployment_pod_spec(workload_type: str, replicas: int, tier) -> dict:
    spec = mc.spec_for(BUILTIN_CATALOG.get("H100-80GB"), "dedicated", workload_type, replicas=replicas)
    objects = render_request_objects(mc.context("H100-80GB", "dedicated", workload_type, spec=spec, tier=tier))
    for obj in objects:
        mc.validate(obj, VERSIONS)
    return mc.workload(objects)["spec"]["template"]["spec"]


def test_tier1_serving_replicas_spread_over_at_least_two_nodes() -> None:
    (constraint,) = _deployment_pod_spec("realtime_inference", 2, mc.TIER1)["topologySpreadConstraints"]
    assert constraint["topologyKey"] == "kubernetes.io/hostname"
    assert constraint["whenUnsatisfiable"] == "DoNotSchedule"
    assert (constraint["maxSkew"], constraint["minDomains"]) == (1, 2)
    assert constraint["labelSelector"] == {"matchLabels": {"gpu-portal/request": "42"}}
    # The pods' own labels match the selector, or the constraint would count nothing.
    objects = render_request_objects(mc.context("H100-80GB", "dedicated", "realtime_inference", tier=mc.TIER1))
    labels = mc.workload(objects)["spec"]["template"]["metadata"]["labels"]
    assert labels["gpu-portal/request"] == "42"


@pytest.mark.parametrize(
    ("workload_type", "replicas", "tier"),
    [
        ("realtime_inference", 1, mc.TIER1),  # one replica: nothing to spread
        ("realtime_inference", 2, mc.TIER2),  # 99.9 % is not promised across node failures
        ("development", 1, mc.TIER1),
    ],
)
def test_other_deployments_are_not_spread(workload_type: str, replicas: int, tier) -> None:
    assert "topologySpreadConstraints" not in _deployment_pod_spec(workload_type, replicas, tier)


def test_a_tier1_training_job_of_one_pod_stays_one_plain_job() -> None:
    spec = mc.spec_for(BUILTIN_CATALOG.get("H100-80GB"), "dedicated", "training", replicas=1)
    objects = render_request_objects(mc.context("H100-80GB", "dedicated", "training", spec=spec, tier=mc.TIER1))
    for obj in objects:
        mc.validate(obj, VERSIONS)
    job = mc.workload(objects)
    assert job["kind"] == "Job"
    assert (job["spec"]["completions"], job["spec"]["parallelism"]) == (1, 1)
    assert "completionMode" not in job["spec"]
    assert mc.by_kind(objects, "PodDisruptionBudget") == [] and mc.by_kind(objects, "Service") == []
