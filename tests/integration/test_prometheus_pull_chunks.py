"""Against a real Prometheus: a pull whose samples budget allows five hours a read reads a day in five chunks and
writes exactly the rows one read of the whole day writes."""

from __future__ import annotations

import pytest

from tests.integration.test_prometheus_ingest import org, rig, snapshot  # noqa: F401 - fixtures

pytestmark = [pytest.mark.integration, pytest.mark.prometheus, pytest.mark.django_db]


def test_a_day_read_in_bounded_chunks_writes_the_same_rows(rig, org, settings) -> None:  # noqa: F811
    from allocations.models import GpuModel, NodePool
    from billing.metering.services import utilization_pull

    NodePool.objects.create(
        cluster=org.cluster,
        name="h100",
        gpu_model=GpuModel.objects.get(name="H100-80GB"),
        node_count=1,
        gpus_per_node=2,
    )
    settings.BILLING_PULL_MAX_SAMPLES_PER_QUERY = 10**9
    whole = utilization_pull(cluster=org.cluster, start=rig.hour(0), end=rig.hour(24), now=rig.now)
    rows = snapshot(org.cluster)
    settings.BILLING_PULL_MAX_SAMPLES_PER_QUERY = 2 * 60 * 5  # 2 GPUs: five hours a read
    chunked = utilization_pull(cluster=org.cluster, start=rig.hour(0), end=rig.hour(24), now=rig.now)
    assert (whole.reads, chunked.reads) == (1, 5)
    assert (chunked.hours, chunked.rows) == (whole.hours, whole.rows) == (24, len(rows))
    assert snapshot(org.cluster) == rows
