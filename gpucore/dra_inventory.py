"""What NVIDIA's DRA driver says exists: devices read from a cluster's ResourceSlices (``resource.k8s.io/v1``), and
per pool the facts the claim selectors are built from. Pure: plain dicts in, frozen dataclasses out.

The driver publishes one device per GPU (``type: gpu``) and per MIG instance (``type: mig``, with its ``profile``),
with ``productName`` and a ``memory`` capacity (NVML's total, which for an "80 GB" card is below 80Gi). A pool is
matched to devices by product: GPU Feature Discovery's ``nvidia.com/gpu.product`` label is the product name with its
spaces replaced by dashes, so a pool's ``product_label`` names the driver's ``productName``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from gpucore.manifests.dra import DRIVER, DraTarget

_BINARY = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40}
_DECIMAL = {"k": 10**3, "M": 10**6, "G": 10**9, "T": 10**12}


class InventoryError(ValueError):
    """A ResourceSlice the portal cannot read (a malformed quantity or device)."""


def quantity_bytes(value: object) -> int:
    """A Kubernetes quantity (``81559Mi``, ``40Gi``, ``85520809984``) in whole units, rounded down."""
    text = str(value).strip()
    for suffixes in (_BINARY, _DECIMAL):
        for suffix, factor in suffixes.items():
            if text.endswith(suffix):
                return int(_number(text[: -len(suffix)], value) * factor)
    return int(_number(text, value))


def _number(text: str, original: object) -> Decimal:
    try:
        number = Decimal(text)
    except ArithmeticError:
        raise InventoryError(f"'{original}' is not a quantity.") from None
    if not number.is_finite() or number < 0:
        raise InventoryError(f"'{original}' is not a quantity.")
    return number


@dataclass(frozen=True, slots=True)
class DraDevice:
    """One device of the driver: where it is, what it is, and how much memory it reports (bytes)."""

    node: str
    pool: str
    name: str
    type: str
    product_name: str
    profile: str | None
    memory_bytes: int | None
    # A GPU's ``uuid``; a MIG device's ``parentUUID`` (the GPU it is carved from).
    uuid: str | None = None
    parent_uuid: str | None = None

    def as_cel(self) -> dict[str, Any]:
        """The device as CEL selectors see it: ``device.driver``, ``.attributes[domain]``, ``.capacity[domain]``."""
        attributes: dict[str, Any] = {"type": self.type, "productName": self.product_name}
        if self.profile is not None:
            attributes["profile"] = self.profile
        if self.uuid is not None:
            attributes["uuid"] = self.uuid
        if self.parent_uuid is not None:
            attributes["parentUUID"] = self.parent_uuid
        capacity = {} if self.memory_bytes is None else {"memory": self.memory_bytes}
        return {"driver": DRIVER, "attributes": {DRIVER: attributes}, "capacity": {DRIVER: capacity}}


def _attribute(attributes: Mapping[str, Any], name: str) -> Any:
    # v1 attributes are {"string": ...} / {"int": ...} / {"bool": ...} / {"version": ...}; a name may carry the
    # driver's domain.
    found = attributes.get(name, attributes.get(f"{DRIVER}/{name}"))
    if not isinstance(found, Mapping):
        return None
    for kind in ("string", "int", "bool", "version"):
        if kind in found:
            return found[kind]
    return None


def devices_from_slices(slices: Iterable[Mapping[str, Any]]) -> list[DraDevice]:
    """Every GPU and MIG device NVIDIA's driver publishes in these ResourceSlices (other drivers' are skipped)."""
    devices = []
    for item in slices:
        spec = item.get("spec") or {}
        if spec.get("driver") != DRIVER:
            continue
        node = str(spec.get("nodeName") or "")
        pool = str((spec.get("pool") or {}).get("name") or node)
        for device in spec.get("devices") or []:
            attributes = device.get("attributes") or {}
            kind = _attribute(attributes, "type")
            if kind not in ("gpu", "mig"):
                continue  # e.g. vfio passthrough devices
            memory = ((device.get("capacity") or {}).get("memory") or {}).get("value")
            devices.append(
                DraDevice(
                    node=node,
                    pool=pool,
                    name=str(device.get("name") or ""),
                    type=str(kind),
                    product_name=str(_attribute(attributes, "productName") or ""),
                    profile=_attribute(attributes, "profile") if kind == "mig" else None,
                    memory_bytes=None if memory is None else quantity_bytes(memory),
                    uuid=_text(_attribute(attributes, "uuid")),
                    parent_uuid=_text(_attribute(attributes, "parentUUID")) if kind == "mig" else None,
                )
            )
    return devices


def _text(value: Any) -> str | None:
    return None if value is None else str(value)


def product_label_of(product_name: str) -> str:
    """GPU Feature Discovery's ``nvidia.com/gpu.product`` value for a driver ``productName``."""
    return product_name.strip().replace(" ", "-")


def dra_target(devices: Iterable[DraDevice], *, product_label: str) -> DraTarget | None:
    """What the driver reports for a pool's product: its name and the smallest memory of a GPU and of each MIG
    profile (the floor every device of that product meets). None when no device of that product is published."""
    mine = [d for d in devices if d.product_name and product_label_of(d.product_name) == product_label]
    if not mine:
        return None
    gpus = [d.memory_bytes for d in mine if d.type == "gpu" and d.memory_bytes is not None]
    profiles: dict[str, int] = {}
    for device in mine:
        if device.type == "mig" and device.profile and device.memory_bytes is not None:
            profiles[device.profile] = min(profiles.get(device.profile, device.memory_bytes), device.memory_bytes)
    return DraTarget(
        product_name=mine[0].product_name,
        memory_bytes=min(gpus) if gpus else None,
        profile_memory_bytes=profiles,
    )


def target_as_json(target: DraTarget) -> dict[str, Any]:
    """A DraTarget as JSON (stored on the pool by inventory sync)."""
    return {
        "product_name": target.product_name,
        "memory_bytes": target.memory_bytes,
        "profile_memory_bytes": dict(target.profile_memory_bytes),
    }


def target_from_json(data: Mapping[str, Any] | None) -> DraTarget | None:
    """The DraTarget stored by ``target_as_json`` (None when nothing was observed)."""
    if not data:
        return None
    return DraTarget(
        product_name=data.get("product_name"),
        memory_bytes=data.get("memory_bytes"),
        profile_memory_bytes=dict(data.get("profile_memory_bytes") or {}),
    )
