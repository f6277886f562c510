"""The manifest renderer: GPU Operator configuration, i.e. the device plugin's time-slicing ConfigMap and the
mig-parted ConfigMap, checked against NVIDIA's reference cases and named MIG layouts."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from gpucore.catalog import BUILTIN_CATALOG, GpuModelSpec, MigProfile
from gpucore.manifests import (
    ManifestError,
    PoolContext,
    check_mig_layout,
    mig_config_name,
    pool_node_labels,
    render_mig_parted_configmap,
    render_request_objects,
    render_time_slicing_configmap,
    time_slicing_config,
    to_yaml,
    validate_device_plugin_config,
)
from gpucore.manifests.gpu_operator import (
    validate_replica_devices,
    validate_replicated_resource,
    validate_replicated_resources,
)
from tests.gpucore.manifests import cases as mc


@pytest.fixture(scope="module")
def shared_dir() -> Path:
    # The reference data is part of the task's inputs: a missing folder is a failure, not a skip.
    if not mc.SHARED_DIR.is_dir():
        pytest.fail(f"The shared reference folder is missing: {mc.SHARED_DIR}")
    return mc.SHARED_DIR


# --- Time-slicing: the device plugin ConfigMap ----------------------------------------------------------------------


def _ts_pool(name: str = "t4-ts", replicas: int = 4, **fields) -> PoolContext:
    return PoolContext(
        name=name,
        gpu_model=fields.pop("gpu_model", "T4"),
        product_label=fields.pop("product_label", "Tesla-T4"),
        sharing_mode="time-slicing",
        time_slice_replicas=replicas,
        **fields,
    )


def test_time_slicing_configmap_round_trips() -> None:
    configmap = render_time_slicing_configmap(
        [_ts_pool(), _ts_pool("l4-ts", 2, gpu_model="L4", product_label="NVIDIA-L4")]
    )
    mc.validate(configmap)
    mc.check_names_and_labels(configmap)
    assert configmap["metadata"]["namespace"] == "gpu-operator"
    assert set(configmap["data"]) == {"default", "t4-ts", "l4-ts"}
    assert yaml.safe_load(configmap["data"]["t4-ts"]) == {
        "version": "v1",
        "flags": {"migStrategy": "none"},
        "sharing": {
            "timeSlicing": {
                "renameByDefault": False,
                "failRequestsGreaterThanOne": True,
                "resources": [{"name": "nvidia.com/gpu", "replicas": 4}],
            }
        },
    }
    assert yaml.safe_load(configmap["data"]["l4-ts"])["sharing"]["timeSlicing"]["resources"][0]["replicas"] == 2
    assert yaml.safe_load(configmap["data"]["default"]) == {"version": "v1", "flags": {"migStrategy": "mixed"}}
    # Through the multi-document YAML too: the payload is a literal block that parses back to the same config.
    (reparsed,) = yaml.safe_load_all(to_yaml([configmap]))
    assert reparsed == configmap
    assert "t4-ts: |" in to_yaml([configmap])


def test_time_slicing_node_labels() -> None:
    assert pool_node_labels(_ts_pool()) == {"nvidia.com/device-plugin.config": "t4-ts"}
    a100 = _ts_pool("a100-ts", gpu_model="A100-40GB", product_label="NVIDIA-A100-SXM4-40GB")
    assert pool_node_labels(a100) == {
        "nvidia.com/device-plugin.config": "a100-ts",
        "nvidia.com/mig.config": "all-disabled",
    }


@pytest.mark.parametrize("replicas", [1, 0, -1])
def test_fewer_than_two_replicas_is_refused_with_the_plugins_message(replicas: int) -> None:
    with pytest.raises(ManifestError, match="number of replicas must be >= 2"):
        _ts_pool(replicas=replicas)
    config = time_slicing_config(_ts_pool())
    config["sharing"]["timeSlicing"]["resources"][0]["replicas"] = replicas
    with pytest.raises(ManifestError, match="number of replicas must be >= 2"):
        validate_device_plugin_config(config)


def test_renamed_shared_gpus_keep_the_product_label() -> None:
    pool = _ts_pool(rename_by_default=True)
    assert time_slicing_config(pool)["sharing"]["timeSlicing"]["renameByDefault"] is True
    spec = mc.spec_for(BUILTIN_CATALOG.get("T4"), "time-slicing", "development", resource_name="nvidia.com/gpu.shared")
    objects = render_request_objects(mc.context("T4", "time-slicing", "development", pool=pool, spec=spec))
    work = mc.workload(objects)
    assert mc.pod_template(work)["spec"]["nodeSelector"]["nvidia.com/gpu.product"] == "Tesla-T4"
    assert mc.main_container(work)["resources"]["limits"]["nvidia.com/gpu.shared"] == "1"
    with pytest.raises(ManifestError, match="another name"):
        render_request_objects(mc.context("T4", "time-slicing", "development", pool=_ts_pool(), spec=spec))


def test_a_time_slicing_configmap_refuses_other_pools() -> None:
    whole = PoolContext(name="t4", gpu_model="T4", product_label="Tesla-T4")
    with pytest.raises(ManifestError, match="not a time-slicing pool"):
        render_time_slicing_configmap([whole])
    with pytest.raises(ManifestError, match="used twice"):
        render_time_slicing_configmap([_ts_pool(), _ts_pool()])


def _validation_cases() -> list[dict]:
    path = mc.SHARED_DIR / "reference" / "timeslicing" / "validation-cases.yaml"
    if not path.is_file():
        return [{"id": "missing-reference", "level": "missing", "path": str(path)}]
    modelled = {"resource", "devices", "block", "config"}
    return [case for case in yaml.safe_load(path.read_text())["cases"] if case["level"] in modelled]


@pytest.mark.reference
@pytest.mark.parametrize("case", _validation_cases(), ids=lambda case: case["id"])
def test_the_device_plugin_validation_cases(case: dict) -> None:
    """The accept/reject cases restated from k8s-device-plugin's own unit tests, run against our validator."""
    if case["level"] == "missing":
        pytest.fail(f"Reference file missing: {case['path']}")
    data = case["input"]
    if case["level"] == "resource" and "<" in str(data.get("name")):
        data = {**data, "name": "nvidia.com/" + "a" * 60}  # the case's placeholder for an over-long name
    check = {
        "resource": lambda: validate_replicated_resource(data),
        "devices": lambda: validate_replica_devices(json.loads(data)),
        "block": lambda: validate_replicated_resources(json.loads(data)),
        "config": lambda: validate_device_plugin_config(yaml.safe_load(data)),
    }[case["level"]]
    if case["expect"] == "ok":
        result = check()
        if "normalized" in case:
            assert result == case["normalized"]
        if "normalized_rename" in case:
            assert result[0]["rename"] == case["normalized_rename"]
        return
    with pytest.raises(ManifestError) as refused:
        check()
    expected = case.get("error") or case.get("error_prefix")
    if expected:
        assert str(refused.value).startswith(expected)


# --- MIG: the mig-parted ConfigMap ----------------------------------------------------------------------------------


def _mig_pool(name: str, model: str, devices: dict[str, int]) -> PoolContext:
    spec = BUILTIN_CATALOG.get(model)
    return PoolContext(
        name=name, gpu_model=model, product_label=spec.product_label, sharing_mode="mig", mig_devices=devices
    )


def test_mig_configmap_round_trips() -> None:
    pools = [
        _mig_pool("a100-mixed", "A100-40GB", {"3g.20gb": 1, "1g.5gb": 2, "2g.10gb": 1}),
        _mig_pool("a30-halves", "A30", {"2g.12gb": 2}),
    ]
    configmap = render_mig_parted_configmap(pools)
    mc.validate(configmap)
    mc.check_names_and_labels(configmap)
    config = yaml.safe_load(configmap["data"]["config.yaml"])
    assert config == {
        "version": "v1",
        "mig-configs": {
            "all-disabled": [{"devices": "all", "mig-enabled": False}],
            "gpu-portal-a100-mixed": [
                {"devices": "all", "mig-enabled": True, "mig-devices": {"1g.5gb": 2, "2g.10gb": 1, "3g.20gb": 1}}
            ],
            "gpu-portal-a30-halves": [{"devices": "all", "mig-enabled": True, "mig-devices": {"2g.12gb": 2}}],
        },
    }
    assert pool_node_labels(pools[0]) == {"nvidia.com/mig.config": "gpu-portal-a100-mixed"}
    (reparsed,) = yaml.safe_load_all(to_yaml([configmap]))
    assert reparsed == configmap


@pytest.mark.reference
def test_a100_all_balanced_matches_nvidias_named_config(shared_dir: Path) -> None:
    reference_path = shared_dir / "reference" / "mig" / "named-configs-by-gpu.yaml"
    assert reference_path.is_file(), f"missing reference: {reference_path}"
    reference = yaml.safe_load(reference_path.read_text())["A100-40GB"]["named_configs"]["all-balanced"]
    pool = _mig_pool("all-balanced", "A100-40GB", {"3g.20gb": 1, "2g.10gb": 1, "1g.5gb": 2})
    config = yaml.safe_load(render_mig_parted_configmap([pool])["data"]["config.yaml"])
    (entry,) = config["mig-configs"][mig_config_name(pool)]
    assert entry == {"devices": "all", **reference}
    assert list(entry["mig-devices"]) == list(reference["mig-devices"])  # same order as NVIDIA's file


def _reference_layouts() -> list[tuple[str, str, dict[str, int]]]:
    path = mc.SHARED_DIR / "reference" / "mig" / "named-configs-by-gpu.yaml"
    if not path.is_file():
        return [("missing", str(path), {})]
    families = {
        "A100-40GB": ["A100-40GB"],
        "A100-80GB / H100-80GB (also A800-80GB, H800-80GB)": ["A100-80GB", "H100-80GB"],
        "H200-141GB / H200 NVL": ["H200"],
        "A30-24GB": ["A30"],
    }
    reference = yaml.safe_load(path.read_text())
    layouts = []
    for family, models in families.items():
        for config_name, config in reference[family]["named_configs"].items():
            if config.get("mig-devices"):
                layouts.extend((model, config_name, config["mig-devices"]) for model in models)
    return layouts


@pytest.mark.reference
@pytest.mark.parametrize(("model", "config_name", "devices"), _reference_layouts(), ids=lambda v: str(v))
def test_every_nvidia_named_layout_of_our_models_is_accepted(model: str, config_name: str, devices: dict) -> None:
    if model == "missing":
        pytest.fail(f"Reference file missing: {config_name}")
    assert check_mig_layout(BUILTIN_CATALOG.get(model), devices) == devices


@pytest.mark.parametrize(
    ("model", "devices", "message"),
    [
        ("A100-40GB", {"3g.20gb": 3}, "at most 2 x '3g.20gb'"),
        ("A100-40GB", {"1g.5gb": 8}, "at most 7 x '1g.5gb'"),
        ("A100-40GB", {"5g.25gb": 1}, "A100-40GB has no MIG profile '5g.25gb'"),
        ("A100-40GB", {"2g.20gb": 1}, "has no MIG profile '2g.20gb'"),  # an A100-80GB profile
        ("A100-40GB", {"3g.20gb": 2, "1g.5gb": 1}, "needs 9 memory slices; the GPU has 8"),
        ("A100-40GB", {"4g.20gb": 1, "2g.10gb": 2}, "needs 8 compute slices; the GPU has 7"),
        ("A30", {"2g.12gb": 2, "1g.6gb": 1}, "needs 5 memory slices; the GPU has 4"),
        ("A100-40GB", {"1g.5gb": 0}, "whole number >= 1"),
        ("T4", {"1g.5gb": 1}, "not MIG-capable"),
    ],
)
def test_impossible_mig_layouts_are_refused(model: str, devices: dict, message: str) -> None:
    with pytest.raises(ManifestError, match=message.replace("+", r"\+")):
        check_mig_layout(BUILTIN_CATALOG.get(model), devices)


def test_a_mig_pool_with_an_impossible_layout_is_refused_at_render_time() -> None:
    pool = _mig_pool("a100-bad", "A100-40GB", {"3g.20gb": 3})
    with pytest.raises(ManifestError, match="at most 2"):
        render_mig_parted_configmap([pool])


def test_layouts_whose_start_slices_collide_are_refused() -> None:
    # Sums alone would accept this: 4 + 4 memory slices, 4 + 3 compute slices; but both profiles may only start at
    # slice 0 on this (made-up) GPU, so no placement exists.
    profiles = (
        MigProfile("4g.20gb", 20, 4, 4, 1, (0,)),
        MigProfile("3g.20gb", 20, 3, 4, 1, (0,)),
    )
    model = GpuModelSpec(
        name="X100", memory_gb=40, product_label="X100", tdp_watts=1, family="test",
        mig_compute_slices=7, mig_memory_slices=8, mig_profiles=profiles,
    )  # fmt: skip
    with pytest.raises(ManifestError, match="cannot be placed"):
        check_mig_layout(model, {"4g.20gb": 1, "3g.20gb": 1})
    assert check_mig_layout(model, {"4g.20gb": 1}) == {"4g.20gb": 1}
