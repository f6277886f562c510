"""The teams' KAI Scheduler queues of a cluster whose scheduler is ``kai``: quotas in GPUs, as chargeback counts them.

A quota is kept per Kubernetes resource (``nvidia.com/gpu``, ``nvidia.com/mig-3g.20gb``, ...); a KAI queue budgets
GPUs. Each unit counts as the GPU share it bills (1 dedicated, 1/replicas time-sliced, the MIG instance's share of its
pool's layout), so a team's KAI quota is the same number of GPUs its bills are made of (docs/dra-and-kai.md).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from decimal import Decimal
from typing import Any

from django.db.models import Q, Sum

from allocations.models import Cluster, NodePool, Quota, SharingMode, Team
from gpucore.catalog import mig_profile_of_resource
from gpucore.manifests import TeamContext
from gpucore.manifests.kai import PARENT_QUEUE, KaiQueueContext
from gpucore.pricing import gpu_share


def resource_gpu_shares(pools: Iterable[NodePool]) -> dict[str, Decimal]:
    """The GPUs one unit of each resource the pools advertise counts as; the largest where pools disagree."""
    shares: dict[str, Decimal] = {}
    for pool in pools:
        model = pool.gpu_model.to_spec()
        for resource in pool.capacity():
            if pool.sharing_mode == SharingMode.MIG:
                share = gpu_share(
                    "mig",
                    model=model,
                    mig_profile=mig_profile_of_resource(resource),
                    layout=pool.mig_layout_holding(mig_profile_of_resource(resource)),
                )
            elif pool.sharing_mode == SharingMode.TIME_SLICING:
                share = gpu_share("time-slicing", model=model, time_slice_replicas=pool.time_slice_replicas)
            else:
                share = Decimal(1)
            # The larger share: a queue's guarantee is never understated.
            shares[resource] = max(shares.get(resource, Decimal(0)), share)
    return shares


def kai_queue_contexts(cluster: Cluster, pools: list[NodePool]) -> list[KaiQueueContext]:
    """One leaf queue per team with a quota that reaches this cluster (team-wide, cluster and pool quotas summed)."""
    shares = resource_gpu_shares(pools)
    scope = Q(cluster__isnull=True, node_pool__isnull=True) | Q(cluster=cluster) | Q(node_pool__cluster=cluster)
    rows = (
        Quota.objects.filter(scope)
        .values("team_id", "resource_name")
        .annotate(total=Sum("limit"), borrowing=Sum("borrowing_limit"))
        .order_by("team_id", "resource_name")
    )
    nominal: dict[int, Decimal] = {}
    borrowing: dict[int, Decimal] = {}
    for row in rows:
        share = shares.get(row["resource_name"])
        if share is None:
            continue  # no pool of this cluster advertises it
        nominal[row["team_id"]] = nominal.get(row["team_id"], Decimal(0)) + row["total"] * share
        borrowing[row["team_id"]] = borrowing.get(row["team_id"], Decimal(0)) + (row["borrowing"] or 0) * share
    teams = Team.objects.filter(pk__in=nominal).order_by("slug")
    return [
        KaiQueueContext(
            team=TeamContext(slug=team.slug, namespace=team.namespace, kai_queue=team.slug),
            gpu_quota=_rounded(nominal[team.pk]),
            gpu_limit=_rounded(nominal[team.pk] + borrowing[team.pk]),
            # Only preemptible-tier work runs over quota (the portal's borrowing rule): a team that may borrow
            # competes for idle GPUs; one that may not gets none of them.
            over_quota_weight=1 if borrowing[team.pk] > 0 else 0,
        )
        for team in teams
    ]


def _rounded(value: Decimal) -> Decimal:
    # KAI reads a JSON number; six decimals, as the GPU share contract writes shares.
    return value.quantize(Decimal("0.000001")).normalize()


def kai_queues_for(objects: Sequence[dict[str, Any]], *, team_slug: str) -> list[dict[str, Any]]:
    """Of a cluster's objects, the KAI queues one team's workload needs: the parent, then the team's own."""
    wanted = (PARENT_QUEUE, team_slug)
    return [o for o in objects if o["kind"] == "Queue" and o["metadata"]["name"] in wanted]
