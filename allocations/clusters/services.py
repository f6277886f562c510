"""Writes to clusters and node pools for infrastructure-as-code (the clusters API): create, replace by name, delete.

The same rules as the admin: the model's ``full_clean()`` (backend needs, secret references only, MIG layouts
against the catalog geometry, time-slicing replicas, unique pool names), under a row lock, in one transaction, so a
refused write changes nothing. Secret references are write-only: a replace that omits one keeps the stored value
(a client that cannot read it back must not wipe it by accident); an empty string clears it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django.contrib.auth.models import AbstractBaseUser
from django.core.exceptions import PermissionDenied, ValidationError
from django.db import IntegrityError, transaction
from django.db.models import Model, ProtectedError

from allocations.clusters.tasks import apply_cluster_objects as apply_cluster_objects_task
from allocations.clusters.tasks import sync_inventory as sync_inventory_task
from allocations.models import Cluster, NodePool
from allocations.selectors import user_is_approver, user_is_platform_admin
from audit.services import audit_record, audit_snapshot

# What the API may write; everything else (observed inventory, timestamps) belongs to the portal.
CLUSTER_FIELDS = (
    "description",
    "backend",
    "api_endpoint",
    "kubeconfig_secret_ref",
    "gitops_path",
    "gitops_commit",
    "prometheus_url",
    "prometheus_auth_secret_ref",
    "prometheus_recording_rules",
    "scheduler",
    "device_api",
    "monitoring_namespace",
    "monitoring_labels",
    "gpu_operator_namespace",
    "egress_tcp_ports",
    "is_active",
)
CLUSTER_SECRET_FIELDS = ("kubeconfig_secret_ref", "prometheus_auth_secret_ref")
NODE_POOL_FIELDS = (
    "gpu_model",
    "node_count",
    "gpus_per_node",
    "sharing_mode",
    "time_slice_replicas",
    "rename_by_default",
    "mig_devices",
    "node_labels",
    "topology_level",
    "topology_required",
    "dynamic_mig",
    "taints",
)


class InUse(Exception):
    """A cluster or pool that requests still point at cannot be deleted (their history would lose its place)."""


def _require_permission(acting_user: AbstractBaseUser, action: str, model: type[Model]) -> None:
    # The admin's own gate: a staff account holding the model permission for this action.
    codename = f"{model._meta.app_label}.{action}_{model._meta.model_name}"
    if not (user_is_platform_admin(acting_user) and acting_user.has_perm(codename)):
        raise PermissionDenied(f"Only platform admins can {action} {model._meta.verbose_name_plural}.")


def _apply_fields(
    target: Model, *, fields: Mapping[str, Any], allowed: tuple[str, ...], replace: bool, keep: tuple[str, ...] = ()
) -> None:
    """Set ``fields`` on ``target``; on a replace, every other allowed field returns to its default."""
    unknown = set(fields) - set(allowed)
    if unknown:
        raise ValidationError(dict.fromkeys(sorted(unknown), "This field cannot be written."))
    if replace:
        for name in allowed:
            if name in fields or name in keep:
                continue
            field = target._meta.get_field(name)
            setattr(target, field.attname, field.get_default())
    for name, value in fields.items():
        setattr(target, name, value)


def _save_validated(obj: Model, *, acting_user: AbstractBaseUser, before: dict[str, Any] | None) -> None:
    obj.full_clean()
    try:
        with transaction.atomic():
            obj.save()
    except IntegrityError as exc:  # a concurrent create of the same name won the race
        raise ValidationError({"name": f"{obj} was created by someone else meanwhile; try again."}) from exc
    audit_record(actor=acting_user, obj=obj, before=before)


def _audit_deletion(acting_user: AbstractBaseUser, obj: Cluster | NodePool) -> None:
    # The cascade takes pools and quotas with it: each gets its own event, so their values stay in the trail.
    if isinstance(obj, Cluster):
        for pool in obj.node_pools.all():
            _audit_deletion(acting_user, pool)
    for quota in obj.quotas.all():
        audit_record(actor=acting_user, obj=quota, before=None, deleted=True)
    audit_record(actor=acting_user, obj=obj, before=None, deleted=True)


def cluster_put(
    *, acting_user: AbstractBaseUser, name: str, fields: Mapping[str, Any], partial: bool = False
) -> tuple[Cluster, bool]:
    """Create the cluster ``name`` or replace (``partial``: update) its fields; returns it and whether it is new."""
    with transaction.atomic():
        cluster = Cluster.objects.select_for_update().filter(name=name).first()
        created = cluster is None
        _require_permission(acting_user, "add" if created else "change", Cluster)
        before = audit_snapshot(cluster)
        if created:
            cluster = Cluster(name=name)
        _apply_fields(
            cluster,
            fields=fields,
            allowed=CLUSTER_FIELDS,
            replace=not partial and not created,
            keep=CLUSTER_SECRET_FIELDS,
        )
        _save_validated(cluster, acting_user=acting_user, before=before)
    return cluster, created


def cluster_create(*, acting_user: AbstractBaseUser, name: str, fields: Mapping[str, Any]) -> Cluster:
    """Create a new cluster; a name already taken is a 400 on ``name`` (PUT replaces an existing one)."""
    _require_permission(acting_user, "add", Cluster)
    with transaction.atomic():
        if Cluster.objects.filter(name=name).exists():
            raise ValidationError({"name": f"A cluster named {name!r} exists; PUT /clusters/{name}/ replaces it."})
        cluster, _ = cluster_put(acting_user=acting_user, name=name, fields=fields)
    return cluster


def cluster_delete(*, acting_user: AbstractBaseUser, cluster: Cluster) -> None:
    """Delete a cluster with its pools and quotas; refused while any request, past or present, ran on it."""
    _require_permission(acting_user, "delete", Cluster)
    with transaction.atomic():
        locked = Cluster.objects.select_for_update().get(pk=cluster.pk)
        try:
            with transaction.atomic():
                _audit_deletion(acting_user, locked)
                locked.delete()
        except ProtectedError as exc:
            count = cluster.gpu_requests.count()
            raise InUse(
                f"Cluster {cluster.name} has {count} request(s); deactivate it (is_active: false) instead."
            ) from exc


def node_pool_put(
    *, acting_user: AbstractBaseUser, cluster: Cluster, name: str, fields: Mapping[str, Any], partial: bool = False
) -> tuple[NodePool, bool]:
    """Create the pool ``name`` on ``cluster`` or replace (``partial``: update) it; returns it and whether it is new."""
    with transaction.atomic():
        Cluster.objects.select_for_update().get(pk=cluster.pk)  # pools of one cluster are written one at a time
        pool = NodePool.objects.select_for_update().filter(cluster=cluster, name=name).first()
        created = pool is None
        _require_permission(acting_user, "add" if created else "change", NodePool)
        if not partial and "gpu_model" not in fields:
            raise ValidationError({"gpu_model": "This field is required."})
        before = audit_snapshot(pool)
        if created:
            pool = NodePool(cluster=cluster, name=name)
        _apply_fields(pool, fields=fields, allowed=NODE_POOL_FIELDS, replace=not partial and not created)
        _save_validated(pool, acting_user=acting_user, before=before)
    return pool, created


def node_pool_create(
    *, acting_user: AbstractBaseUser, cluster: Cluster, name: str, fields: Mapping[str, Any]
) -> NodePool:
    """Create a new pool on ``cluster``; a name already taken there is a 400 on ``name``."""
    _require_permission(acting_user, "add", NodePool)
    with transaction.atomic():
        if NodePool.objects.filter(cluster=cluster, name=name).exists():
            raise ValidationError(
                {"name": f"Pool {name!r} exists on {cluster.name}; PUT .../node-pools/{name}/ replaces it."}
            )
        pool, _ = node_pool_put(acting_user=acting_user, cluster=cluster, name=name, fields=fields)
    return pool


def node_pool_delete(*, acting_user: AbstractBaseUser, pool: NodePool) -> None:
    """Delete a pool and its quotas; refused while any request was placed on it."""
    _require_permission(acting_user, "delete", NodePool)
    with transaction.atomic():
        locked = NodePool.objects.select_for_update().get(pk=pool.pk)
        try:
            with transaction.atomic():
                _audit_deletion(acting_user, locked)
                locked.delete()
        except ProtectedError as exc:
            count = pool.gpu_requests.count()
            raise InUse(f"Pool {pool} has {count} request(s) placed on it; it cannot be deleted.") from exc


def cluster_inventory_sync_queue(*, acting_user: AbstractBaseUser, cluster: Cluster | None = None) -> None:
    """Queue a read of one (or every) Kubernetes cluster's GPU nodes into its node pools (platform approvers)."""
    if not user_is_approver(acting_user):
        raise PermissionDenied("Only platform approvers can sync the cluster inventory.")
    cluster_id = cluster.pk if cluster is not None else None
    transaction.on_commit(lambda: sync_inventory_task.delay(cluster_id), robust=True)


def cluster_objects_apply_queue(*, acting_user: AbstractBaseUser, cluster: Cluster) -> None:
    """Queue the apply of a cluster's own objects (PriorityClasses, GPU Operator ConfigMaps, Kueue) (approvers)."""
    if not user_is_approver(acting_user):
        raise PermissionDenied("Only platform approvers can apply a cluster's objects.")
    cluster_id = cluster.pk
    transaction.on_commit(lambda: apply_cluster_objects_task.delay(cluster_id), robust=True)
