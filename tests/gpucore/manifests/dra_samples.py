"""ResourceSlices shaped like NVIDIA's DRA driver publishes them, and a CEL evaluation of claims against them.

Shapes follow the driver's ResourceSlice attribute reference (type, productName, profile, parentUUID, memory capacity
as NVML reports it: an 80 GB H100 reports 81559Mi, below 80Gi; an A100-40GB exactly 40Gi; a 1g.5gb slice 4864Mi). The
selection runs the real CEL expressions with ``common-expression-language``, with Kubernetes' ``quantity()`` and
``compareTo`` supplied, after the DeviceClass's own selector (the driver's Helm chart), as the scheduler does.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import cel

from gpucore.dra_inventory import DraDevice, devices_from_slices, quantity_bytes

# The driver's DeviceClasses (its Helm chart), by name.
DEVICE_CLASS_SELECTORS = {
    "gpu.nvidia.com": "device.driver == 'gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].type == 'gpu'",
    "mig.nvidia.com": "device.driver == 'gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].type == 'mig'",
}


def _gpu(index: int, product: str, memory: str) -> dict[str, Any]:
    return {
        "name": f"gpu-{index}",
        "attributes": {
            "type": {"string": "gpu"},
            "productName": {"string": product},
            "architecture": {"string": "Hopper" if "H100" in product else "Ampere"},
            "uuid": {"string": f"GPU-{index:08d}-{abs(hash(product)) % 10**8:08d}"},
            "resource.kubernetes.io/pciBusID": {"string": f"0000:{index + 16:02x}:00.0"},
        },
        "capacity": {"memory": {"value": memory}},
    }


def _mig(gpu: int, slot: int, product: str, profile: str, memory: str) -> dict[str, Any]:
    return {
        "name": f"gpu-{gpu}-mig-{profile.replace('.', '')}-{slot}",
        "attributes": {
            "type": {"string": "mig"},
            "productName": {"string": product},
            "profile": {"string": profile},
            "parentUUID": {"string": f"GPU-{gpu:08d}"},
        },
        "capacity": {"memory": {"value": memory}, "multiprocessors": {"value": "14"}},
    }


def _slice(node: str, devices: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceSlice",
        "metadata": {"name": f"{node}-gpu.nvidia.com-x7k2p"},
        "spec": {
            "driver": "gpu.nvidia.com",
            "nodeName": node,
            "pool": {"name": node, "generation": 1, "resourceSliceCount": 1},
            "devices": devices,
        },
    }


H100 = "NVIDIA H100 80GB HBM3"
A100_40 = "NVIDIA A100-SXM4-40GB"
A100_80 = "NVIDIA A100-SXM4-80GB"
T4 = "Tesla T4"
SLICES = [
    _slice("h100-node-1", [_gpu(i, H100, "81559Mi") for i in range(8)]),
    _slice("a100-node-1", [_gpu(i, A100_40, "40Gi") for i in range(8)]),
    _slice("a100-80-node-1", [_gpu(i, A100_80, "81920Mi") for i in range(8)]),
    _slice("t4-node-1", [_gpu(i, T4, "15360Mi") for i in range(4)]),
    # A100-40GB MIG: per GPU one 3g.20gb, one 2g.10gb, two 1g.5gb; memory below each nominal size.
    _slice(
        "a100-mig-node-1",
        [
            device
            for gpu in range(8)
            for device in (
                _mig(gpu, 0, A100_40, "3g.20gb", "19968Mi"),
                _mig(gpu, 1, A100_40, "2g.10gb", "9856Mi"),
                _mig(gpu, 2, A100_40, "1g.5gb", "4864Mi"),
                _mig(gpu, 3, A100_40, "1g.5gb", "4864Mi"),
            )
        ],
    ),
    # H100 MIG: 3g.40gb and 2g.20gb slices.
    _slice(
        "h100-mig-node-1",
        [
            device
            for gpu in range(8)
            for device in (
                _mig(gpu, 0, H100, "3g.40gb", "40192Mi"),
                _mig(gpu, 1, H100, "2g.20gb", "20096Mi"),
                _mig(gpu, 2, H100, "2g.20gb", "20096Mi"),
            )
        ],
    ),
    # Another driver's slice: never read as a GPU.
    {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceSlice",
        "metadata": {"name": "h100-node-1-net"},
        "spec": {
            "driver": "dranet.example.com",
            "nodeName": "h100-node-1",
            "pool": {"name": "h100-node-1", "generation": 1, "resourceSliceCount": 1},
            "devices": [{"name": "eth1", "attributes": {"type": {"string": "gpu"}}}],
        },
    },
]
DEVICES = devices_from_slices(SLICES)


def _context(device: DraDevice) -> cel.Context:
    context = cel.Context()
    context.add_variable("device", device.as_cel())
    context.add_function("quantity", quantity_bytes)
    context.add_function("compareTo", lambda left, right: (left > right) - (left < right))
    return context


def selects(expression: str, device: DraDevice) -> bool:
    """Whether one CEL selector admits a device (a selector that errors, e.g. on a missing attribute, does not)."""
    try:
        return cel.evaluate(expression, _context(device)) is True
    except (RuntimeError, KeyError):  # a missing attribute: the API server's CEL errors, the device is not chosen
        return False


def matching_devices(template: Mapping[str, Any], devices: Iterable[DraDevice] = DEVICES) -> list[DraDevice]:
    """The devices the template's one request may be given: its DeviceClass's selector and its own, all true."""
    (request,) = template["spec"]["spec"]["devices"]["requests"]
    exactly = request["exactly"]
    expressions = [DEVICE_CLASS_SELECTORS[exactly["deviceClassName"]]]
    expressions += [selector["cel"]["expression"] for selector in exactly.get("selectors", [])]
    return [device for device in devices if all(selects(expression, device) for expression in expressions)]
