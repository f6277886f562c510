"""A PriorityClass rendered with another value than the cluster's: the API server refuses to change it in place, so
the gateway deletes it and creates it again (pods already admitted keep the priority they were given)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from allocations.clusters.gateways.kubernetes import KubernetesGateway
from gpucore.manifests import render_priority_classes
from gpucore.sla import DEFAULT_TIERS
from tests.integration.k8s_emulator import EmulatedCluster

pytestmark = pytest.mark.integration

TIER2 = "gpu-portal-tier2-batch"


@pytest.fixture
def cluster() -> Iterator[EmulatedCluster]:
    with EmulatedCluster.running() as running:
        yield running


def test_a_priority_class_of_another_value_is_replaced(cluster: EmulatedCluster) -> None:
    gateway = KubernetesGateway.connect(host=cluster.url, token="test-token")
    # What an earlier release rendered for tier 2: a lower value than tier 1's, so tier 1 could evict it.
    old = {
        "apiVersion": "scheduling.k8s.io/v1",
        "kind": "PriorityClass",
        "metadata": {"name": TIER2, "labels": {"app.kubernetes.io/managed-by": "gpu-portal"}},
        "value": 100_000,
        "preemptionPolicy": "PreemptLowerPriority",
    }
    cluster.put(old)
    result = gateway.apply(render_priority_classes(DEFAULT_TIERS))
    assert TIER2 in {ref.name for ref in result.drifted}
    assert (
        cluster.get("PriorityClass", TIER2)["value"]
        == cluster.get("PriorityClass", "gpu-portal-tier1-realtime")["value"]
    )
    methods = [(r.method.value, r.name) for r in cluster.requests if r.name == TIER2]
    assert ("DELETE", TIER2) in methods
    # Once replaced, a second apply changes nothing.
    assert gateway.apply(render_priority_classes(DEFAULT_TIERS)).drifted == ()
