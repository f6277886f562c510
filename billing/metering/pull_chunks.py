"""How many hours one Prometheus read of a pull covers, so that no answer outgrows its limits.

Each pull query evaluates one-minute subqueries per device and hour: a read of H hours on a cluster of G GPUs
touches about G x 60 x H samples in Prometheus and answers G x H points per query. Twenty-four hours at a time is
fine for a few hundred GPUs; at 10,000 GPUs it is 14.4 million samples a query and runs into the read timeout. The
chunk is therefore sized from the cluster's GPUs (its node pools) and ``BILLING_PULL_MAX_SAMPLES_PER_QUERY``: between
one hour and a day. (A MIG instance is a series of its own: a fleet of MIG GPUs wants a smaller budget.)
"""

from __future__ import annotations

from django.conf import settings
from django.db.models import F, Sum

from allocations.models import Cluster, NodePool

MAX_CHUNK_HOURS = 24
MINUTES_PER_HOUR = 60
DEFAULT_MAX_SAMPLES_PER_QUERY = 2_000_000


def cluster_gpus(cluster: Cluster) -> int:
    """The GPUs of the cluster's node pools."""
    gpus = NodePool.objects.filter(cluster=cluster).aggregate(n=Sum(F("node_count") * F("gpus_per_node")))["n"]
    return int(gpus or 0)


def pull_chunk_hours(cluster: Cluster, *, devices: int | None = None) -> int:
    """Hours per Prometheus read for this cluster: the most that stay within the samples budget, 1 to 24."""
    budget = int(getattr(settings, "BILLING_PULL_MAX_SAMPLES_PER_QUERY", DEFAULT_MAX_SAMPLES_PER_QUERY))
    devices = cluster_gpus(cluster) if devices is None else devices
    if devices <= 0:
        return MAX_CHUNK_HOURS
    return max(1, min(MAX_CHUNK_HOURS, budget // (devices * MINUTES_PER_HOUR)))
