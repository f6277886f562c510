"""Kueue objects (``kueue.x-k8s.io/v1beta2``) of a cluster whose ``scheduler`` is ``kueue``. Pure: plain dicts out.

docs/kubernetes-and-kueue.md, "Kueue mode": a ``ResourceFlavor`` per node pool, a ``ClusterQueue`` per team (its quotas
per flavor as ``nominalQuota`` with ``borrowingLimit``/``lendingLimit``, in the cluster's cohort), a ``LocalQueue``
named ``default`` in each team namespace and a ``WorkloadPriorityClass`` per SLA tier. Quota semantics follow Kueue's
ClusterQueue concepts page and ``apis/kueue/v1beta2/clusterqueue_types.go`` (docs/reference-sources.md#kueue): a limit
needs a cohort (the CRD's CEL rule says so for ``borrowingLimit``, the webhook for ``lendingLimit``), a lending limit
never exceeds the nominal quota, and every flavor of a resource group lists the group's ``coveredResources`` in the same
order.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from gpucore.manifests.contexts import PoolContext, TeamContext
from gpucore.manifests.jobset import render_kueue_topology
from gpucore.manifests.namespace import SLA_TIER_LABEL, render_namespace
from gpucore.manifests.naming import (
    GPU_RESOURCE,
    MANAGED_BY,
    MANAGED_BY_LABEL,
    PRODUCT_LABEL,
    REPLICAS_LABEL,
    SHARED_PRODUCT_SUFFIX,
    ManifestError,
    is_dns_subdomain,
    is_extended_resource,
    is_int,
    team_labels,
)
from gpucore.sla import SlaTierSpec
from gpucore.vocabulary import SharingMode

KUEUE_API_VERSION = "kueue.x-k8s.io/v1beta2"
QUEUE_NAME_LABEL = "kueue.x-k8s.io/queue-name"
PRIORITY_CLASS_LABEL = "kueue.x-k8s.io/priority-class"
LOCAL_QUEUE_NAME = "default"
NAMESPACE_NAME_LABEL = "kubernetes.io/metadata.name"  # set by the API server on every namespace
# kubebuilder markers of ClusterQueue.spec.resourceGroups[].coveredResources / .flavors.
MAX_COVERED_RESOURCES = 64
MAX_FLAVORS = 64

# Borrowing is for preemptible work only (the portal's quota check lets tier 3 borrow, nothing else), so a team
# reclaiming its own nominal quota may evict any borrower in the cohort: every borrower is preemptible by policy.
# Within a team's own queue nothing is evicted: the portal never admits tiers 1-2 past the nominal quota, and
# 'LowerPriority' would let a tier-1 Job evict the team's tier-2 Jobs, which the tier promises not to do.
PREEMPTION = {
    "reclaimWithinCohort": "Any",
    "borrowWithinCohort": {"policy": "Never"},
    "withinClusterQueue": "Never",
}


@dataclass(frozen=True, slots=True, kw_only=True)
class FlavorQuota:
    """One team's quota of one resource on one flavor (node pool): nominal, and the optional Kueue limits.

    ``borrowing_limit`` ``None`` means the team may not borrow (rendered ``borrowingLimit: 0`` in a cohort: Kueue's
    own ``None``, unlimited borrowing, is never offered, because the portal checks and charges every unit);
    ``lending_limit`` ``None`` means Kueue's default, all unused nominal quota may be lent.
    """

    flavor: str
    resource: str
    nominal: int
    borrowing_limit: int | None = None
    lending_limit: int | None = None

    def __post_init__(self) -> None:
        if not is_dns_subdomain(self.flavor):
            raise ManifestError(f"Flavor name '{self.flavor}' is not a DNS subdomain.")
        if not is_extended_resource(self.resource):
            raise ManifestError(f"Quota resource '{self.resource}' is not an extended resource like 'nvidia.com/gpu'.")
        where = f"{self.resource} on {self.flavor}"
        if not is_int(self.nominal) or self.nominal < 0:
            raise ManifestError(f"nominalQuota of {where} must be a whole number >= 0, not {self.nominal!r}.")
        for name in ("borrowing_limit", "lending_limit"):
            value = getattr(self, name)
            if value is not None and (not is_int(value) or value < 0):
                raise ManifestError(f"{name} of {where} must be a whole number >= 0, not {value!r}.")
        if self.lending_limit is not None and self.lending_limit > self.nominal:
            # The ClusterQueue webhook's words.
            raise ManifestError(f"lendingLimit of {where}: must be less than or equal to the nominalQuota.")


@dataclass(frozen=True, slots=True, kw_only=True)
class ClusterQueueContext:
    """A team's ClusterQueue: the team (namespace) and its quotas per flavor and resource, in flavor order."""

    team: TeamContext
    quotas: Sequence[FlavorQuota] = field(default_factory=tuple)

    def __post_init__(self) -> None:
        if self.team.cluster_queue is None:
            object.__setattr__(self, "team", replace(self.team, cluster_queue=self.team.slug))
        quotas = tuple(self.quotas)
        keys = [(quota.flavor, quota.resource) for quota in quotas]
        if len(set(keys)) != len(keys):
            raise ManifestError(f"Team '{self.team.slug}' has two quotas for one flavor and resource: {keys}.")
        object.__setattr__(self, "quotas", quotas)

    @property
    def name(self) -> str:
        """The ClusterQueue's name: the team slug unless the team names one."""
        return self.team.cluster_queue or self.team.slug


def _meta(name: str, labels: dict[str, str], namespace: str | None = None) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name}
    if namespace is not None:
        meta["namespace"] = namespace
    meta["labels"] = labels
    return meta


def flavor_node_labels(pool: PoolContext) -> dict[str, str]:
    """The node labels that select a pool's nodes, as GPU Feature Discovery and the platform admin labelled them."""
    # The same labels the pool's pods select (workload.node_selector): on a time-sliced node GFD appends -SHARED to
    # the product (unless shared GPUs are renamed) and sets the replicas label. Kueue only assigns a flavor whose
    # nodeLabels agree with the pod's nodeSelector, and injects them into the pod on admission.
    labels = dict(pool.node_labels)
    product = pool.product_label
    if pool.sharing_mode is SharingMode.TIME_SLICING:
        if not pool.rename_by_default:
            product += SHARED_PRODUCT_SUFFIX
        labels[REPLICAS_LABEL] = str(pool.time_slice_replicas)
    labels[PRODUCT_LABEL] = product
    return labels


def render_resource_flavor(pool: PoolContext) -> dict[str, Any]:
    """The ResourceFlavor of a node pool: named after it, its nodes' labels, tolerations of its taints."""
    spec: dict[str, Any] = {"nodeLabels": flavor_node_labels(pool)}
    if pool.topology_level is not None:
        spec["topologyName"] = pool.name  # the pool's Topology (jobset.render_kueue_topology)
    tolerations = []
    for taint in pool.taints:
        if taint.value is None:
            tolerations.append({"key": taint.key, "operator": "Exists", "effect": taint.effect})
        else:
            tolerations.append({"key": taint.key, "operator": "Equal", "value": taint.value, "effect": taint.effect})
    if tolerations:
        # Added to the pods Kueue admits on this flavor; the portal's pods carry them already.
        spec["tolerations"] = tolerations
    return {
        "apiVersion": KUEUE_API_VERSION,
        "kind": "ResourceFlavor",
        "metadata": _meta(pool.name, {MANAGED_BY_LABEL: MANAGED_BY}),
        "spec": spec,
    }


def _resource_quota(quota: FlavorQuota | None, resource: str, cohort: str | None) -> dict[str, Any]:
    entry: dict[str, Any] = {"name": resource, "nominalQuota": quota.nominal if quota is not None else 0}
    if cohort is None:
        if quota is not None and (quota.borrowing_limit is not None or quota.lending_limit is not None):
            # The CRD's CEL rule ('borrowingLimit must be nil when cohort is empty') and the webhook's for lending.
            raise ManifestError(
                f"{resource} on {quota.flavor}: borrowingLimit and lendingLimit must be nil when cohort is empty."
            )
        return entry
    entry["borrowingLimit"] = quota.borrowing_limit if quota is not None and quota.borrowing_limit is not None else 0
    if quota is not None and quota.lending_limit is not None:
        entry["lendingLimit"] = quota.lending_limit
    return entry


def render_cluster_queue(queue: ClusterQueueContext, *, cohort: str | None) -> dict[str, Any]:
    """A team's ClusterQueue: its namespace, the cohort, one resource group with its quotas on each flavor."""
    if cohort is not None and not is_dns_subdomain(cohort):
        raise ManifestError(f"Cohort name '{cohort}' is not a DNS subdomain.")
    flavors: list[str] = []
    covered: list[str] = []
    by_key: dict[tuple[str, str], FlavorQuota] = {}
    for quota in queue.quotas:
        if quota.flavor not in flavors:
            flavors.append(quota.flavor)
        if quota.resource not in covered:
            covered.append(quota.resource)
        by_key[quota.flavor, quota.resource] = quota
    # Whole GPUs first, then MIG profiles and shares by name: a stable order, so a re-apply changes nothing.
    covered.sort(key=lambda resource: (resource != GPU_RESOURCE, resource))
    if len(covered) > MAX_COVERED_RESOURCES or len(flavors) > MAX_FLAVORS:
        raise ManifestError(
            f"Team '{queue.team.slug}': a resource group holds at most {MAX_FLAVORS} flavors and "
            f"{MAX_COVERED_RESOURCES} resources ({len(flavors)} and {len(covered)} asked)."
        )
    spec: dict[str, Any] = {}
    if cohort is not None:
        spec["cohortName"] = cohort
    spec["namespaceSelector"] = {"matchLabels": {NAMESPACE_NAME_LABEL: queue.team.namespace}}
    spec["queueingStrategy"] = "BestEffortFIFO"
    spec["preemption"] = dict(PREEMPTION)
    if flavors:
        # Every flavor lists every covered resource, in coveredResources' order (the CRD's CEL rule and the
        # webhook); a resource the pool does not advertise gets a nominal quota of 0.
        spec["resourceGroups"] = [
            {
                "coveredResources": covered,
                "flavors": [
                    {
                        "name": flavor,
                        "resources": [_resource_quota(by_key.get((flavor, r)), r, cohort) for r in covered],
                    }
                    for flavor in flavors
                ],
            }
        ]
    return {
        "apiVersion": KUEUE_API_VERSION,
        "kind": "ClusterQueue",
        "metadata": _meta(queue.name, team_labels(queue.team.slug)),
        "spec": spec,
    }


def render_local_queue(team: TeamContext) -> dict[str, Any]:
    """The LocalQueue ``default`` in the team's namespace, pointing at the team's ClusterQueue."""
    if team.cluster_queue is None:
        raise ManifestError(f"Team '{team.slug}' has no ClusterQueue: its cluster does not run Kueue.")
    return {
        "apiVersion": KUEUE_API_VERSION,
        "kind": "LocalQueue",
        "metadata": _meta(LOCAL_QUEUE_NAME, team_labels(team.slug), namespace=team.namespace),
        "spec": {"clusterQueue": team.cluster_queue},
    }


def render_workload_priority_class(tier: SlaTierSpec) -> dict[str, Any]:
    """The WorkloadPriorityClass of an SLA tier: Kueue orders and preempts workloads by it."""
    if not is_dns_subdomain(tier.priority_class_name):
        raise ManifestError(f"WorkloadPriorityClass name '{tier.priority_class_name}' is not a DNS subdomain.")
    return {
        "apiVersion": KUEUE_API_VERSION,
        "kind": "WorkloadPriorityClass",
        "metadata": _meta(tier.priority_class_name, {MANAGED_BY_LABEL: MANAGED_BY, SLA_TIER_LABEL: tier.slug}),
        "value": tier.priority_value,
        "description": (tier.description or tier.name)[:2048],
    }


def workload_queue_labels(team: TeamContext, tier: SlaTierSpec | None) -> dict[str, str]:
    """The labels that hand a Job to Kueue: its LocalQueue and its tier's WorkloadPriorityClass (none without Kueue)."""
    if team.cluster_queue is None:
        return {}
    labels = {QUEUE_NAME_LABEL: LOCAL_QUEUE_NAME}
    if tier is not None:
        labels[PRIORITY_CLASS_LABEL] = tier.priority_class_name
    return labels


def render_kueue_objects(
    *,
    pools: Iterable[PoolContext],
    queues: Iterable[ClusterQueueContext],
    tiers: Iterable[SlaTierSpec],
    cohort: str | None,
    local_queues: bool = True,
) -> list[dict[str, Any]]:
    """A cluster's Kueue objects in apply order: priority classes, flavors, ClusterQueues, then each team's LocalQueue.

    With ``local_queues`` each team's Namespace precedes its LocalQueue, so the set applies to an empty cluster.
    """
    pools = list(pools)
    queues = list(queues)
    known = {pool.name for pool in pools}
    objects = [render_workload_priority_class(tier) for tier in tiers]
    objects.extend(render_kueue_topology(pool) for pool in pools if pool.topology_level is not None)
    objects.extend(render_resource_flavor(pool) for pool in pools)
    for queue in queues:
        unknown = sorted({quota.flavor for quota in queue.quotas} - known)
        if unknown:
            raise ManifestError(f"Team '{queue.team.slug}' has quotas on flavors with no node pool: {unknown}.")
        objects.append(render_cluster_queue(queue, cohort=cohort))
    if local_queues:
        for queue in queues:
            objects.extend([render_namespace(queue.team), render_local_queue(queue.team)])
    return objects


def queue_objects_for(
    objects: Sequence[dict[str, Any]], *, team_slug: str, cluster_queue: str | None = None
) -> list[dict[str, Any]]:
    """Of a cluster's Kueue objects, those one team's Job needs first: priority classes, flavors, its ClusterQueue."""
    wanted = cluster_queue or team_slug
    kept = []
    for obj in objects:
        kind = obj["kind"]
        if kind in ("WorkloadPriorityClass", "Topology", "ResourceFlavor") or (
            kind == "ClusterQueue" and obj["metadata"]["name"] == wanted
        ):
            kept.append(obj)
    return kept
