"""The guides' GPU monitoring as Prometheus Operator objects: a PrometheusRule and a ServiceMonitor per cluster. Pure.

The PrometheusRule also carries the recording rules of the utilization and GPU health pulls
(``gpucore.utilization_promql``): the per-minute series the pulls read cheaply on a cluster marked as having them.

Guide 000 §3.3 "Alert Strategy" gives the rules (utilization above 90 % for 5 minutes, memory above 85 % for 2
minutes, temperature above 83 °C) and guide 004 "ServiceMonitor for DCGM" the scrape. dcgm-exporter's default counters
carry ``DCGM_FI_DEV_FB_USED`` and ``DCGM_FI_DEV_FB_FREE`` but not the guide's ``DCGM_FI_DEV_FB_TOTAL``
(docs/reference-sources.md#dcgm), so memory use is ``used / (used + free)``; the same thresholds drive the
portal's own alerts (``gpucore.alerts``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from gpucore.alerts import MEMORY_PRESSURE_FOR_MINUTES, MEMORY_PRESSURE_RATIO, TEMPERATURE_LIMIT_C
from gpucore.manifests.naming import MANAGED_BY, MANAGED_BY_LABEL, ManifestError, check_labels, is_dns_label
from gpucore.utilization_promql import DEFAULT_MAX_AGE_SECONDS, rule_groups

MONITORING_API_VERSION = "monitoring.coreos.com/v1"
RULE_NAME = "gpu-portal-gpu-alerts"
SERVICE_MONITOR_NAME = "gpu-portal-dcgm-exporter"
# The GPU Operator's dcgm-exporter Service: label app=nvidia-dcgm-exporter, port gpu-metrics (guide 004).
DCGM_EXPORTER_LABELS = {"app": "nvidia-dcgm-exporter"}
DCGM_EXPORTER_PORT = "gpu-metrics"
HIGH_UTILIZATION_PCT = 90
HIGH_UTILIZATION_FOR = "5m"
_LABELS = {MANAGED_BY_LABEL: MANAGED_BY}
# Under the ServiceMonitor's honorLabels false, the scraped pod's own namespace/pod labels become exported_*; the
# plain ones are the exporter's. ``or`` falls back for a scrape that honours labels. dcgm-exporter renamed Hostname to
# hostname (docs/reference-sources.md#dcgm): either spelling is read.
_HOST = "{{ or $labels.hostname $labels.Hostname }}"
_WORKLOAD = "{{ or $labels.exported_namespace $labels.namespace }}/{{ or $labels.exported_pod $labels.pod }}"
# MIG instances report no DCGM_FI_DEV_*_UTIL; DCGM_FI_PROF_GR_ENGINE_ACTIVE (a ratio, in the default counters) is
# reported for them, so a busy slice alerts too.
_UTILIZATION = 'DCGM_FI_DEV_GPU_UTIL > {pct} or DCGM_FI_PROF_GR_ENGINE_ACTIVE{{GPU_I_PROFILE!=""}} * 100 > {pct}'


def _labels(extra: Mapping[str, str] | None) -> dict[str, str]:
    """The portal's label plus the cluster's own (e.g. ``release: kube-prometheus-stack``, which a default
    kube-prometheus-stack's ruleSelector and serviceMonitorSelector require)."""
    extra = dict(extra or {})
    check_labels(extra, "Monitoring labels")
    if MANAGED_BY_LABEL in extra:
        raise ManifestError(f"Monitoring labels: '{MANAGED_BY_LABEL}' is the portal's own label.")
    return {**_LABELS, **extra}


def _memory_ratio() -> str:
    return "DCGM_FI_DEV_FB_USED / (DCGM_FI_DEV_FB_USED + DCGM_FI_DEV_FB_FREE)"


def render_gpu_alert_rule(
    *,
    namespace: str,
    cluster: str,
    labels: Mapping[str, str] | None = None,
    scrape_max_age: int = DEFAULT_MAX_AGE_SECONDS,
) -> dict[str, Any]:
    """The PrometheusRule with the guide's three GPU alerts, labelled with the cluster for routing, and the pulls'
    recording rules (``scrape_max_age``: the portal's ``BILLING_SCRAPE_MAX_AGE_SECONDS``)."""
    if not is_dns_label(namespace):
        raise ManifestError(f"Monitoring namespace '{namespace}' is not a DNS label.")
    metadata_labels = _labels(labels)
    labels = {"severity": "warning", "gpu_portal_cluster": cluster}
    rules = [
        {
            "alert": "GPUHighUtilization",
            "expr": _UTILIZATION.format(pct=HIGH_UTILIZATION_PCT),
            "for": HIGH_UTILIZATION_FOR,
            "labels": dict(labels),
            "annotations": {
                "summary": f"GPU utilization above {HIGH_UTILIZATION_PCT}% for 5 minutes",
                "description": f"GPU {{{{ $labels.gpu }}}} on {_HOST} ({_WORKLOAD}) has been above "
                f"{HIGH_UTILIZATION_PCT}% utilization for 5 minutes.",
            },
        },
        {
            "alert": "GPUMemoryPressure",
            "expr": f"{_memory_ratio()} > {MEMORY_PRESSURE_RATIO}",
            "for": f"{MEMORY_PRESSURE_FOR_MINUTES}m",
            "labels": dict(labels),
            "annotations": {
                "summary": f"GPU memory usage above {MEMORY_PRESSURE_RATIO:.0%} for 2 minutes",
                "description": f"GPU {{{{ $labels.gpu }}}} on {_HOST} ({_WORKLOAD}) uses "
                "{{ $value | humanizePercentage }} of its memory.",
            },
        },
        {
            "alert": "GPUThermalThrottle",
            "expr": f"DCGM_FI_DEV_GPU_TEMP > {TEMPERATURE_LIMIT_C:g}",
            "labels": {**labels, "severity": "critical"},
            "annotations": {
                "summary": "GPU temperature exceeding safe threshold",
                "description": f"GPU {{{{ $labels.gpu }}}} on {_HOST} is at {{{{ $value }}}} °C (above 83).",
            },
        },
    ]
    return {
        "apiVersion": MONITORING_API_VERSION,
        "kind": "PrometheusRule",
        "metadata": {"name": RULE_NAME, "namespace": namespace, "labels": metadata_labels},
        "spec": {"groups": [{"name": "gpu_alerts", "rules": rules}, *rule_groups(scrape_max_age)]},
    }


def render_dcgm_service_monitor(*, namespace: str, labels: Mapping[str, str] | None = None) -> dict[str, Any]:
    """The ServiceMonitor that scrapes the GPU Operator's dcgm-exporter (guide 004), every 30 s."""
    if not is_dns_label(namespace):
        raise ManifestError(f"Monitoring namespace '{namespace}' is not a DNS label.")
    return {
        "apiVersion": MONITORING_API_VERSION,
        "kind": "ServiceMonitor",
        "metadata": {"name": SERVICE_MONITOR_NAME, "namespace": namespace, "labels": _labels(labels)},
        "spec": {
            "selector": {"matchLabels": dict(DCGM_EXPORTER_LABELS)},
            "namespaceSelector": {"matchNames": [namespace]},
            # honorLabels false (the default): Prometheus renames the exporter's namespace/pod labels to
            # exported_namespace/exported_pod, which billing reads as well as the plain ones.
            "endpoints": [{"port": DCGM_EXPORTER_PORT, "path": "/metrics", "interval": "30s", "scrapeTimeout": "10s"}],
        },
    }
