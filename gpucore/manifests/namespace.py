"""A team's namespace objects and the SLA tiers' PriorityClasses. Pure: plain dicts out.

Guide 001 ("Control Consumption"; the guides: docs/reference-sources.md#guides): ResourceQuotas and LimitRanges per
namespace keep one team from monopolising GPUs; guide 004 §3 and guide 002 §7.5 give the shapes, §6 the NetworkPolicy
and the Pod Security settings.
"""

from __future__ import annotations

from collections.abc import Iterable
from decimal import Decimal
from typing import Any

from gpucore.manifests.contexts import TeamContext
from gpucore.manifests.naming import (
    GPU_RESOURCE,
    MANAGED_BY,
    MANAGED_BY_LABEL,
    ManifestError,
    is_dns_subdomain,
    is_extended_resource,
    is_label_value,
    team_labels,
)
from gpucore.manifests.sizing import container_ceiling, size_container
from gpucore.sla import SlaTierSpec

RESOURCE_QUOTA_NAME = "gpu-portal-quota"
LIMIT_RANGE_NAME = "gpu-portal-limits"
NETWORK_POLICY_NAME = "gpu-portal-default"
SLA_TIER_LABEL = "gpu-portal/sla-tier"
# scheduling.k8s.io/v1: user-defined PriorityClass values may not exceed one billion.
HIGHEST_USER_PRIORITY = 1_000_000_000
# kube-scheduler evicts pods of any lower value to place a 'PreemptLowerPriority' pod, whatever their tier. A
# non-preemptible tier promises that no other tier evicts it, so every non-preemptible tier shares this one value
# (equal priorities never preempt each other), above every preemptible tier's. The tiers' own values still order
# Kueue's queues (their WorkloadPriorityClasses), where nothing in a team's queue is preempted.
PROTECTED_TIER_PRIORITY = 1_000_000


def _meta(name: str, team: TeamContext, *, namespaced: bool = True) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name}
    if namespaced:
        meta["namespace"] = team.namespace
    meta["labels"] = team_labels(team.slug)
    return meta


def render_namespace(team: TeamContext) -> dict[str, Any]:
    """The team's Namespace, enforcing the ``restricted`` Pod Security Standard our workloads are written for."""
    meta = _meta(team.namespace, team, namespaced=False)
    # Pod Security Admission (guide 004 §6 "Pod Security Standards"): the pod template satisfies 'restricted',
    # so anything a team applies by hand is held to the same bar.
    for mode in ("enforce", "audit", "warn"):
        meta["labels"][f"pod-security.kubernetes.io/{mode}"] = "restricted"
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": meta}


def quota_keys(resource: str) -> tuple[str, ...]:
    """The ResourceQuota ``hard`` keys that bound one extended resource (a GPU, a MIG profile, a shared GPU)."""
    # ``requests.<name>`` is what the quota admission counts; ``limits.<name>`` is added as the guides write it (guide
    # 004 §3, guide 002 §7.5). Kubernetes accepts the ``limits.`` key but only counts ``requests.`` for extended
    # resources ("As overcommit is not supported by extended resources, only quota objects in format of
    # requests.resourceName is allowed"); GPU requests must equal limits, so the ``requests.`` entry is the one that
    # binds and the other documents the intent. Quotas are whole units, so CPU and memory (which need units) are not
    # accepted here.
    if is_extended_resource(resource):
        return (f"requests.{resource}", f"limits.{resource}")
    raise ManifestError(f"Quota resource '{resource}' is not an extended resource name such as 'nvidia.com/gpu'.")


def render_resource_quota(team: TeamContext) -> dict[str, Any] | None:
    """The team's ResourceQuota from its quotas, or ``None`` when the team has no quota at all.

    ``hard`` is the nominal quota plus the borrowing limit: the portal's check (and Kueue's) holds the nominal part
    for every tier, and a borrowed tier-3 request it admitted would otherwise be refused by the API server.
    """
    if not team.quotas:
        return None
    hard: dict[str, str] = {}
    for resource in sorted(team.quotas):
        for key in quota_keys(resource):
            hard[key] = str(team.ceiling(resource))
    return {
        "apiVersion": "v1",
        "kind": "ResourceQuota",
        "metadata": _meta(RESOURCE_QUOTA_NAME, team),
        "spec": {"hard": hard},
    }


def max_per_container(team: TeamContext, resource: str) -> int | None:
    """The most units of a GPU resource one container may hold in the team's namespace (``None``: no bound)."""
    quota = team.ceiling(resource)
    if resource == GPU_RESOURCE:
        return team.max_gpus_per_container if quota is None else min(quota, team.max_gpus_per_container)
    return quota


def render_limit_range(team: TeamContext) -> dict[str, Any]:
    """The team's LimitRange: per-container GPU maxima and CPU/memory defaults sized for one inference GPU."""
    gpu_resources = sorted({GPU_RESOURCE, *team.quotas})
    default_size = size_container("realtime_inference", Decimal(1))
    ceiling = container_ceiling(team.max_gpus_per_container)
    maximum: dict[str, str] = dict(ceiling.limits())
    default = dict(default_size.limits())
    default_request = dict(default_size.requests())
    for resource in gpu_resources:
        bound = max_per_container(team, resource)
        if bound is None:
            continue
        maximum[resource] = str(bound)
        # Without an explicit default, the API server defaults a Container item's 'default' to its 'max' (see
        # SetDefaults_LimitRangeItem), so every container that does not name this resource (a MIG container, a
        # sidecar) would be handed the maximum number of whole GPUs. A default of 0 prevents that; a 0 request of
        # an extended resource is ignored by the scheduler and the device plugin.
        default[resource] = "0"
        default_request[resource] = "0"
    # No GPU 'min' (guide 004 §3 sets min 1): a min makes the LimitRanger refuse every container that does not
    # request the resource, i.e. every MIG container and every helper container in the namespace.
    item = {"type": "Container", "max": maximum, "default": default, "defaultRequest": default_request}
    return {
        "apiVersion": "v1",
        "kind": "LimitRange",
        "metadata": _meta(LIMIT_RANGE_NAME, team),
        "spec": {"limits": [item]},
    }


def render_network_policy(team: TeamContext) -> dict[str, Any]:
    """Default-deny for the namespace: ingress only from the same namespace, egress to it, DNS and the cluster's
    egress TCP ports (HTTPS by default)."""
    return {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "NetworkPolicy",
        "metadata": _meta(NETWORK_POLICY_NAME, team),
        "spec": {
            "podSelector": {},
            "policyTypes": ["Ingress", "Egress"],
            "ingress": [{"from": [{"podSelector": {}}]}],
            "egress": [
                # Pods of one request talk to each other (NCCL between the workers of a multi-replica job); an
                # ingress-only allowance would still be cut off by the egress default-deny.
                {"to": [{"podSelector": {}}]},
                # DNS and HTTPS as in guide 004 §6, but to any destination: the guide's 'namespaceSelector: {}'
                # only matches pods, so it would block model downloads from outside the cluster and NodeLocal
                # DNSCache, which answers on a link-local address rather than from a pod.
                {"ports": [{"protocol": "UDP", "port": 53}, {"protocol": "TCP", "port": 53}]},
                *(
                    [{"ports": [{"protocol": "TCP", "port": port} for port in team.egress_tcp_ports]}]
                    if team.egress_tcp_ports
                    else []
                ),
            ],
        },
    }


def render_team_objects(team: TeamContext) -> list[dict[str, Any]]:
    """A team's namespace objects in apply order: Namespace, NetworkPolicy, ResourceQuota, LimitRange."""
    quota = render_resource_quota(team)
    objects = [render_namespace(team), render_network_policy(team)]
    if quota is not None:
        objects.append(quota)
    objects.append(render_limit_range(team))
    return objects


def scheduler_priority(tier: SlaTierSpec) -> int:
    """The value of a tier's PriorityClass: ``PROTECTED_TIER_PRIORITY`` for every non-preemptible tier, the tier's own
    (lower) value for a preemptible one."""
    if not tier.preemptible:
        return PROTECTED_TIER_PRIORITY
    if tier.priority_value >= PROTECTED_TIER_PRIORITY:
        raise ManifestError(
            f"Tier '{tier.slug}' is preemptible, so its priority must stay below {PROTECTED_TIER_PRIORITY:,} (the "
            f"non-preemptible tiers' value); it is {tier.priority_value:,}."
        )
    return tier.priority_value


def render_priority_class(tier: SlaTierSpec) -> dict[str, Any]:
    """The cluster-wide PriorityClass of an SLA tier."""
    # ``preemptionPolicy`` says whether pods of *this* class may evict lower-priority pods to get scheduled. A
    # preemptible tier (tier 3) gets ``Never``: its pods wait for free GPUs rather than evicting anyone. The
    # non-preemptible tiers keep ``PreemptLowerPriority`` and may evict tier-3 pods (what "may be preempted" means)
    # but, sharing one value, never each other.
    if not is_dns_subdomain(tier.priority_class_name):
        raise ManifestError(f"PriorityClass name '{tier.priority_class_name}' is not a DNS subdomain.")
    if not is_label_value(tier.slug):
        raise ManifestError(f"Tier slug '{tier.slug}' cannot be a label value.")
    if tier.priority_value > HIGHEST_USER_PRIORITY:
        raise ManifestError(f"Tier '{tier.slug}': priority {tier.priority_value} exceeds {HIGHEST_USER_PRIORITY}.")
    return {
        "apiVersion": "scheduling.k8s.io/v1",
        "kind": "PriorityClass",
        # Shared by every team, so it carries no team label (that label marks a team's own objects).
        "metadata": {
            "name": tier.priority_class_name,
            "labels": {MANAGED_BY_LABEL: MANAGED_BY, SLA_TIER_LABEL: tier.slug},
        },
        "value": scheduler_priority(tier),
        "globalDefault": False,
        "preemptionPolicy": "Never" if tier.preemptible else "PreemptLowerPriority",
        "description": tier.description or tier.name,
    }


def render_priority_classes(tiers: Iterable[SlaTierSpec]) -> list[dict[str, Any]]:
    """One PriorityClass per SLA tier, for the platform's bootstrap."""
    return [render_priority_class(tier) for tier in tiers]
