"""The manifest renderer: team objects (Namespace, NetworkPolicy, ResourceQuota, LimitRange), PriorityClasses,
and the renderer's refusals of bad specs, contexts, teams and pools."""

from __future__ import annotations

import dataclasses
import itertools

import pytest

from gpucore.catalog import BUILTIN_CATALOG
from gpucore.manifests import (
    ManifestError,
    PoolContext,
    TeamContext,
    render_limit_range,
    render_priority_class,
    render_priority_classes,
    render_request_objects,
    render_resource_quota,
    render_team_objects,
)
from gpucore.sla import DEFAULT_TIERS
from tests.gpucore.manifests import cases as mc

# --- Namespace objects and PriorityClasses --------------------------------------------------------------------------


def test_team_objects_validate() -> None:
    team = TeamContext("nlp", "team-nlp", {"nvidia.com/gpu": 6, "nvidia.com/mig-1g.5gb": 14})
    objects = render_team_objects(team)
    assert [o["kind"] for o in objects] == ["Namespace", "NetworkPolicy", "ResourceQuota", "LimitRange"]
    for obj in objects:
        mc.validate(obj)
        mc.check_names_and_labels(obj)
        assert obj["metadata"]["labels"]["gpu-portal/team"] == "nlp"
        assert "gpu-portal/request" not in obj["metadata"]["labels"]
    assert objects[0]["metadata"]["labels"]["pod-security.kubernetes.io/enforce"] == "restricted"


def test_resource_quota_keys() -> None:
    quota = render_resource_quota(TeamContext("nlp", "team-nlp", {"nvidia.com/gpu": 6, "nvidia.com/mig-2g.10gb": 4}))
    assert quota["spec"]["hard"] == {
        "requests.nvidia.com/gpu": "6",
        "limits.nvidia.com/gpu": "6",
        "requests.nvidia.com/mig-2g.10gb": "4",
        "limits.nvidia.com/mig-2g.10gb": "4",
    }
    assert render_resource_quota(TeamContext("nlp", "team-nlp")) is None
    assert [o["kind"] for o in render_team_objects(TeamContext("nlp", "team-nlp"))] == [
        "Namespace",
        "NetworkPolicy",
        "LimitRange",
    ]


def test_resource_quota_allows_nominal_plus_borrowing() -> None:
    team = TeamContext(
        "nlp", "team-nlp", {"nvidia.com/gpu": 2, "nvidia.com/mig-1g.10gb": 4}, borrowing={"nvidia.com/gpu": 3}
    )
    quota = render_resource_quota(team)
    mc.validate(quota)
    assert quota["spec"]["hard"]["requests.nvidia.com/gpu"] == "5"
    assert quota["spec"]["hard"]["requests.nvidia.com/mig-1g.10gb"] == "4"
    assert render_limit_range(team)["spec"]["limits"][0]["max"]["nvidia.com/gpu"] == "5"
    with pytest.raises(ManifestError, match="without a quota"):
        TeamContext("nlp", "team-nlp", {"nvidia.com/gpu": 2}, borrowing={"nvidia.com/mig-1g.10gb": 1})


def test_namespace_egress_follows_the_clusters_ports() -> None:
    def external(team: TeamContext) -> list[list[dict]]:
        (policy,) = [o for o in render_team_objects(team) if o["kind"] == "NetworkPolicy"]
        mc.validate(policy)
        return [rule["ports"] for rule in policy["spec"]["egress"] if "to" not in rule]

    dns = [{"protocol": "UDP", "port": 53}, {"protocol": "TCP", "port": 53}]
    assert external(TeamContext("nlp", "team-nlp")) == [dns, [{"protocol": "TCP", "port": 443}]]
    assert external(TeamContext("nlp", "team-nlp", egress_tcp_ports=[8443, 443])) == [
        dns,
        [{"protocol": "TCP", "port": 443}, {"protocol": "TCP", "port": 8443}],
    ]
    assert external(TeamContext("nlp", "team-nlp", egress_tcp_ports=[])) == [dns]
    with pytest.raises(ManifestError, match="Egress TCP ports"):
        TeamContext("nlp", "team-nlp", egress_tcp_ports=[70000])


@pytest.mark.parametrize("resource", ["cpu", "memory", "pods", "requests.nvidia.com/gpu", "kubernetes.io/foo"])
def test_only_extended_resources_take_quotas(resource: str) -> None:
    with pytest.raises(ManifestError, match="extended resource"):
        TeamContext("nlp", "team-nlp", {resource: 4})


def test_limit_range_bounds_gpus_without_handing_them_out() -> None:
    limit_range = render_limit_range(TeamContext("nlp", "team-nlp", {"nvidia.com/gpu": 32, "nvidia.com/mig-1g.5gb": 7}))
    (item,) = limit_range["spec"]["limits"]
    assert item["type"] == "Container"
    assert item["max"]["nvidia.com/gpu"] == "8"  # min(quota, GPUs per node)
    assert item["max"]["nvidia.com/mig-1g.5gb"] == "7"
    # An explicit 0 default: otherwise the API server defaults it to max and gives every container 8 GPUs.
    for key in ("default", "defaultRequest"):
        assert item[key]["nvidia.com/gpu"] == "0"
        assert item[key]["nvidia.com/mig-1g.5gb"] == "0"
    assert "min" not in item
    assert (item["defaultRequest"]["cpu"], item["defaultRequest"]["memory"]) == ("4", "8Gi")
    assert (item["default"]["cpu"], item["default"]["memory"]) == ("8", "16Gi")
    small = render_limit_range(TeamContext("nlp", "team-nlp", {"nvidia.com/gpu": 2}))
    assert small["spec"]["limits"][0]["max"]["nvidia.com/gpu"] == "2"


def test_network_policy_denies_by_default() -> None:
    (policy,) = [o for o in render_team_objects(TeamContext("nlp", "team-nlp")) if o["kind"] == "NetworkPolicy"]
    spec = policy["spec"]
    assert spec["podSelector"] == {}
    assert spec["policyTypes"] == ["Ingress", "Egress"]
    assert spec["ingress"] == [{"from": [{"podSelector": {}}]}]
    ports = [p for rule in spec["egress"] for p in rule.get("ports", [])]
    assert {"protocol": "UDP", "port": 53} in ports
    assert {"protocol": "TCP", "port": 443} in ports
    assert {"to": [{"podSelector": {}}]} in spec["egress"]


def test_priority_classes_per_tier() -> None:
    classes = render_priority_classes(DEFAULT_TIERS)
    for obj in classes:
        mc.validate(obj)
        mc.check_names_and_labels(obj)
    by_name = {c["metadata"]["name"]: c for c in classes}
    assert by_name["gpu-portal-tier1-realtime"]["value"] == 1_000_000
    assert by_name["gpu-portal-tier1-realtime"]["preemptionPolicy"] == "PreemptLowerPriority"
    assert by_name["gpu-portal-tier2-batch"]["preemptionPolicy"] == "PreemptLowerPriority"
    # Tier 3 is preemptible: it waits for capacity and never evicts anyone itself.
    assert by_name["gpu-portal-tier3-development"]["preemptionPolicy"] == "Never"
    assert all(c["globalDefault"] is False for c in classes)


def _may_evict(preemptor: dict, victim: dict) -> bool:
    # kube-scheduler's rule: a pod whose class preempts may evict pods of strictly lower priority, whatever their class.
    return preemptor["preemptionPolicy"] == "PreemptLowerPriority" and preemptor["value"] > victim["value"]


def test_only_preemptible_tiers_can_be_evicted_by_another_tier() -> None:
    by_slug = {tier.slug: tier for tier in DEFAULT_TIERS}
    classes = {c["metadata"]["labels"]["gpu-portal/sla-tier"]: c for c in render_priority_classes(DEFAULT_TIERS)}
    for preemptor, victim in itertools.permutations(classes, 2):
        expected = by_slug[victim].preemptible and not by_slug[preemptor].preemptible
        assert _may_evict(classes[preemptor], classes[victim]) is expected, (preemptor, victim)
    # Tier 1 may still take a tier-3 pod's GPU; it can never take tier 2's.
    assert _may_evict(classes["tier1_realtime"], classes["tier3_development"])
    assert not _may_evict(classes["tier1_realtime"], classes["tier2_batch"])


def test_a_preemptible_tier_at_the_protected_priority_is_refused() -> None:
    tier3 = next(tier for tier in DEFAULT_TIERS if tier.preemptible)
    with pytest.raises(ManifestError, match="must stay below 1,000,000"):
        render_priority_class(dataclasses.replace(tier3, priority_value=1_000_000))


# --- Refusals -------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("strategy", "workload_type", "tier", "message"),
    [
        ("mig", "realtime_inference", mc.TIER1, "requires dedicated"),
        ("time-slicing", "batch_inference", mc.TIER2, "requires MIG or dedicated"),
    ],
)
def test_the_tier_floor_is_enforced(strategy, workload_type, tier, message) -> None:
    with pytest.raises(ManifestError, match=message):
        render_request_objects(mc.context("A100-40GB", strategy, workload_type, tier=tier))


def test_pool_mismatches_are_refused() -> None:
    a100 = BUILTIN_CATALOG.get("A100-40GB")
    with pytest.raises(ManifestError, match="has H100-80GB GPUs"):
        render_request_objects(mc.context(pool=mc.pool_for(BUILTIN_CATALOG.get("H100-80GB"), "dedicated")))
    with pytest.raises(ManifestError, match="shares GPUs by 'time-slicing'"):
        render_request_objects(mc.context(pool=mc.pool_for(a100, "time-slicing")))
    eight_way = PoolContext(
        name="a100-ts8", gpu_model="A100-40GB", product_label=a100.product_label,
        sharing_mode="time-slicing", time_slice_replicas=8,
    )  # fmt: skip
    with pytest.raises(ManifestError, match="priced for 4 replicas"):
        render_request_objects(mc.context("A100-40GB", "time-slicing", "development", pool=eight_way))
    other_layout = PoolContext(
        name="a100-3g", gpu_model="A100-40GB", product_label=a100.product_label,
        sharing_mode="mig", mig_devices={"3g.20gb": 2},
    )  # fmt: skip
    with pytest.raises(ManifestError, match=r"no '2g\.10gb' MIG devices"):
        render_request_objects(mc.context("A100-40GB", "mig", "training", pool=other_layout))


def test_selector_conflicts_are_refused() -> None:
    spec = mc.spec_for(BUILTIN_CATALOG.get("A100-40GB"), "dedicated", "training", node_selector={
        "nvidia.com/gpu.product": "Tesla-T4"
    })  # fmt: skip
    with pytest.raises(ManifestError, match="GPU product is 'NVIDIA-A100-SXM4-40GB'"):
        render_request_objects(mc.context(spec=spec))
    spec = mc.spec_for(BUILTIN_CATALOG.get("A100-40GB"), "dedicated", "training", node_selector={
        "gpu-portal/pool": "elsewhere"
    })  # fmt: skip
    with pytest.raises(ManifestError, match="Node label 'gpu-portal/pool'"):
        render_request_objects(mc.context(spec=spec))


def test_the_pools_board_variant_wins_over_the_catalog_label() -> None:
    # Same catalog model, another board: the spec (catalog) says SXM4, the pool's nodes are PCIe.
    pcie = PoolContext(name="a100-pcie", gpu_model="A100-40GB", product_label="NVIDIA-A100-PCIE-40GB")
    work = mc.workload(render_request_objects(mc.context(pool=pcie)))
    assert mc.pod_template(work)["spec"]["nodeSelector"]["nvidia.com/gpu.product"] == "NVIDIA-A100-PCIE-40GB"


def test_more_than_one_time_sliced_share_is_refused() -> None:
    spec = mc.spec_for(BUILTIN_CATALOG.get("T4"), "time-slicing", "development", quantity=2)
    with pytest.raises(ManifestError, match="one share"):
        render_request_objects(mc.context("T4", "time-slicing", "development", spec=spec))


def test_more_gpus_than_a_container_may_hold_are_refused() -> None:
    spec = mc.spec_for(BUILTIN_CATALOG.get("H200"), "dedicated", "training", quantity=12)
    with pytest.raises(ManifestError, match="exceeds the namespace's maximum of 8"):
        render_request_objects(mc.context("H200", spec=spec))


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"strategy": "mps"}, "Unknown strategy"),
        ({"resource_name": "nvidia.com/mig-1g.5gb"}, "dedicated allocation uses 'nvidia.com/gpu'"),
        ({"quantity": 0}, "spec.quantity"),
        ({"quantity": True}, "spec.quantity"),
        ({"replicas": "2"}, "spec.replicas"),
        ({"gpu_model": None}, "lacks gpu_model"),
        ({"gpu_model": "Z100"}, "Unknown GPU model 'Z100'"),
        ({"time_slice_replicas": 4}, "Only time-sliced"),
        ({"node_selector": {"bad key!": "x"}}, "not a valid label key"),
    ],
)
def test_bad_specs_are_refused(overrides: dict, message: str) -> None:
    spec = mc.spec_for(BUILTIN_CATALOG.get("A100-40GB"), "dedicated", "training", **overrides)
    with pytest.raises(ManifestError, match=message):
        render_request_objects(mc.context(spec=spec))


def test_mig_spec_must_name_a_profile_of_the_model() -> None:
    t4 = BUILTIN_CATALOG.get("T4")
    spec = mc.spec_for(t4, "dedicated", "training", strategy="mig", resource_name="nvidia.com/mig-1g.5gb")
    with pytest.raises(ManifestError, match="not MIG-capable"):
        render_request_objects(mc.context("T4", with_pool=False, spec=spec))
    a30 = BUILTIN_CATALOG.get("A30")
    spec = mc.spec_for(a30, "mig", "training", resource_name="nvidia.com/mig-2g.10gb", mig_profile="2g.10gb")
    with pytest.raises(ManifestError, match=r"A30 has no MIG profile '2g\.10gb'"):
        render_request_objects(mc.context("A30", with_pool=False, tier=mc.TIER2, spec=spec))
    spec = mc.spec_for(a30, "mig", "training", resource_name="nvidia.com/mig-1g.6gb")
    with pytest.raises(ManifestError, match="disagrees with mig_profile"):
        render_request_objects(mc.context("A30", spec=spec))


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"request_id": 0}, "request_id"),
        ({"workload_type": "gaming"}, "Unknown workload type"),
        ({"image": " "}, "container image"),
        ({"command": "python train.py"}, "list of strings"),
        ({"duration_hours": 0}, "duration_hours must be > 0"),
        ({"port": 70000}, "port"),
        ({"env": {"A=B": "x"}}, "variable names"),
    ],
)
def test_bad_contexts_are_refused(fields: dict, message: str) -> None:
    with pytest.raises(ManifestError, match=message):
        mc.context(**fields)


def test_bad_teams_and_pools_are_refused() -> None:
    with pytest.raises(ManifestError, match="not a DNS label"):
        TeamContext("nlp", "Team_NLP")
    with pytest.raises(ManifestError, match="whole number >= 0"):
        TeamContext("nlp", "team-nlp", {"nvidia.com/gpu": -1})
    with pytest.raises(ManifestError, match="Taint effect"):
        PoolContext(name="p", gpu_model="T4", product_label="Tesla-T4", taints=[{"key": "a", "effect": "Never"}])
    with pytest.raises(ManifestError, match="only MIG pools have MIG devices"):
        PoolContext(name="p", gpu_model="T4", product_label="Tesla-T4", mig_devices={"1g.5gb": 1})
    with pytest.raises(ManifestError, match="needs its MIG devices"):
        PoolContext(name="p", gpu_model="A30", product_label="NVIDIA-A30", sharing_mode="mig")
