"""The guides' GPU alerts and the dcgm-exporter scrape as Prometheus Operator objects, in a cluster's own objects,
validated against the Prometheus Operator's CRD schemas (monitoring_schemas/)."""

from __future__ import annotations

import copy
import re
from pathlib import Path

import pytest
import yaml

from gpucore.manifests import ClusterContext, ManifestError, render_cluster_objects
from gpucore.manifests.monitoring import render_dcgm_service_monitor, render_gpu_alert_rule
from gpucore.sla import DEFAULT_TIERS
from gpucore.utilization_promql import (
    HEALTH_RECORDED,
    RECORDED,
    health_pull_queries,
    recorded_pull_queries,
    rule_groups,
)
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


def test_the_rule_records_the_utilization_pulls_minutes_every_minute() -> None:
    rule = render_gpu_alert_rule(namespace="gpu-operator", cluster="gpu-east", scrape_max_age=45)
    validate_kueue(rule)
    [alerts, recording, health] = rule["spec"]["groups"]
    assert alerts["name"] == "gpu_alerts"
    assert (recording["name"], recording["interval"]) == ("gpu_portal_utilization", "1m")
    assert (health["name"], health["interval"]) == ("gpu_portal_health", "1m")
    assert {item["record"] for item in health["rules"]} == set(HEALTH_RECORDED.values())
    assert all(
        f"{name}[1h]" in " ".join(health_pull_queries(recorded=True).values()) for name in HEALTH_RECORDED.values()
    )
    recorded = {item["record"]: item["expr"] for item in recording["rules"]}
    assert set(recorded) == set(RECORDED.values())
    # The freshness test that keeps scrape gaps from counting, at the portal's own max age.
    assert "(time() - timestamp(DCGM_FI_DEV_GPU_UTIL) < 45)" in recorded[RECORDED["util"]]
    assert "DCGM_FI_PROF_GR_ENGINE_ACTIVE" in recorded[RECORDED["scraped"]]
    # The pull reads what the rules record, by the same names.
    assert all(f"{name}[1h]" in " ".join(recorded_pull_queries().values()) for name in RECORDED.values())
    broken = copy.deepcopy(rule)
    broken["spec"]["groups"][1]["interval"] = "every minute"
    assert kueue_errors(broken)  # the schema's duration pattern refuses it


def test_the_documented_rule_file_is_the_one_the_portal_renders() -> None:
    text = (Path(__file__).resolve().parents[3] / "docs" / "capacity-planning.md").read_text()
    [block] = re.findall(r"```yaml\n(groups:\n.*?)```", text, flags=re.S)
    assert yaml.safe_load(block) == {"groups": rule_groups()}
