"""Rolling a MIG plan out, node by node, through the GPU Operator's MIG manager.

The rollout follows the MIG manager's contract (docs/reference-sources.md, "MIG"): a node picks a named mig-parted
config with the label ``nvidia.com/mig.config`` and the manager reports ``nvidia.com/mig.config.state``
(``pending``, ``rebooting``, ``success``, ``failed``). Each node is cordoned, its GPU pods are left to finish (or
evicted after the timeout, by policy), the label is set, and the node is uncordoned on ``success``; ``failed`` stops
the rollout with the node cordoned. Every step is stored on the plan before the next, so a pass run twice, or by a
worker that replaced a killed one, continues where the last stopped.

The manager reads the ConfigMap through a volume the kubelet refreshes a minute or two after it changes, and refuses
a config name its copy lacks: a node is labelled only once ``MIG_CONFIGMAP_PROPAGATION_SECONDS`` have passed since the
pass that applied the ConfigMap. A node the manager has not finished within ``MIG_CONFIGURE_TIMEOUT_SECONDS`` fails
the rollout and is uncordoned. The manager acts only on a change of the label, so a resumed node gets a config name
with a new revision (``-r2``) that the ConfigMap holds.
"""

from __future__ import annotations

import logging
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import transaction
from django.utils import timezone
from django.utils.dateparse import parse_datetime

from allocations.clusters.gateways.base import ClusterGateway, GatewayError
from allocations.clusters.mig_layouts import plan_node_config_name, refresh_live_mig_layouts
from allocations.clusters.provisioning import cluster_gateway
from allocations.clusters.rendering import cluster_objects
from allocations.mig_plans.events import move_plan, record_plan_event
from allocations.models import ClusterBackend, DrainPolicy, MigNodeLayout, MigPlan, MigPlanStatus, NodeStep
from audit.services import audit_record, audit_snapshot
from gpucore.manifests import ManifestError
from gpucore.manifests.gpu_operator import MIG_CONFIG_LABEL, MIG_PARTED_CONFIGMAP

logger = logging.getLogger(__name__)

MIG_CONFIG_STATE_LABEL = "nvidia.com/mig.config.state"


def _now_text(now: datetime) -> str:
    return now.isoformat()


def _since(state: dict[str, Any]) -> datetime | None:
    return parse_datetime(state["since"]) if state.get("since") else None


def _configmap(plan_: MigPlan) -> dict[str, Any]:
    for obj in cluster_objects(plan_.pool.cluster):
        if obj["kind"] == "ConfigMap" and obj["metadata"]["name"] == MIG_PARTED_CONFIGMAP:
            return obj
    raise ManifestError("The cluster renders no mig-parted ConfigMap.")


def _fail(plan_: MigPlan, message: str, *, node: str = "") -> None:
    move_plan(plan_, MigPlanStatus.FAILED, message=message)
    plan_.error = message
    plan_.finished_at = timezone.now()
    logger.warning("MIG plan %s stopped: %s", plan_.pk, message)


def _record_node(plan_: MigPlan, node: str, layouts: list[dict[str, int]], config_name: str) -> None:
    MigNodeLayout.objects.update_or_create(
        pool=plan_.pool, node=node, defaults={"gpus": layouts, "config_name": config_name, "plan": plan_}
    )
    refresh_live_mig_layouts(plan_.pool)


def _configmap_propagated(plan_: MigPlan, now: datetime) -> bool:
    """Whether the kubelets have had time to refresh the ConfigMap this rollout applied (so it holds the names)."""
    applied = parse_datetime((plan_.progress or {}).get("configmap_applied_at") or "")
    if applied is None:
        return False
    return (now - applied).total_seconds() >= float(settings.MIG_CONFIGMAP_PROPAGATION_SECONDS)


def _advance_node(plan_: MigPlan, node: str, state: dict[str, Any], gateway: Any, now: datetime) -> None:
    """Move one node as far as it can go now; stops the plan (``_fail``) when the node cannot be done."""
    model = plan_.pool.gpu_model.to_spec()
    layouts = plan_.node_layouts()[node]
    config_name = plan_node_config_name(plan_, node, model, layouts)
    if state["step"] == NodeStep.WAITING:
        if gateway.read_node(node) is None:
            state["step"] = NodeStep.FAILED
            _fail(plan_, f"Node {node} no longer exists.", node=node)
            return
        gateway.patch_node(node, unschedulable=True)
        state.update(step=NodeStep.DRAINING, since=_now_text(now))
        record_plan_event(plan_, to=plan_.status, node=node, message="cordoned; waiting for its GPU pods to finish")
    if state["step"] == NodeStep.DRAINING:
        pods = gateway.gpu_pods_on_node(node)
        if pods:
            waited = (now - (_since(state) or now)).total_seconds()
            if waited < plan_.drain_timeout_seconds:
                return
            names = ", ".join(
                f"{pod.namespace}/{pod.name}" + (f" (request {pod.request_id})" if pod.request_id else "")
                for pod in pods
            )
            if plan_.drain_policy == DrainPolicy.STOP:
                state["step"] = NodeStep.FAILED
                _fail(
                    plan_,
                    f"Node {node}: GPU pods still running after {plan_.drain_timeout_seconds} s: {names}. "
                    "The node stays cordoned; let them finish or evict them, then apply the plan again.",
                    node=node,
                )
                return
            for pod in pods:
                gateway.evict_pod(namespace=pod.namespace, name=pod.name)
            record_plan_event(plan_, to=plan_.status, node=node, message=f"evicted after the drain timeout: {names}")
            return
        if not _configmap_propagated(plan_, now):
            return  # cordoned and empty: labelled once the node's copy of the ConfigMap holds the config
        # The state label is reset with the config label: a "success" left from the node's previous config must
        # not be read as this one's (the MIG manager sets "pending" itself once it sees the new label).
        gateway.patch_node(node, labels={MIG_CONFIG_LABEL: config_name, MIG_CONFIG_STATE_LABEL: "pending"})
        state.update(step=NodeStep.CONFIGURING, since=_now_text(now), config=config_name)
        record_plan_event(
            plan_, to=plan_.status, node=node, message=f"no GPU pods left; {MIG_CONFIG_LABEL}={config_name}"
        )
    if state["step"] == NodeStep.CONFIGURING:
        live = gateway.read_node(node)
        if live is None:
            state["step"] = NodeStep.FAILED
            _fail(plan_, f"Node {node} disappeared while the MIG manager was configuring it.", node=node)
            return
        labels = (live.get("metadata") or {}).get("labels") or {}
        if labels.get(MIG_CONFIG_LABEL) != config_name:
            gateway.patch_node(node, labels={MIG_CONFIG_LABEL: config_name})
            return
        outcome = labels.get(MIG_CONFIG_STATE_LABEL, "")
        waited = (now - (_since(state) or now)).total_seconds()
        if outcome not in ("success", "failed") and waited >= float(settings.MIG_CONFIGURE_TIMEOUT_SECONDS):
            gateway.patch_node(node, unschedulable=False)
            state["step"] = NodeStep.FAILED
            _fail(
                plan_,
                f"Node {node}: the MIG manager did not finish {config_name} within "
                f"{int(settings.MIG_CONFIGURE_TIMEOUT_SECONDS)} s ({MIG_CONFIG_STATE_LABEL}={outcome or 'unset'}). "
                "The node was uncordoned and serves what it advertises; check the nvidia-mig-manager pod on it, then "
                "apply the plan again (the node is labelled with a new config revision).",
                node=node,
            )
            return
        if outcome == "failed":
            state["step"] = NodeStep.FAILED
            _fail(
                plan_,
                f"Node {node}: the MIG manager reported {MIG_CONFIG_STATE_LABEL}=failed for {config_name}. "
                "The node stays cordoned; see the nvidia-mig-manager pod's log on it.",
                node=node,
            )
            return
        if outcome != "success":
            return  # pending or rebooting
        gateway.patch_node(node, unschedulable=False)
        _record_node(plan_, node, layouts, config_name)
        state.update(step=NodeStep.DONE, since=_now_text(now))
        record_plan_event(plan_, to=plan_.status, node=node, message="MIG manager reported success; uncordoned")


def mig_plan_rollout_step(*, plan_id: int, gateway: ClusterGateway | None = None, now: datetime | None = None) -> str:
    """One pass of a rollout: advance the nodes in flight, start the next ones up to ``max_unavailable``.

    Returns the plan's status after the pass. Holds the plan's row lock for the pass, so two workers never drive
    one plan at once; every step is saved, so the next pass (in this worker or another) continues from it.
    """
    now = now or timezone.now()
    with transaction.atomic():
        plan_ = MigPlan.objects.select_for_update().select_related("pool__cluster", "pool__gpu_model").get(pk=plan_id)
        if plan_.status != MigPlanStatus.APPLYING:
            return plan_.status
        before = audit_snapshot(plan_)
        gateway = gateway or cluster_gateway(plan_.pool.cluster)
        progress = plan_.progress = plan_.progress or {}
        nodes = progress.setdefault("nodes", {})
        for node in plan_.nodes_to_drain:
            nodes.setdefault(node, {"step": NodeStep.WAITING, "since": None})
        try:
            if not progress.get("configmap_applied_at"):
                gateway.apply([_configmap(plan_)])
                progress["configmap_applied_at"] = _now_text(now)
                record_plan_event(
                    plan_,
                    to=plan_.status,
                    message=f"ConfigMap {MIG_PARTED_CONFIGMAP} applied; nodes are labelled once the kubelets have "
                    f"refreshed it ({int(settings.MIG_CONFIGMAP_PROPAGATION_SECONDS)} s)",
                )
            if plan_.pool.cluster.backend == ClusterBackend.GITOPS:
                _write_gitops_labels(plan_, gateway, nodes, now)
            else:
                _rollout_pass(plan_, gateway, nodes, now)
        except (GatewayError, ManifestError) as error:
            transient = getattr(error, "transient", False)
            if transient:
                raise  # the task retries; nothing of this pass was marked done that did not happen
            _fail(plan_, f"{type(error).__name__}: {error}")
        progress["heartbeat"] = _now_text(now)
        plan_.progress = progress
        if plan_.status == MigPlanStatus.APPLYING and all(s["step"] == NodeStep.DONE for s in nodes.values()):
            move_plan(plan_, MigPlanStatus.APPLIED, message=f"{len(nodes)} nodes reconfigured")
            plan_.finished_at = timezone.now()
        plan_.save(update_fields=["status", "progress", "error", "finished_at"])
        if plan_.status != MigPlanStatus.APPLYING:  # the audit trail keeps the outcome, not every heartbeat
            audit_record(actor=None, actor_label="rollout", obj=plan_, before=before)
        return plan_.status


def _rollout_pass(plan_: MigPlan, gateway: Any, nodes: dict[str, dict[str, Any]], now: datetime) -> None:
    order = list(plan_.nodes_to_drain)
    for node in order:
        if nodes[node]["step"] in (NodeStep.DRAINING, NodeStep.CONFIGURING):
            _advance_node(plan_, node, nodes[node], gateway, now)
            if plan_.status != MigPlanStatus.APPLYING:
                return
    for node in order:
        busy = sum(1 for s in nodes.values() if s["step"] in (NodeStep.DRAINING, NodeStep.CONFIGURING))
        if busy >= plan_.max_unavailable:
            return
        if nodes[node]["step"] == NodeStep.WAITING:
            _advance_node(plan_, node, nodes[node], gateway, now)
            if plan_.status != MigPlanStatus.APPLYING:
                return


def _write_gitops_labels(plan_: MigPlan, gateway: Any, nodes: dict[str, dict[str, Any]], now: datetime) -> None:
    """GitOps: the same ConfigMap and node labels as files in the tree; the GitOps tool applies them."""
    model = plan_.pool.gpu_model.to_spec()
    objects = []
    for node, layouts in plan_.node_layouts().items():
        config_name = plan_node_config_name(plan_, node, model, layouts)
        objects.append(
            {"apiVersion": "v1", "kind": "Node", "metadata": {"name": node, "labels": {MIG_CONFIG_LABEL: config_name}}}
        )
    gateway.apply(objects)
    for node, layouts in plan_.node_layouts().items():
        _record_node(plan_, node, layouts, plan_node_config_name(plan_, node, model, layouts))
        nodes[node].update(step=NodeStep.DONE, since=_now_text(now))
    record_plan_event(plan_, to=plan_.status, message=f"{len(objects)} node label files written to the GitOps tree")


def stalled_mig_plan_ids(*, now: datetime | None = None, after: timedelta = timedelta(minutes=2)) -> list[int]:
    """Plans being applied whose last pass is older than ``after``: their worker died; the sweeper re-queues them."""
    now = now or timezone.now()
    stalled = []
    for plan_ in MigPlan.objects.filter(status=MigPlanStatus.APPLYING).only("pk", "progress"):
        beat = parse_datetime((plan_.progress or {}).get("heartbeat") or "")
        if beat is None or now - beat > after:
            stalled.append(plan_.pk)
    return stalled
