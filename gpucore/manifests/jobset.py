"""Multi-pod training and HPC as a JobSet (``jobset.x-k8s.io/v1alpha2``) that restarts the whole gang on a fault.

Pure: plain dicts out. A bare Indexed Job retries one lost worker on its own: the replacement rejoins a rendezvous its
peers have left, and every failed pod counts against ``backoffLimit``. A JobSet recreates every worker together
(``failurePolicy``), bounded by ``maxRestarts``; a node drain or a preemption restarts the gang without spending that
budget, as JobSet's own "host maintenance" example does (docs/kubernetes-and-kueue.md, "Multi-pod training"). With
Kueue's topology-aware scheduling the pod set asks for one topology domain (rack or block) where the pool names one.
"""

from __future__ import annotations

from typing import Any

from gpucore.manifests.contexts import PoolContext
from gpucore.manifests.naming import MANAGED_BY, MANAGED_BY_LABEL

JOBSET_API_VERSION = "jobset.x-k8s.io/v1alpha2"
REPLICATED_JOB_NAME = "worker"
# A JobSet's pods are <jobset>-<replicated job>-<job index>-<pod index>; with one replicated job of one Job, pod 0 is
# the rendezvous master.
JOB_INDEX = 0
# Recreating the gang costs a rendezvous and a checkpoint reload: three times covers a flaky node or an NCCL timeout,
# while a program that always crashes still fails within minutes instead of looping for ever.
MAX_RESTARTS = 3
# Kueue's topology-aware scheduling annotations on a pod set's template (Kueue "Topology Aware Scheduling").
REQUIRED_TOPOLOGY_ANNOTATION = "kueue.x-k8s.io/podset-required-topology"
PREFERRED_TOPOLOGY_ANNOTATION = "kueue.x-k8s.io/podset-preferred-topology"
# The reason a child Job fails with when its podFailurePolicy's FailJob rule fired (here: a disrupted pod).
POD_FAILURE_POLICY_REASON = "PodFailurePolicy"
HOSTNAME_LEVEL = "kubernetes.io/hostname"
KUEUE_TOPOLOGY_API_VERSION = "kueue.x-k8s.io/v1beta2"


def child_job_name(name: str) -> str:
    """The name of the one Job a request's JobSet creates: ``<name>-worker-0``."""
    return f"{name}-{REPLICATED_JOB_NAME}-{JOB_INDEX}"


def master_pod_hostname(name: str) -> str:
    """The DNS name of a JobSet's first pod within its namespace: ``<name>-worker-0-0.<name>``."""
    return f"{child_job_name(name)}-0.{name}"


def render_kueue_topology(pool: PoolContext) -> dict[str, Any]:
    """The Kueue ``Topology`` of a pool with a topology level, named after the pool: its level, then the node."""
    if pool.topology_level is None:
        raise ValueError(f"Pool '{pool.name}' has no topology level.")
    # Kueue wants kubernetes.io/hostname as the lowest level if at all; with it Kueue also packs pods per node.
    levels = [pool.topology_level] if pool.topology_level == HOSTNAME_LEVEL else [pool.topology_level, HOSTNAME_LEVEL]
    return {
        "apiVersion": KUEUE_TOPOLOGY_API_VERSION,
        "kind": "Topology",
        "metadata": {"name": pool.name, "labels": {MANAGED_BY_LABEL: MANAGED_BY}},
        "spec": {"levels": [{"nodeLabel": level} for level in levels]},
    }


def topology_annotations(pool: PoolContext | None, *, kueue: bool) -> dict[str, str]:
    """The pod-set annotation asking Kueue for one topology domain of the pool's level (none without one or Kueue)."""
    if not kueue or pool is None or pool.topology_level is None:
        return {}
    key = REQUIRED_TOPOLOGY_ANNOTATION if pool.topology_required else PREFERRED_TOPOLOGY_ANNOTATION
    return {key: pool.topology_level}


def render_jobset(
    *,
    meta: dict[str, Any],
    replicas: int,
    template: dict[str, Any],
    active_deadline_seconds: int | None,
    queue_labels: dict[str, str],
    topology: dict[str, str],
) -> dict[str, Any]:
    """The JobSet of a distributed request: one replicated job of one Indexed Job holding ``replicas`` pods.

    ``template`` is the pod template; ``meta`` the request's metadata (name ``gpr-<id>``), whose name is also the
    network subdomain, served by the request's own headless Service (the JobSet controller then creates none).
    """
    pod_template = {
        "metadata": {
            "labels": dict(template["metadata"]["labels"]),
            "annotations": {**template["metadata"]["annotations"], **topology},
        },
        # The JobSet's pod webhook sets each pod's hostname and subdomain from the network below.
        "spec": {key: value for key, value in template["spec"].items() if key != "subdomain"},
    }
    job_spec: dict[str, Any] = {
        # Any failed pod fails the Job at once, so the JobSet restarts every worker rather than one.
        "backoffLimit": 0,
        "completions": replicas,
        "parallelism": replicas,
        "completionMode": "Indexed",  # each worker's rank is its completion index
        # A pod evicted by a drain or a preemption did not fail on its own: fail the Job with reason
        # PodFailurePolicy so the JobSet restarts the gang without spending a restart (the rule below).
        "podFailurePolicy": {
            "rules": [{"action": "FailJob", "onPodConditions": [{"type": "DisruptionTarget", "status": "True"}]}]
        },
        "template": pod_template,
    }
    spec: dict[str, Any] = {
        "failurePolicy": {
            "maxRestarts": MAX_RESTARTS,
            "restartStrategy": "Recreate",
            "rules": [
                {
                    "name": "disruptionRestartsFree",
                    "action": "RestartJobSetAndIgnoreMaxRestarts",
                    "onJobFailureReasons": [POD_FAILURE_POLICY_REASON],
                },
                # Anything else (a crash, a lost node, an NCCL timeout): restart the gang, counted.
                {"name": "otherFailuresRestartCounted", "action": "RestartJobSet"},
            ],
        },
        "network": {"enableDNSHostnames": True, "subdomain": meta["name"], "publishNotReadyAddresses": True},
        "replicatedJobs": [{"name": REPLICATED_JOB_NAME, "replicas": 1, "template": {"spec": job_spec}}],
    }
    if active_deadline_seconds is not None:
        # Per Job attempt; the portal's expiry releases the request (and deletes the JobSet) in any case.
        job_spec["activeDeadlineSeconds"] = active_deadline_seconds
    # Never 'suspend': Kueue's webhook suspends a queued JobSet and resumes it on admission (as for a Job).
    jobset_meta = {**meta, "labels": {**meta["labels"], **queue_labels}}
    return {"apiVersion": JOBSET_API_VERSION, "kind": "JobSet", "metadata": jobset_meta, "spec": spec}
