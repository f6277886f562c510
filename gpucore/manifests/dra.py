"""GPUs through Dynamic Resource Allocation (``resource.k8s.io/v1``, NVIDIA's DRA driver) instead of device-plugin
resources: one ResourceClaimTemplate per request, which the pods reference. Pure: plain dicts out.

docs/dra-and-kai.md, "DRA". Devices are chosen by CEL selectors on what the driver publishes in its ResourceSlices
(``productName`` of a GPU, ``profile`` of a MIG device, ``memory`` capacity), never by node labels. Thresholds come
from what the driver reports (``DraTarget``, learned from the cluster's ResourceSlices): an "80 GB" card reports less
than 80Gi, so a floor of the nominal size would match nothing, and ``isGreaterThan`` would exclude an exact match, so
the floor is ``compareTo(...) >= 0`` of the smallest memory the driver reported for that product.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from gpucore.catalog import GpuModelSpec
from gpucore.manifests.naming import ManifestError, is_label_value, request_labels, workload_name
from gpucore.vocabulary import Strategy

DRA_API_VERSION = "resource.k8s.io/v1"
DRIVER = "gpu.nvidia.com"
GPU_DEVICE_CLASS = "gpu.nvidia.com"
MIG_DEVICE_CLASS = "mig.nvidia.com"
DEVICE_CLASSES = (GPU_DEVICE_CLASS, MIG_DEVICE_CLASS)
CLAIM_NAME = "gpu"  # the pod's resourceClaims entry, the container's claim and the device request
GPU_CONFIG_API_VERSION = "resource.nvidia.com/v1beta1"
MEBI = 1024 * 1024
# Without a ResourceSlice to learn from, a device must report at least this share of the catalog's nominal size
# (an 80 GB H100 reports about 79.6 GiB; a 40 GB A100 exactly 40 GiB).
NOMINAL_MEMORY_FLOOR = 0.9


@dataclass(frozen=True, slots=True, kw_only=True)
class DraTarget:
    """What the driver reports for a pool's GPUs: the product name, the smallest memory of a GPU and of each MIG
    profile (bytes). ``product_name`` None: not observed yet (the selector then uses the catalog's memory only)."""

    product_name: str | None = None
    memory_bytes: int | None = None
    profile_memory_bytes: dict[str, int] = field(default_factory=dict)


def claim_template_name(request_id: int) -> str:
    """The request's ResourceClaimTemplate: ``gpr-<id>-gpu``."""
    return f"{workload_name(request_id)}-{CLAIM_NAME}"


def mebibytes(value: int) -> str:
    """A quantity in whole MiB, rounded down: a floor never above what the driver reported."""
    return f"{value // MEBI}Mi"


def _quoted(value: str) -> str:
    # A CEL string literal; the values are driver-reported names, refused if they could break out of the quotes.
    if "'" in value or "\\" in value or "\n" in value:
        raise ManifestError(f"'{value}' cannot be written as a CEL string.")
    return f"'{value}'"


def attribute_equals(name: str, value: str) -> str:
    """CEL: the driver's attribute ``name`` equals ``value``."""
    return f"device.attributes['{DRIVER}'].{name} == {_quoted(value)}"


def memory_at_least(quantity: str) -> str:
    """CEL: the device's memory capacity is at least ``quantity`` (``>= 0``: an exact match is admitted)."""
    return f"device.capacity['{DRIVER}'].memory.compareTo(quantity({_quoted(quantity)})) >= 0"


def parent_gpu_in(uuids: Sequence[str]) -> str:
    """CEL: a MIG device carved from one of these GPUs (the driver's ``parentUUID``)."""
    return f"device.attributes['{DRIVER}'].parentUUID in [{', '.join(_quoted(uuid) for uuid in uuids)}]"


def device_selectors(
    strategy: Strategy,
    model: GpuModelSpec,
    mig_profile: str | None,
    target: DraTarget,
    *,
    parent_gpus: Sequence[str] = (),
) -> list[str]:
    """The CEL expressions choosing the device: the model by product name and memory floor, a MIG slice by profile
    (and, with dynamic MIG, on the GPUs the policy chose: ``parent_gpus``)."""
    expressions = []
    if target.product_name is not None:
        expressions.append(attribute_equals("productName", target.product_name))
    if strategy is Strategy.MIG:
        if mig_profile is None:
            raise ManifestError("A MIG allocation needs its profile.")
        # The driver names profiles as the model does (1g.5gb on an A100-40GB, 1g.10gb on an 80 GB card).
        expressions.append(attribute_equals("profile", mig_profile))
        if parent_gpus:
            expressions.append(parent_gpu_in(sorted(set(parent_gpus))))
        floor = target.profile_memory_bytes.get(mig_profile)
    else:
        floor = target.memory_bytes
    if floor is None and strategy is not Strategy.MIG:
        floor = int(model.memory_gb * NOMINAL_MEMORY_FLOOR) * 1024 * MEBI
    if floor is not None:
        expressions.append(memory_at_least(mebibytes(floor)))
    return expressions


def render_resource_claim_template(
    *,
    request_id: int,
    team_slug: str,
    namespace: str,
    strategy: Strategy,
    model: GpuModelSpec,
    quantity: int,
    mig_profile: str | None,
    time_slice_replicas: int | None,
    target: DraTarget,
    parent_gpus: Sequence[str] = (),
) -> dict[str, Any]:
    """The request's ResourceClaimTemplate: ``quantity`` devices of the right class chosen by CEL, or for a
    time-sliced share one GPU's consumable memory share with the driver's TimeSlicing config. ``parent_gpus``: the
    GPUs (uuids) the dynamic MIG policy chose for the request's instances."""
    if quantity < 1:
        raise ManifestError(f"A claim asks for at least one device, not {quantity}.")
    if parent_gpus and strategy is not Strategy.MIG:
        raise ManifestError("Only a MIG claim is placed on chosen GPUs.")
    expressions = device_selectors(strategy, model, mig_profile, target, parent_gpus=parent_gpus)
    exactly: dict[str, Any] = {
        "deviceClassName": MIG_DEVICE_CLASS if strategy is Strategy.MIG else GPU_DEVICE_CLASS,
        "allocationMode": "ExactCount",
        "count": quantity,
        "selectors": [{"cel": {"expression": expression}} for expression in expressions],
    }
    spec: dict[str, Any] = {"devices": {"requests": [{"name": CLAIM_NAME, "exactly": exactly}]}}
    if strategy is Strategy.TIME_SLICING:
        if quantity != 1 or time_slice_replicas is None:
            raise ManifestError("A time-sliced share is one share of one GPU.")
        # A share must not take a whole device: ask for 1/replicas of its memory through consumable capacity
        # (Kubernetes 1.36+, a driver with --consumable-shares=memory), and let the driver time-slice it.
        memory = target.memory_bytes or model.memory_gb * 1024 * MEBI
        exactly["capacity"] = {"requests": {"memory": mebibytes(memory // time_slice_replicas)}}
        spec["devices"]["config"] = [
            {
                "requests": [CLAIM_NAME],
                "opaque": {
                    "driver": DRIVER,
                    "parameters": {
                        "apiVersion": GPU_CONFIG_API_VERSION,
                        "kind": "GpuConfig",
                        "sharing": {"strategy": "TimeSlicing", "timeSlicingConfig": {"interval": "Default"}},
                    },
                },
            }
        ]
    labels = request_labels(team_slug, request_id)
    if not is_label_value(labels["gpu-portal/request"]):
        raise ManifestError(f"Request id {request_id} cannot be a label value.")
    return {
        "apiVersion": DRA_API_VERSION,
        "kind": "ResourceClaimTemplate",
        "metadata": {"name": claim_template_name(request_id), "namespace": namespace, "labels": labels},
        "spec": {"metadata": {"labels": dict(labels)}, "spec": spec},
    }


def pod_claims(request_id: int) -> list[dict[str, str]]:
    """The pod spec's ``resourceClaims``: one claim per pod, made from the request's template."""
    return [{"name": CLAIM_NAME, "resourceClaimTemplateName": claim_template_name(request_id)}]


def container_claims() -> list[dict[str, str]]:
    """The GPU container's ``resources.claims``."""
    return [{"name": CLAIM_NAME}]
