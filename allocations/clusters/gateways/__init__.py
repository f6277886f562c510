"""Cluster gateways (``base`` is the interface) and ``gateway_for``, which builds one from plain settings."""

from __future__ import annotations

from pathlib import Path

from allocations.clusters.gateways.base import ClusterGateway, PermanentGatewayError

BACKENDS = ("kubernetes", "gitops")


def gateway_for(
    *,
    backend: str,
    api_endpoint: str = "",
    kubeconfig_ref: str = "",
    bearer_token: str = "",
    gitops_root: str | Path = "",
    gitops_path: str = "",
    gitops_commit: bool = False,
    timeout_seconds: float = 30.0,
) -> ClusterGateway:
    """The gateway for a backend (``kubernetes`` or ``gitops``), built from plain values rather than models."""
    # kubernetes: a kubeconfig reference (env:VAR holding kubeconfig YAML, file:/path, in-cluster) and/or an
    # api_endpoint (overrides the kubeconfig's server; alone, with an optional bearer_token).
    # gitops: files under <gitops_root>/<gitops_path>, committed there when gitops_commit is set.
    # Imported here: a GitOps-only deployment never loads the Kubernetes client, and the reverse.
    if backend == "kubernetes":
        from allocations.clusters.gateways.kubernetes import KubernetesGateway

        return KubernetesGateway.connect(
            kubeconfig_ref=kubeconfig_ref, host=api_endpoint, token=bearer_token, timeout_seconds=timeout_seconds
        )
    if backend == "gitops":
        from allocations.clusters.gateways.gitops import GitOpsGateway

        if not gitops_root:
            raise PermanentGatewayError("The gitops backend needs a root directory (PORTAL_GITOPS_ROOT).")
        return GitOpsGateway(Path(gitops_root), gitops_path, commit=gitops_commit)
    raise PermanentGatewayError(f"Unknown cluster backend {backend!r}: expected one of {', '.join(BACKENDS)}.")
