"""The named per-node MIG configs a cluster's mig-parted ConfigMap must hold (nodes reconfigured by MIG plans).

Read by ``provisioning`` when it renders a cluster's own objects, so it sits below it and imports only models and
the pure core.
"""

from __future__ import annotations

from typing import Any

from allocations.models import MigNodeLayout, MigPlan, MigPlanStatus
from gpucore.manifests import mig_node_config, mig_node_config_name


def mig_node_configs_of_cluster(cluster_id: int) -> dict[str, list[dict[str, Any]]]:
    """Named per-node configs the cluster's mig-parted ConfigMap must hold: nodes planned or being rolled out."""
    configs: dict[str, list[dict[str, Any]]] = {}
    rows = MigNodeLayout.objects.filter(pool__cluster_id=cluster_id).select_related("pool__gpu_model")
    for row in rows:
        configs[row.config_name] = mig_node_config(row.pool.gpu_model.to_spec(), row.gpus)
    plans = MigPlan.objects.filter(
        pool__cluster_id=cluster_id, status__in=[MigPlanStatus.APPROVED, MigPlanStatus.APPLYING, MigPlanStatus.FAILED]
    ).select_related("pool__gpu_model")
    for plan_ in plans:
        model = plan_.pool.gpu_model.to_spec()
        for layouts in plan_.node_layouts().values():
            configs[mig_node_config_name(model, layouts)] = mig_node_config(model, layouts)
    return configs
