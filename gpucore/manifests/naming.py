"""The naming and label contract of every object the portal renders, and Kubernetes's rules for names, labels and
extended resources, so a bad input fails at render time with a message that names the field.

Pure: no Django, no Kubernetes client.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from gpucore.catalog import Catalog, CatalogError, GpuModelSpec
from gpucore.vocabulary import SharingMode, Strategy

# The labels every object carries (docs/kubernetes-and-kueue.md, "Names and labels").
MANAGED_BY_LABEL = "app.kubernetes.io/managed-by"
MANAGED_BY = "gpu-portal"
TEAM_LABEL = "gpu-portal/team"
REQUEST_LABEL = "gpu-portal/request"
FIELD_MANAGER = "gpu-portal"

GPU_RESOURCE = "nvidia.com/gpu"
SHARED_GPU_RESOURCE = "nvidia.com/gpu.shared"
# Labels written by GPU Feature Discovery (guide 004, "Automatic Node Labeling"; reference-sources.md#time-slicing).
PRODUCT_LABEL = "nvidia.com/gpu.product"
REPLICAS_LABEL = "nvidia.com/gpu.replicas"
SHARED_PRODUCT_SUFFIX = "-SHARED"

WORKLOAD_TYPES = ("training", "batch_inference", "realtime_inference", "development", "hpc_simulation")
TAINT_EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")
DEVICE_APIS = ("device-plugin", "dra")

_DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$")
_DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_LABEL_NAME = re.compile(r"^[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$")
_LABEL_VALUE = re.compile(r"^([A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?)?$")


class ManifestError(ValueError):
    """An input that cannot be rendered into objects Kubernetes and the NVIDIA components would accept."""


# Which pool sharing mode serves which Recommendation strategy.
SHARING_FOR_STRATEGY = {
    Strategy.DEDICATED: SharingMode.NONE,
    Strategy.MIG: SharingMode.MIG,
    Strategy.TIME_SLICING: SharingMode.TIME_SLICING,
}


def is_dns_label(value: object) -> bool:
    """Whether ``value`` is an RFC 1123 DNS label (namespace and object names, ConfigMap keys we write)."""
    return isinstance(value, str) and bool(_DNS_LABEL.match(value))


def is_dns_subdomain(value: object) -> bool:
    """Whether ``value`` is an RFC 1123 DNS subdomain of at most 253 characters."""
    return isinstance(value, str) and len(value) <= 253 and bool(_DNS_SUBDOMAIN.match(value))


def is_label_key(value: object) -> bool:
    """Whether ``value`` is a valid label, annotation or taint key (``[prefix/]name``)."""
    if not isinstance(value, str):
        return False
    prefix, _, name = value.rpartition("/")
    return bool(_LABEL_NAME.match(name)) and (not prefix or is_dns_subdomain(prefix))


def is_label_value(value: object) -> bool:
    """Whether ``value`` is a valid label value (at most 63 characters, may be empty)."""
    return isinstance(value, str) and bool(_LABEL_VALUE.match(value))


def is_extended_resource(value: object) -> bool:
    """Whether ``value`` is an extended resource name such as ``nvidia.com/gpu`` (a domain outside kubernetes.io)."""
    if not isinstance(value, str) or "/" not in value or not is_label_key(value):
        return False
    domain = value.split("/", 1)[0]
    return not (domain == "kubernetes.io" or domain.endswith(".kubernetes.io") or domain.startswith("requests."))


def check_labels(labels: Mapping[str, str], what: str) -> None:
    """Raise ``ManifestError`` naming the first key or value Kubernetes would refuse as a label."""
    for key, value in labels.items():
        if not is_label_key(key):
            raise ManifestError(f"{what}: '{key}' is not a valid label key.")
        if not is_label_value(value):
            raise ManifestError(f"{what}: '{value}' (for '{key}') is not a valid label value.")


def workload_name(request_id: int) -> str:
    """The name of a request's workload objects: ``gpr-<request id>``."""
    return f"gpr-{request_id}"


def team_labels(team_slug: str) -> dict[str, str]:
    """The labels every object of a team carries."""
    return {MANAGED_BY_LABEL: MANAGED_BY, TEAM_LABEL: team_slug}


def request_labels(team_slug: str, request_id: int) -> dict[str, str]:
    """The labels every object of a request carries; the request id is a string, as labels must be."""
    return {**team_labels(team_slug), REQUEST_LABEL: str(request_id)}


def is_int(value: object) -> bool:
    """An ``int`` and not a ``bool``."""
    return isinstance(value, int) and not isinstance(value, bool)


def catalog_model(catalog: Catalog, name: str) -> GpuModelSpec:
    """The catalog's GPU model of that name; an unknown name is a ManifestError with the catalog's message."""
    try:
        return catalog.get(name)
    except CatalogError as error:
        raise ManifestError(str(error)) from error
