"""The guides' GPU monitoring as Prometheus Operator objects: a PrometheusRule and a ServiceMonitor per cluster. Pure.

Guide 000 §3.3 "Alert Strategy" gives the rules (utilization above 90 % for 5 minutes, memory above 85 % for 2
minutes, temperature above 83 °C) and guide 004 "ServiceMonitor for DCGM" the scrape. dcgm-exporter's default counters
carry ``DCGM_FI_DEV_FB_USED`` and ``DCGM_FI_DEV_FB_FREE`` but not the guide's ``DCGM_FI_DEV_FB_TOTAL``
(docs/reference-sources.md#dcgm), so memory use is ``used / (used + free)``; the same thresholds drive the
portal's own alerts (``gpucore.alerts``).
"""

from __future__ import annotations

from typing import Any

from gpucore.alerts import MEMORY_PRESSURE_FOR_MINUTES, MEMORY_PRESSURE_RATIO, TEMPERATURE_LIMIT_C
from gpucore.manifests.contexts import MANAGED_BY, MANAGED_BY_LABEL, ManifestError, is_dns_label

MONITORING_API_VERSION = "monitoring.coreos.com/v1"
RULE_NAME = "gpu-portal-gpu-alerts"
SERVICE_MONITOR_NAME = "gpu-portal-dcgm-exporter"
# The GPU Operator's dcgm-exporter Service: label app=nvidia-dcgm-exporter, port gpu-metrics (guide 004).
DCGM_EXPORTER_LABELS = {"app": "nvidia-dcgm-exporter"}
DCGM_EXPORTER_PORT = "gpu-metrics"
HIGH_UTILIZATION_PCT = 90
HIGH_UTILIZATION_FOR = "5m"
_LABELS = {MANAGED_BY_LABEL: MANAGED_BY}


def _memory_ratio() -> str:
    return "DCGM_FI_DEV_FB_USED / (DCGM_FI_DEV_FB_USED + DCGM_FI_DEV_FB_FREE)"


def render_gpu_alert_rule(*, namespace: str, cluster: str) -> dict[str, Any]:
    """The PrometheusRule with the guide's three GPU alerts, labelled with the cluster for routing."""
    if not is_dns_label(namespace):
        raise ManifestError(f"Monitoring namespace '{namespace}' is not a DNS label.")
    labels = {"severity": "warning", "gpu_portal_cluster": cluster}
    rules = [
        {
            "alert": "GPUHighUtilization",
            "expr": f"DCGM_FI_DEV_GPU_UTIL > {HIGH_UTILIZATION_PCT}",
            "for": HIGH_UTILIZATION_FOR,
            "labels": dict(labels),
            "annotations": {
                "summary": f"GPU utilization above {HIGH_UTILIZATION_PCT}% for 5 minutes",
                "description": "GPU {{ $labels.gpu }} on {{ $labels.Hostname }} ({{ $labels.namespace }}/"
                "{{ $labels.pod }}) has been above 90% utilization for 5 minutes.",
            },
        },
        {
            "alert": "GPUMemoryPressure",
            "expr": f"{_memory_ratio()} > {MEMORY_PRESSURE_RATIO}",
            "for": f"{MEMORY_PRESSURE_FOR_MINUTES}m",
            "labels": dict(labels),
            "annotations": {
                "summary": f"GPU memory usage above {MEMORY_PRESSURE_RATIO:.0%} for 2 minutes",
                "description": "GPU {{ $labels.gpu }} on {{ $labels.Hostname }} ({{ $labels.namespace }}/"
                "{{ $labels.pod }}) uses {{ $value | humanizePercentage }} of its memory.",
            },
        },
        {
            "alert": "GPUThermalThrottle",
            "expr": f"DCGM_FI_DEV_GPU_TEMP > {TEMPERATURE_LIMIT_C:g}",
            "labels": {**labels, "severity": "critical"},
            "annotations": {
                "summary": "GPU temperature exceeding safe threshold",
                "description": "GPU {{ $labels.gpu }} on {{ $labels.Hostname }} is at {{ $value }} °C (above 83).",
            },
        },
    ]
    return {
        "apiVersion": MONITORING_API_VERSION,
        "kind": "PrometheusRule",
        "metadata": {"name": RULE_NAME, "namespace": namespace, "labels": dict(_LABELS)},
        "spec": {"groups": [{"name": "gpu_alerts", "rules": rules}]},
    }


def render_dcgm_service_monitor(*, namespace: str) -> dict[str, Any]:
    """The ServiceMonitor that scrapes the GPU Operator's dcgm-exporter (guide 004), every 30 s."""
    if not is_dns_label(namespace):
        raise ManifestError(f"Monitoring namespace '{namespace}' is not a DNS label.")
    return {
        "apiVersion": MONITORING_API_VERSION,
        "kind": "ServiceMonitor",
        "metadata": {"name": SERVICE_MONITOR_NAME, "namespace": namespace, "labels": dict(_LABELS)},
        "spec": {
            "selector": {"matchLabels": dict(DCGM_EXPORTER_LABELS)},
            "namespaceSelector": {"matchNames": [namespace]},
            # honorLabels false (the default): Prometheus renames the exporter's namespace/pod labels to
            # exported_namespace/exported_pod, which billing reads as well as the plain ones.
            "endpoints": [{"port": DCGM_EXPORTER_PORT, "path": "/metrics", "interval": "30s", "scrapeTimeout": "10s"}],
        },
    }
