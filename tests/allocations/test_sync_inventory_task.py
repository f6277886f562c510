"""The inventory sync task: every Kubernetes cluster, or just the one asked for; one failure skips only its cluster."""

import pytest

from allocations.clusters.tasks import sync_inventory
from tests.factories import ClusterFactory

pytestmark = pytest.mark.django_db

NOTHING_LISTENS = "http://127.0.0.1:9"  # the discard port: connection refused at once on loopback


def test_one_cluster_or_all_and_failures_are_reported_per_cluster() -> None:
    first = ClusterFactory(name="alpha", backend="kubernetes", api_endpoint=NOTHING_LISTENS)
    ClusterFactory(name="beta", backend="kubernetes", api_endpoint=NOTHING_LISTENS)
    ClusterFactory(name="tree", backend="gitops")  # no nodes to read

    only_first = sync_inventory(first.pk)
    assert set(only_first) == {"alpha"}
    assert only_first["alpha"].startswith("error:")

    assert set(sync_inventory()) == {"alpha", "beta"}
