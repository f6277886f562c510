"""Per-pool GPU Operator configuration: device plugin time-slicing and mig-parted MIG layouts, as ConfigMaps.

Pure: plain dicts out. Formats and rules are NVIDIA's k8s-device-plugin config v1 (its validation rules and
messages) and mig-parted config v1 (docs/reference-sources.md, "Time-slicing" and "MIG"). The GPU Operator reads one
device plugin ConfigMap (ClusterPolicy ``devicePlugin.config.name``; a node picks a key with the label
``nvidia.com/device-plugin.config``) and one mig-parted ConfigMap (``migManager.config.name``, key ``config.yaml``;
a node picks a layout with ``nvidia.com/mig.config``), so each renders every pool of a cluster into one object.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import yaml

from gpucore.catalog import BUILTIN_CATALOG, Catalog, CatalogError, GpuModelSpec, MigProfile
from gpucore.manifests.contexts import PoolContext
from gpucore.manifests.naming import (
    GPU_RESOURCE,
    MANAGED_BY,
    MANAGED_BY_LABEL,
    ManifestError,
    catalog_model,
    is_dns_subdomain,
    is_int,
)
from gpucore.vocabulary import SharingMode

GPU_OPERATOR_NAMESPACE = "gpu-operator"
DEVICE_PLUGIN_CONFIGMAP = "gpu-portal-device-plugin-config"
DEVICE_PLUGIN_DEFAULT_KEY = "default"
DEVICE_PLUGIN_CONFIG_LABEL = "nvidia.com/device-plugin.config"
MIG_PARTED_CONFIGMAP = "gpu-portal-mig-parted-config"
MIG_PARTED_CONFIG_KEY = "config.yaml"
MIG_CONFIG_LABEL = "nvidia.com/mig.config"
MIG_DISABLED_CONFIG = "all-disabled"
MIG_CONFIG_PREFIX = "gpu-portal-"

# k8s-device-plugin api/config/v1 (docs/reference-sources.md#time-slicing).
RESOURCE_PREFIX = "nvidia.com"
MAX_RESOURCE_NAME_LENGTH = 63
MIG_STRATEGIES = ("none", "single", "mixed")
_UUID = r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}"
_GPU_UUID = re.compile(rf"^GPU-{_UUID}$")
_MIG_UUID = re.compile(rf"^MIG-({_UUID}|GPU-{_UUID}/\d+/\d+)$")
_GPU_INDEX = re.compile(r"^\d+$")
_MIG_INDEX = re.compile(r"^\d+:\d+$")


def _configmap(name: str, namespace: str, data: dict[str, str]) -> dict[str, Any]:
    # Cluster infrastructure shared by every team: managed-by only, no team or request label.
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": namespace, "labels": {MANAGED_BY_LABEL: MANAGED_BY}},
        "data": data,
    }


def _dump(document: Mapping[str, Any]) -> str:
    return yaml.safe_dump(dict(document), sort_keys=False, default_flow_style=False)


# --- Device plugin time-slicing ------------------------------------------------------------------------------------


def normalize_resource_name(name: object) -> str:
    """The device plugin's ``NewResourceName``: prefix ``nvidia.com/``, at most 63 characters, a DNS subdomain."""
    if not isinstance(name, str):
        raise ManifestError(f"incorrect format for resource name '{name}': not a string")
    if not name.startswith(RESOURCE_PREFIX + "/"):
        name = f"{RESOURCE_PREFIX}/{name}"
    if len(name) > MAX_RESOURCE_NAME_LENGTH:
        limit = MAX_RESOURCE_NAME_LENGTH
        raise ManifestError(f"fully-qualified resource name must be {limit} characters or less: {name}")
    if not is_dns_subdomain(name.split("/", 1)[1]):
        raise ManifestError(f"incorrect format for resource name '{name}': not a lower-case RFC 1123 subdomain")
    return name


def validate_replica_devices(devices: object) -> str | int | list[str]:
    """The ``devices`` union of a replicated resource: ``"all"``, a count > 0, or a list of GPU/MIG indices/UUIDs."""
    if isinstance(devices, str):
        if devices != "all":
            raise ManifestError(f"devices set as '{devices}' but the only valid string input is 'all'")
        return devices
    if is_int(devices):
        if devices <= 0:
            raise ManifestError(f"devices set as '{devices}' but a count of devices must be > 0")
        return devices
    if isinstance(devices, list):
        refs = []
        for item in devices:
            if is_int(item) and item >= 0:
                refs.append(str(item))
            elif isinstance(item, str) and any(p.match(item) for p in (_GPU_INDEX, _MIG_INDEX, _GPU_UUID, _MIG_UUID)):
                refs.append(item)
            else:
                raise ManifestError(f"unsupported type for device in devices list: {item!r}")
        return refs
    raise ManifestError(f"unrecognized type for devices spec: {devices!r}")


def validate_replicated_resource(entry: Mapping[str, Any]) -> dict[str, Any]:
    """One ``sharing.timeSlicing.resources`` entry, checked in the plugin's order and normalised."""
    if "name" not in entry:
        raise ManifestError("no resource name specified")
    result: dict[str, Any] = {"name": normalize_resource_name(entry["name"])}
    result["devices"] = validate_replica_devices(entry.get("devices", "all"))
    if "replicas" not in entry:
        raise ManifestError("no replicas specified")
    replicas = entry["replicas"]
    if not is_int(replicas) or replicas < 2:
        raise ManifestError(f"number of replicas must be >= 2 (got {replicas!r})")
    result["replicas"] = replicas
    if entry.get("rename"):
        result["rename"] = normalize_resource_name(entry["rename"])
    return result


def validate_replicated_resources(block: Mapping[str, Any]) -> list[dict[str, Any]]:
    """A ``sharing.timeSlicing`` block: a non-empty resource list; ``renameByDefault`` adds the ``.shared`` name."""
    resources = block.get("resources")
    if not resources:
        raise ManifestError("no resources specified")
    normalized = [validate_replicated_resource(entry) for entry in resources]
    if block.get("renameByDefault"):
        for entry in normalized:
            entry.setdefault("rename", entry["name"] + ".shared")
    return normalized


def validate_device_plugin_config(config: Mapping[str, Any]) -> None:
    """Check a device plugin config (v1) as the plugin would; raise ``ManifestError`` with its message."""
    version = config.get("version") or "v1"  # an empty version is read as v1
    if version != "v1":
        raise ManifestError(f"unknown version: {version}")
    strategy = (config.get("flags") or {}).get("migStrategy", "none")
    if strategy not in MIG_STRATEGIES:
        raise ManifestError(f"unknown MIG strategy: {strategy}")
    sharing = config.get("sharing") or {}
    if "mps" in sharing:
        # The portal prices and isolates time-slicing only; MPS has other limits (no MIG, full GPUs only).
        raise ManifestError("MPS sharing is not rendered by the portal; use timeSlicing")
    if "timeSlicing" in sharing:
        validate_replicated_resources(sharing["timeSlicing"] or {})


def time_slicing_config(pool: PoolContext, *, fail_requests_greater_than_one: bool = True) -> dict[str, Any]:
    """The device plugin config (v1) of a time-slicing pool: every GPU of its nodes shared ``replicas`` ways."""
    # ``failRequestsGreaterThanOne`` is on, as the plugin's README recommends: asking for two shares of a GPU gives no
    # more compute than one ("CUDA will simply give an equal share of time to all of the GPU processes").
    if pool.sharing_mode is not SharingMode.TIME_SLICING:
        raise ManifestError(f"Pool '{pool.name}' is not a time-slicing pool (sharing mode {pool.sharing_mode}).")
    config = {
        "version": "v1",
        # MIG is off on time-sliced nodes: mixed MIG devices could be time-sliced too, but the portal prices a
        # time-sliced share as 1/replicas of a whole GPU.
        "flags": {"migStrategy": "none"},
        "sharing": {
            "timeSlicing": {
                "renameByDefault": pool.rename_by_default,
                "failRequestsGreaterThanOne": fail_requests_greater_than_one,
                "resources": [{"name": GPU_RESOURCE, "replicas": pool.time_slice_replicas}],
            }
        },
    }
    validate_device_plugin_config(config)
    return config


def render_time_slicing_configmap(
    pools: Iterable[PoolContext],
    *,
    name: str = DEVICE_PLUGIN_CONFIGMAP,
    namespace: str = GPU_OPERATOR_NAMESPACE,
    fail_requests_greater_than_one: bool = True,
) -> dict[str, Any]:
    """The device plugin ConfigMap: a ``default`` key plus one key (the pool name) per time-slicing pool."""
    # Point ClusterPolicy ``devicePlugin.config.name`` at it with ``default: default``; nodes of a time-slicing pool
    # carry ``nvidia.com/device-plugin.config=<pool name>`` (see ``pool_node_labels``). The default config uses the
    # mixed MIG strategy so MIG pools advertise ``nvidia.com/mig-<profile>`` and whole GPUs stay ``nvidia.com/gpu``.
    default = {"version": "v1", "flags": {"migStrategy": "mixed"}}
    validate_device_plugin_config(default)
    data = {DEVICE_PLUGIN_DEFAULT_KEY: _dump(default)}
    for pool in pools:
        if pool.name in data:
            raise ManifestError(f"Pool name '{pool.name}' is used twice or clashes with the default key.")
        config = time_slicing_config(pool, fail_requests_greater_than_one=fail_requests_greater_than_one)
        data[pool.name] = _dump(config)
    return _configmap(name, namespace, data)


# --- MIG (mig-parted) -----------------------------------------------------------------------------------------------


def _place(model: GpuModelSpec, instances: list[MigProfile]) -> list[tuple[str, int]] | None:
    """A placement of every instance on the GPU's memory slices, or ``None`` when none exists (backtracking)."""
    used = [False] * model.mig_memory_slices
    placed: list[tuple[str, int]] = []

    def fits(profile: MigProfile, start: int) -> bool:
        end = start + profile.memory_slices
        return end <= len(used) and not any(used[start:end])

    def place(index: int) -> bool:
        if index == len(instances):
            return True
        profile = instances[index]
        for start in profile.placement_starts or range(model.mig_memory_slices):
            if fits(profile, start):
                used[start : start + profile.memory_slices] = [True] * profile.memory_slices
                placed.append((profile.name, start))
                if place(index + 1):
                    return True
                placed.pop()
                used[start : start + profile.memory_slices] = [False] * profile.memory_slices
        return False

    return placed if place(0) else None


def check_mig_layout(model: GpuModelSpec, devices: Mapping[str, int]) -> dict[str, int]:
    """Check a per-GPU MIG layout against the catalog geometry and return it in catalog order."""
    # Checks known profile names, 1 <= count <= the profile's max instances, total memory slices and compute slices
    # within the GPU's, and that the instances can actually be placed at the profile's allowed start slices.
    if not model.mig_capable:
        raise ManifestError(f"{model.name} is not MIG-capable.")
    if not devices:
        raise ManifestError(f"A MIG layout for {model.name} needs at least one MIG device.")
    profiles: dict[str, MigProfile] = {}
    for name, count in devices.items():
        try:
            profile = model.profile(name)
        except CatalogError as error:
            raise ManifestError(str(error)) from error
        if not is_int(count) or count < 1:
            raise ManifestError(f"MIG layout for {model.name}: the count of '{name}' must be a whole number >= 1.")
        if count > profile.max_instances:
            raise ManifestError(
                f"MIG layout for {model.name}: at most {profile.max_instances} x '{name}' fit on one GPU, not {count}."
            )
        profiles[name] = profile
    media = sum(devices[n] for n, p in profiles.items() if p.media_extensions)
    if media > 1:
        # A media-extension instance takes the GPU's one set of media engines (NVDEC, NVJPG, NVOFA): mig-parted
        # and NVIDIA's named configs never put more than one +me instance on a GPU (docs/reference-sources.md#mig).
        raise ManifestError(
            f"MIG layout for {model.name}: at most one media-extension (+me) instance fits on one GPU, not {media}."
        )
    memory = sum(p.memory_slices * devices[n] for n, p in profiles.items())
    if memory > model.mig_memory_slices:
        raise ManifestError(
            f"MIG layout for {model.name} needs {memory} memory slices; the GPU has {model.mig_memory_slices}."
        )
    compute = sum(p.compute_slices * devices[n] for n, p in profiles.items())
    if compute > model.mig_compute_slices:
        raise ManifestError(
            f"MIG layout for {model.name} needs {compute} compute slices; the GPU has {model.mig_compute_slices}."
        )
    instances = sorted((p for n, p in profiles.items() for _ in range(devices[n])), key=lambda p: -p.memory_slices)
    if _place(model, instances) is None:
        raise ManifestError(
            f"MIG layout for {model.name} cannot be placed: the profiles' allowed start slices overlap."
        )
    return {p.name: devices[p.name] for p in model.mig_profiles if p.name in devices}


def mig_placement(model: GpuModelSpec, devices: Mapping[str, int]) -> list[tuple[str, int]]:
    """A valid placement ``[(profile, start memory slice), ...]`` of a layout, by start slice (checked first)."""
    layout = check_mig_layout(model, devices)
    instances = sorted(
        (model.profile(name) for name, count in layout.items() for _ in range(count)), key=lambda p: -p.memory_slices
    )
    placed = _place(model, instances)
    assert placed is not None  # check_mig_layout found the same placement
    return sorted(placed, key=lambda item: item[1])


def mig_config_name(pool: PoolContext) -> str:
    """The mig-parted config name of a pool, the value of its nodes' ``nvidia.com/mig.config`` label."""
    name = MIG_CONFIG_PREFIX + pool.name
    if len(name) > 63:
        raise ManifestError(f"Pool name '{pool.name}' is too long for a mig.config label ('{name}').")
    return name


def mig_parted_config(pools: Iterable[PoolContext], *, catalog: Catalog = BUILTIN_CATALOG) -> dict[str, Any]:
    """The mig-parted config (v1) holding one named layout per MIG pool, plus ``all-disabled``."""
    # ``all-disabled`` stays because the GPU Operator labels MIG-capable nodes with it by default, and this ConfigMap
    # replaces the operator's default one.
    configs: dict[str, list[dict[str, Any]]] = {
        MIG_DISABLED_CONFIG: [{"devices": "all", "mig-enabled": False}],
    }
    for pool in pools:
        if pool.sharing_mode is not SharingMode.MIG:
            raise ManifestError(f"Pool '{pool.name}' is not a MIG pool (sharing mode {pool.sharing_mode}).")
        model = catalog_model(catalog, pool.gpu_model)
        name = mig_config_name(pool)
        if name in configs:
            raise ManifestError(f"Two MIG pools share the config name '{name}'.")
        layout = check_mig_layout(model, pool.mig_devices)
        configs[name] = [{"devices": "all", "mig-enabled": True, "mig-devices": layout}]
    return {"version": "v1", "mig-configs": configs}


def render_mig_parted_configmap(
    pools: Iterable[PoolContext],
    *,
    catalog: Catalog = BUILTIN_CATALOG,
    name: str = MIG_PARTED_CONFIGMAP,
    namespace: str = GPU_OPERATOR_NAMESPACE,
    node_configs: Mapping[str, list[dict[str, Any]]] | None = None,
) -> dict[str, Any]:
    """The mig-parted ConfigMap (key ``config.yaml``) for ClusterPolicy ``migManager.config.name``.

    ``node_configs`` adds the named per-node configs of MIG plans (``mig_node_config``) beside the pools' own.
    """
    config = mig_parted_config(pools, catalog=catalog)
    for config_name, entries in (node_configs or {}).items():
        if config_name in config["mig-configs"] and config["mig-configs"][config_name] != entries:
            raise ManifestError(f"The MIG config name '{config_name}' is used for two different layouts.")
        config["mig-configs"][config_name] = entries
    return _configmap(name, namespace, {MIG_PARTED_CONFIG_KEY: _dump(config)})


def mig_node_config_name(model: GpuModelSpec, gpu_layouts: Sequence[Mapping[str, int]], *, revision: int = 1) -> str:
    """The named config of one node's per-GPU layouts (MIG plans): the model and a digest of the layouts.

    Equal layouts give equal names on every node, so a plan renders one named config per distinct node layout.
    A ``revision`` above 1 suffixes the name (``-r2``): the MIG manager acts only when the node's label changes, so a
    retried node must be labelled with a name it has not carried.
    """
    if revision < 1:
        raise ManifestError(f"A MIG config revision starts at 1, not {revision}.")
    canonical = json.dumps([{k: v for k, v in sorted(layout.items()) if v} for layout in gpu_layouts])
    digest = hashlib.sha256(f"{model.name}:{canonical}".encode()).hexdigest()[:10]
    name = f"{MIG_CONFIG_PREFIX}{model.name.lower().replace('.', '-')}-{digest}"
    return name if revision == 1 else f"{name}-r{revision}"


def mig_node_config(model: GpuModelSpec, gpu_layouts: Sequence[Mapping[str, int]]) -> list[dict[str, Any]]:
    """mig-parted entries for one node: ``devices: all`` when every GPU shares a layout, else one per layout."""
    by_layout: dict[str, tuple[dict[str, int], list[int]]] = {}
    for index, layout in enumerate(gpu_layouts):
        devices = {k: v for k, v in layout.items() if v}
        checked = check_mig_layout(model, devices) if devices else {}
        key = json.dumps(checked)
        by_layout.setdefault(key, (checked, []))[1].append(index)
    if not by_layout:
        raise ManifestError(f"A MIG node config for {model.name} needs at least one GPU.")
    entries = []
    for checked, indices in by_layout.values():
        devices: Any = "all" if len(by_layout) == 1 else indices
        entries.append({"devices": devices, "mig-enabled": True, "mig-devices": checked})
    return entries


def pool_node_labels(pool: PoolContext, *, catalog: Catalog = BUILTIN_CATALOG) -> dict[str, str]:
    """The labels a pool's nodes need so the GPU Operator applies the pool's sharing configuration."""
    if pool.sharing_mode is SharingMode.MIG:
        return {MIG_CONFIG_LABEL: mig_config_name(pool)}
    labels: dict[str, str] = {}
    if pool.sharing_mode is SharingMode.TIME_SLICING:
        labels[DEVICE_PLUGIN_CONFIG_LABEL] = pool.name
    if catalog_model(catalog, pool.gpu_model).mig_capable:
        labels[MIG_CONFIG_LABEL] = MIG_DISABLED_CONFIG
    return labels
