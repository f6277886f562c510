"""The guides' GPU alerts and the dcgm-exporter scrape as Prometheus Operator objects, in a cluster's own objects,
validated against the Prometheus Operator's CRD schemas (monitoring_schemas/)."""

from __future__ import annotations

import copy

import pytest

from gpucore.manifests import ClusterContext, ManifestError, render_cluster_objects
from gpucore.manifests.monitoring import render_dcgm_service_monitor, render_gpu_alert_rule
from gpucore.sla import DEFAULT_TIERS
from tests.gpucore.manifests import cases as mc
from tests.gpucore.manifests.kueue_validation import kueue_errors, validate_kueue


def test_the_alert_rule_carries_the_guides_three_alerts() -> None:
    rule = render_gpu_alert_rule(namespace="gpu-operator", cluster="gpu-east")
    validate_kueue(rule)
    mc.check_names_and_labels(rule)
    rules = {r["alert"]: r for r in rule["spec"]["groups"][0]["rules"]}
    # MIG instances report no DCGM_FI_DEV_GPU_UTIL: their graphics-engine ratio stands in.
    assert rules["GPUHighUtilization"]["expr"] == (
        'DCGM_FI_DEV_GPU_UTIL > 90 or DCGM_FI_PROF_GR_ENGINE_ACTIVE{GPU_I_PROFILE!=""} * 100 > 90'
    )
    assert rules["GPUHighUtilization"]["for"] == "5m"
    # dcgm-exporter's default counters have FB_USED and FB_FREE, not the guide's FB_TOTAL.
    assert rules["GPUMemoryPressure"]["expr"] == (
        "DCGM_FI_DEV_FB_USED / (DCGM_FI_DEV_FB_USED + DCGM_FI_DEV_FB_FREE) > 0.85"
    )
    assert rules["GPUMemoryPressure"]["for"] == "2m"
    assert rules["GPUThermalThrottle"]["expr"] == "DCGM_FI_DEV_GPU_TEMP > 83"
    assert "for" not in rules["GPUThermalThrottle"]  # immediately, as the guide writes it
    assert {r["labels"]["gpu_portal_cluster"] for r in rules.values()} == {"gpu-east"}


def test_the_service_monitor_scrapes_the_gpu_operators_dcgm_exporter() -> None:
    monitor = render_dcgm_service_monitor(namespace="gpu-operator")
    validate_kueue(monitor)
    assert monitor["spec"]["selector"] == {"matchLabels": {"app": "nvidia-dcgm-exporter"}}
    assert monitor["spec"]["endpoints"] == [
        {"port": "gpu-metrics", "path": "/metrics", "interval": "30s", "scrapeTimeout": "10s"}
    ]
    broken = copy.deepcopy(monitor)
    broken["spec"]["endpoints"][0]["interval"] = "thirty seconds"
    assert kueue_errors(broken)  # the schema's duration pattern refuses it
    broken = copy.deepcopy(monitor)
    broken["spec"]["endpoint"] = broken["spec"].pop("endpoints")
    assert kueue_errors(broken)  # an unknown field


def test_the_cluster_objects_include_monitoring_only_where_asked() -> None:
    plain = render_cluster_objects(ClusterContext(name="gpu-east", tiers=DEFAULT_TIERS))
    assert not {"PrometheusRule", "ServiceMonitor"} & {o["kind"] for o in plain}
    watched = render_cluster_objects(
        ClusterContext(name="gpu-east", tiers=DEFAULT_TIERS, monitoring_namespace="monitoring")
    )
    assert [o["kind"] for o in watched][-2:] == ["PrometheusRule", "ServiceMonitor"]
    assert {o["metadata"]["namespace"] for o in watched[-2:]} == {"monitoring"}
    with pytest.raises(ManifestError, match="not a DNS label"):
        render_gpu_alert_rule(namespace="Monitoring", cluster="gpu-east")


def test_alert_annotations_read_the_workloads_labels_under_honor_labels_false() -> None:
    rule = render_gpu_alert_rule(namespace="gpu-operator", cluster="gpu-east")
    for item in rule["spec"]["groups"][0]["rules"]:
        text = item["annotations"]["description"]
        # Either spelling of the host label (dcgm-exporter renamed Hostname to hostname).
        assert "{{ or $labels.hostname $labels.Hostname }}" in text
        if "$labels.pod" in text:
            assert "{{ or $labels.exported_namespace $labels.namespace }}" in text
            assert "{{ or $labels.exported_pod $labels.pod }}" in text


def test_the_cluster_sets_extra_labels_for_the_prometheus_operators_selectors() -> None:
    ctx = ClusterContext(
        name="gpu-east",
        tiers=DEFAULT_TIERS,
        monitoring_namespace="monitoring",
        monitoring_labels={"release": "kube-prometheus-stack"},
    )
    rule, monitor = render_cluster_objects(ctx)[-2:]
    for obj in (rule, monitor):
        validate_kueue(obj)
        mc.check_names_and_labels(obj)
        assert obj["metadata"]["labels"] == {
            "app.kubernetes.io/managed-by": "gpu-portal",
            "release": "kube-prometheus-stack",
        }
    with pytest.raises(ManifestError, match="not a valid label value"):
        ClusterContext(name="gpu-east", monitoring_labels={"release": "a b"})
    with pytest.raises(ManifestError, match="portal's own label"):
        render_dcgm_service_monitor(namespace="monitoring", labels={"app.kubernetes.io/managed-by": "helm"})
