"""DRA output mode: for dedicated, MIG and time-sliced GPUs, single and multi-GPU, a request on a ``device_api: dra``
cluster renders a ResourceClaimTemplate that validates strictly at 1.34, 1.35 and 1.37 and whose CEL selectors,
evaluated against driver-shaped ResourceSlices, choose the intended devices and no others."""

from __future__ import annotations

import copy

import kubernetes_validate
import pytest

from gpucore.catalog import BUILTIN_CATALOG
from gpucore.dra_inventory import dra_target, quantity_bytes
from gpucore.manifests import ManifestError, render_request_objects
from gpucore.manifests.dra import DraTarget
from tests.gpucore.manifests import cases as mc
from tests.gpucore.manifests.dra_samples import A100_40, DEVICES, H100, T4, matching_devices, selects
from tests.gpucore.manifests.dra_validation import (
    DRA_KUBERNETES_VERSIONS,
    cel_errors,
    dra_semantic_errors,
    validate_dra,
)

# (model, strategy, GPUs per pod, workload type, the product and MIG profile the claim must get)
CASES = [
    ("H100-80GB", "dedicated", 1, "development", H100, None),
    ("H100-80GB", "dedicated", 8, "training", H100, None),
    ("A100-40GB", "dedicated", 2, "batch_inference", A100_40, None),
    ("A100-40GB", "mig", 1, "realtime_inference", A100_40, "2g.10gb"),
    ("A100-40GB", "mig", 2, "batch_inference", A100_40, "2g.10gb"),
    ("H100-80GB", "mig", 1, "development", H100, "2g.20gb"),
    ("T4", "time-slicing", 1, "development", T4, None),
]


def dra_context(model_name: str, strategy: str, quantity: int, workload_type: str, **overrides):
    model = BUILTIN_CATALOG.get(model_name)
    pool = mc.pool_for(model, strategy)
    spec = mc.spec_for(model, strategy, workload_type, quantity=quantity, replicas=1)
    fields = {
        "device_api": "dra",
        "dra_target": dra_target(DEVICES, product_label=pool.product_label),
        "team": mc.team({"nvidia.com/gpu": 16, spec["resource_name"]: 16}),
    }
    fields.update(overrides)
    return mc.context(model_name, strategy, workload_type, spec=spec, pool=pool, **fields)


def claim_of(objects: list[dict]) -> dict:
    (claim,) = mc.by_kind(objects, "ResourceClaimTemplate")
    return claim


@pytest.mark.parametrize(("model", "strategy", "quantity", "workload_type", "product", "profile"), CASES)
def test_a_dra_request_claims_the_intended_devices(model, strategy, quantity, workload_type, product, profile) -> None:
    objects = render_request_objects(dra_context(model, strategy, quantity, workload_type))
    claim = claim_of(objects)
    validate_dra(claim)
    work = mc.workload(objects)
    mc.validate(work, DRA_KUBERNETES_VERSIONS)
    assert claim["metadata"]["name"] == "gpr-42-gpu" and claim["metadata"]["namespace"] == "team-vision"
    assert claim["metadata"]["labels"]["gpu-portal/request"] == "42"  # released with the request
    # The claim goes before the workload that references it.
    kinds = [obj["kind"] for obj in objects]
    assert kinds.index("ResourceClaimTemplate") < kinds.index(work["kind"])

    (request,) = claim["spec"]["spec"]["devices"]["requests"]
    exactly = request["exactly"]
    assert exactly["deviceClassName"] == ("mig.nvidia.com" if strategy == "mig" else "gpu.nvidia.com")
    assert exactly["allocationMode"] == "ExactCount" and exactly["count"] == quantity

    chosen = matching_devices(claim)
    assert chosen, "no device matches"
    assert {device.product_name for device in chosen} == {product}
    assert {device.profile for device in chosen} == {profile}
    # Every device of that kind is eligible (a floor from what the driver reported never excludes one of them).
    intended = [d for d in DEVICES if d.product_name == product and d.profile == profile]
    assert sorted(d.name + d.node for d in chosen) == sorted(d.name + d.node for d in intended)
    # The claim can be met on one node.
    per_node = {}
    for device in chosen:
        per_node[device.node] = per_node.get(device.node, 0) + 1
    assert max(per_node.values()) >= quantity

    # Pods reference the template; the container holds the claim and no device-plugin resource; no GFD labels.
    template = mc.pod_template(work)
    assert template["spec"]["resourceClaims"] == [{"name": "gpu", "resourceClaimTemplateName": "gpr-42-gpu"}]
    container = mc.main_container(work)
    assert container["resources"]["claims"] == [{"name": "gpu"}]
    assert not any(key.startswith("nvidia.com/") for key in container["resources"]["limits"])
    assert not any(key.startswith("nvidia.com/gpu.") for key in template["spec"].get("nodeSelector", {}))


def test_a_time_sliced_share_asks_for_a_share_of_one_gpu_with_the_drivers_time_slicing() -> None:
    claim = claim_of(render_request_objects(dra_context("T4", "time-slicing", 1, "development")))
    (request,) = claim["spec"]["spec"]["devices"]["requests"]
    # A quarter of the 15360Mi the T4s report (four replicas per GPU in the pool), not a whole device.
    assert request["exactly"]["capacity"] == {"requests": {"memory": "3840Mi"}}
    (config,) = claim["spec"]["spec"]["devices"]["config"]
    assert config["requests"] == ["gpu"]
    assert config["opaque"]["driver"] == "gpu.nvidia.com"
    assert config["opaque"]["parameters"]["kind"] == "GpuConfig"
    assert config["opaque"]["parameters"]["sharing"]["strategy"] == "TimeSlicing"


def test_the_memory_floor_is_what_the_driver_reported_not_the_nominal_size() -> None:
    claim = claim_of(render_request_objects(dra_context("H100-80GB", "dedicated", 1, "development")))
    expressions = [
        s["cel"]["expression"] for s in claim["spec"]["spec"]["devices"]["requests"][0]["exactly"]["selectors"]
    ]
    assert "device.attributes['gpu.nvidia.com'].productName == 'NVIDIA H100 80GB HBM3'" in expressions
    assert "device.capacity['gpu.nvidia.com'].memory.compareTo(quantity('81559Mi')) >= 0" in expressions
    h100 = next(d for d in DEVICES if d.product_name == H100 and d.type == "gpu")
    # The trap: an "80 GB" H100 reports less than 80Gi, so a nominal floor would match none of them, and
    # isGreaterThan would exclude a card reporting exactly the floor.
    assert not selects("device.capacity['gpu.nvidia.com'].memory.compareTo(quantity('80Gi')) >= 0", h100)
    assert selects(expressions[-1], h100)
    assert h100.memory_bytes == quantity_bytes("81559Mi")


def test_without_observed_slices_the_catalog_floor_still_admits_the_model() -> None:
    ctx = dra_context("H100-80GB", "dedicated", 1, "development", dra_target=None)
    claim = claim_of(render_request_objects(ctx))
    chosen = matching_devices(claim)
    assert any(d.product_name == H100 for d in chosen)
    assert not any(d.product_name in (A100_40, T4) for d in chosen)  # the smaller cards are excluded by memory


def test_billing_share_and_quota_are_the_same_whichever_api_delivers_the_gpus() -> None:
    for model, strategy, quantity, workload_type, _, _ in CASES:
        plugin = mc.workload(
            render_request_objects(dra_context(model, strategy, quantity, workload_type, device_api="device-plugin"))
        )
        dra = mc.workload(render_request_objects(dra_context(model, strategy, quantity, workload_type)))
        assert (
            dra["metadata"]["annotations"]["gpu-portal/gpu-share"]
            == plugin["metadata"]["annotations"]["gpu-portal/gpu-share"]
        )


def test_dra_kinds_fail_where_kubernetes_has_no_schema_for_them() -> None:
    claim = claim_of(render_request_objects(dra_context("H100-80GB", "dedicated", 1, "development")))
    # The CLI only prints "couldn't find schema" and exits 0 for resource.k8s.io/v1 before 1.34: here it fails.
    with pytest.raises(kubernetes_validate.SchemaNotFoundError):
        kubernetes_validate.validate(claim, "1.33.0", strict=True)


def test_the_semantic_checks_catch_what_the_schema_lets_through() -> None:
    claim = claim_of(render_request_objects(dra_context("A100-40GB", "mig", 2, "batch_inference")))
    assert dra_semantic_errors(claim) == []
    request = claim["spec"]["spec"]["devices"]["requests"][0]

    def broken(change) -> dict:
        copied = copy.deepcopy(claim)
        change(copied["spec"]["spec"]["devices"]["requests"][0])
        return copied

    cases = {
        "exactly one of": lambda r: r.update(firstAvailable=[{"name": "a", "deviceClassName": "gpu.nvidia.com"}]),
        "DNS label": lambda r: r.update(name="GPU_0"),
        "count must be >= 1": lambda r: r["exactly"].update(count=-1),
        "unknown DeviceClass": lambda r: r["exactly"].update(deviceClassName="gpu.example.com"),
        "Failed to parse": lambda r: r["exactly"]["selectors"][0]["cel"].update(expression="device.attributes[' =="),
    }
    for message, change in cases.items():
        bad = broken(change)
        for version in DRA_KUBERNETES_VERSIONS:  # the schema accepts every one of these
            if message != "exactly one of":
                kubernetes_validate.validate(bad, version, strict=True)
        assert any(message in error for error in dra_semantic_errors(bad)), (message, dra_semantic_errors(bad))
    assert request["exactly"]["count"] == 2
    assert cel_errors("device.capacity['gpu.nvidia.com'].memory.compareTo(quantity('1Gi') >= 0")


def test_a_cel_string_cannot_be_broken_out_of() -> None:
    ctx = dra_context("H100-80GB", "dedicated", 1, "development", dra_target=DraTarget(product_name="x' || true || '"))
    with pytest.raises(ManifestError, match="CEL string"):
        render_request_objects(ctx)


def test_an_unknown_device_api_is_refused() -> None:
    with pytest.raises(ManifestError, match="device API"):
        dra_context("H100-80GB", "dedicated", 1, "development", device_api="cdi")


def test_a_two_by_eight_gpu_gang_on_dra_is_a_jobset_whose_pods_each_claim_eight_gpus() -> None:
    model = BUILTIN_CATALOG.get("H100-80GB")
    pool = mc.pool_for(model, "dedicated")
    ctx = mc.context(
        "H100-80GB",
        "dedicated",
        "training",
        spec=mc.spec_for(model, "dedicated", "training", quantity=8, replicas=2),
        pool=pool,
        device_api="dra",
        dra_target=dra_target(DEVICES, product_label=pool.product_label),
    )
    objects = render_request_objects(ctx)
    claim = claim_of(objects)
    validate_dra(claim)
    jobset = mc.workload(objects)
    assert jobset["kind"] == "JobSet"
    mc.validate(jobset, DRA_KUBERNETES_VERSIONS)
    # One claim per pod from the template: each worker gets its own eight H100s.
    assert mc.pod_template(jobset)["spec"]["resourceClaims"][0]["resourceClaimTemplateName"] == "gpr-42-gpu"
    assert claim["spec"]["spec"]["devices"]["requests"][0]["exactly"]["count"] == 8
    assert len(matching_devices(claim)) == 8
