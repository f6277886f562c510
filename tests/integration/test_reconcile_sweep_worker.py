"""The reconcile sweep against a real worker and Redis while a cluster is unreachable: no pile of retry chains.

Each minute ``reconcile_requests`` queues ``provision_request`` for every active request. With the cluster's API
server down, each run fails with a transient error and retries with backoff (about 20 minutes in all); before the
sweep checked for a pending chain, every sweep started another one per request, so the broker held ever more
retries of the same requests. The worker and this process share the marker through the Redis cache, as production
shares it (``CACHE_URL``).
"""

from __future__ import annotations

import re
import socket

import pytest
from django.utils import timezone

from allocations.clusters.tasks import expire_requests, reconcile_requests
from allocations.models import ClusterBackend, RequestStatus
from tests.factories import GpuRequestFactory, build_demo_org
from tests.integration.celery_workers import Workers, wait_for, workers  # noqa: F401 (the fixture)

pytestmark = [
    pytest.mark.integration,
    pytest.mark.postgres,
    pytest.mark.redis,
    pytest.mark.django_db(transaction=True),
]


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_the_sweep_starts_no_second_chain_while_a_request_retries(
    workers: Workers,  # noqa: F811 (the fixture imported above)
    settings,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The shared cache of production, in this process and in the worker's.
    settings.CACHES = {
        "default": {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": workers.broker_url}
    }
    monkeypatch.setenv("CACHE_URL", workers.broker_url)
    org = build_demo_org()
    org.cluster.backend = ClusterBackend.KUBERNETES
    org.cluster.api_endpoint = f"http://127.0.0.1:{_closed_port()}"  # nothing listens: unreachable
    org.cluster.gitops_path = ""
    org.cluster.save()
    running = [
        GpuRequestFactory(
            team=org.team,
            requester=org.member,
            status=RequestStatus.ACTIVE,
            cluster=org.cluster,
            node_pool=org.pool,
            activated_at=timezone.now(),
        )
        for _ in range(2)
    ]
    worker = workers.start()

    assert reconcile_requests()["observed"] == 2
    wait_for(lambda: worker.log().count("retry: Retry in") >= 2, "both requests' runs to fail and retry", workers)
    for _ in range(3):  # three more minutes of sweeps while the chains back off
        assert reconcile_requests() == {"requeued": 0, "observed": 0, "torn_down": 0, "already_pending": 2}

    # A message behind whatever the sweeps queued: once the worker has it, it has received all of theirs.
    marker = expire_requests.delay()
    wait_for(lambda: f"allocations.expire_requests[{marker.id}] received" in worker.log(), "the marker", workers)
    chains = set(re.findall(r"Task allocations\.provision_request\[([0-9a-f-]+)\] received", worker.log()))
    assert len(chains) == len(running), workers.logs()
