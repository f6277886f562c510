"""KAI Scheduler objects (``scheduling.run.ai/v2`` ``Queue``) of a cluster whose ``scheduler`` is ``kai``, and the
labels that hand a workload to it. Pure: plain dicts out.

docs/dra-and-kai.md, "KAI Scheduler": one parent queue ``gpu-portal`` and one leaf queue per team (named after its
slug) whose GPU ``quota`` is the team's nominal GPUs on the cluster, ``limit`` the nominal plus the borrowing limit
(``-1``: none), and ``overQuotaWeight`` its share of idle GPUs. Only GPUs are budgeted: CPU and memory are left to the
namespace's ResourceQuota (``quota: 0, limit: -1``, as KAI's quick start does). KAI treats a pod whose priority is 100
or more as non-preemptible, and every portal PriorityClass is above that, so each pod says its preemptibility with
the ``kai.scheduler/preemptibility`` label, from its SLA tier.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from gpucore.manifests.contexts import TeamContext
from gpucore.manifests.naming import MANAGED_BY, MANAGED_BY_LABEL, ManifestError, is_dns_subdomain, is_int, team_labels
from gpucore.sla import SlaTierSpec

KAI_API_VERSION = "scheduling.run.ai/v2"
KAI_SCHEDULER_NAME = "kai-scheduler"
QUEUE_LABEL = "kai.scheduler/queue"
PREEMPTIBILITY_LABEL = "kai.scheduler/preemptibility"
PARENT_QUEUE = "gpu-portal"
UNLIMITED = -1
# CPU (millicores) and memory (MB): no guarantee, no cap from KAI; the namespace's quota and LimitRange hold them.
UNBUDGETED = {"quota": 0, "limit": UNLIMITED, "overQuotaWeight": 1}


@dataclass(frozen=True, slots=True, kw_only=True)
class KaiQueueContext:
    """A team's leaf queue: its nominal GPUs on the cluster (GPU units), its ceiling and its over-quota weight."""

    team: TeamContext
    gpu_quota: Decimal
    # Nominal plus borrowing limit; None: no limit (rendered -1).
    gpu_limit: Decimal | None = None
    over_quota_weight: int = 1

    def __post_init__(self) -> None:
        quota = Decimal(str(self.gpu_quota))
        if not quota.is_finite() or quota < 0:
            raise ManifestError(f"Team '{self.team.slug}': the KAI GPU quota must be >= 0, not {self.gpu_quota!r}.")
        object.__setattr__(self, "gpu_quota", quota)
        if self.gpu_limit is not None:
            limit = Decimal(str(self.gpu_limit))
            if not limit.is_finite() or limit < quota:
                raise ManifestError(
                    f"Team '{self.team.slug}': the KAI GPU limit ({self.gpu_limit}) is below its quota ({quota})."
                )
            object.__setattr__(self, "gpu_limit", limit)
        if not is_int(self.over_quota_weight) or self.over_quota_weight < 0:
            raise ManifestError(f"Team '{self.team.slug}': overQuotaWeight must be a whole number >= 0.")
        if not is_dns_subdomain(self.name):
            raise ManifestError(f"KAI queue name '{self.name}' is not a DNS subdomain.")

    @property
    def name(self) -> str:
        """The leaf queue's name: the team slug."""
        return self.team.kai_queue or self.team.slug


def _number(value: Decimal) -> int | float:
    # The CRD's fields are JSON numbers: whole GPUs stay integers, shares of a GPU (MIG, time-slicing) are decimals.
    return int(value) if value == value.to_integral_value() else float(value)


def render_parent_queue() -> dict[str, Any]:
    """The parent queue every team's queue hangs under: no guarantee, no cap (the cluster's GPUs are the cap)."""
    return {
        "apiVersion": KAI_API_VERSION,
        "kind": "Queue",
        "metadata": {"name": PARENT_QUEUE, "labels": {MANAGED_BY_LABEL: MANAGED_BY}},
        "spec": {
            "displayName": "GPU Portal",
            "resources": {"cpu": dict(UNBUDGETED), "gpu": dict(UNBUDGETED), "memory": dict(UNBUDGETED)},
        },
    }


def render_team_queue(queue: KaiQueueContext) -> dict[str, Any]:
    """A team's leaf queue under ``gpu-portal``: its GPU quota, limit and over-quota weight."""
    gpu = {
        "quota": _number(queue.gpu_quota),
        "limit": UNLIMITED if queue.gpu_limit is None else _number(queue.gpu_limit),
        "overQuotaWeight": queue.over_quota_weight,
    }
    return {
        "apiVersion": KAI_API_VERSION,
        "kind": "Queue",
        "metadata": {"name": queue.name, "labels": team_labels(queue.team.slug)},
        "spec": {
            "displayName": queue.team.slug,
            "parentQueue": PARENT_QUEUE,
            "resources": {"cpu": dict(UNBUDGETED), "gpu": gpu, "memory": dict(UNBUDGETED)},
        },
    }


def render_kai_objects(queues: Iterable[KaiQueueContext]) -> list[dict[str, Any]]:
    """A cluster's KAI queues in apply order: the parent, then one leaf queue per team."""
    queues = list(queues)
    names = [queue.name for queue in queues]
    if PARENT_QUEUE in names or len(set(names)) != len(names):
        raise ManifestError(f"KAI queue names must be unique and not '{PARENT_QUEUE}': {names}.")
    return [render_parent_queue(), *(render_team_queue(queue) for queue in queues)]


def kai_pod_labels(team: TeamContext, tier: SlaTierSpec | None) -> dict[str, str]:
    """The labels that hand a pod (and its workload) to KAI: the team's queue and the tier's preemptibility."""
    if team.kai_queue is None:
        return {}
    preemptible = tier is not None and tier.preemptible
    return {QUEUE_LABEL: team.kai_queue, PREEMPTIBILITY_LABEL: "preemptible" if preemptible else "non-preemptible"}
