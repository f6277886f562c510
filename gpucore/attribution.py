"""Who used which GPU: DCGM exporter labels to a GPU identity and an owner (team, request). Pure: no Django.

The attribution rule (docs/operating.md, "Utilization and GPU health"): a series with namespace ``N`` and pod ``P``
belongs to the team whose namespace is ``N``, and to request ``<id>`` when ``P`` is ``gpr-<id>`` or starts with
``gpr-<id>-``; anything else is "unallocated/other". The label set follows NVIDIA's dcgm-exporter
(docs/reference-sources.md#dcgm): ``UUID`` in upper case, ``Hostname`` or (in newer exporters) ``hostname``,
``GPU_I_PROFILE``/``GPU_I_ID`` on MIG instances, pod labels absent (or empty) on an idle device, and sentinel values for
blank fields.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

# DCGM "blank" sentinels (dcgm_structs.h): DCGM_INT32_BLANK = 0x7ffffff0 and the next three (not found, not
# supported, no permission); DCGM_FP64_BLANK = 2**47 and up; DCGM_INT64_BLANK = 0x7ffffffffffffff0 and up
# (9223372036854775794 is "not supported"; as a float every one of them is 2**63).
INT32_BLANK = 2_147_483_632.0
FP64_BLANK = 140_737_488_355_328.0
# Gauges we roll up (utilization %, framebuffer MiB, power W) never reach the smallest sentinel, so one bound
# filters them all, in Python and in PromQL alike.
GAUGE_BLANK_FLOOR = INT32_BLANK

GPU_UTIL = "DCGM_FI_DEV_GPU_UTIL"
GR_ENGINE_ACTIVE = "DCGM_FI_PROF_GR_ENGINE_ACTIVE"

_REQUEST_POD = re.compile(r"^gpr-(\d+)(?:-|$)")


@dataclass(frozen=True, slots=True)
class GpuIdentity:
    """One GPU, or one MIG instance of it (``mig_instance_id`` non-empty), as DCGM names it."""

    cluster: str
    uuid: str
    model_name: str = ""
    host: str = ""
    gpu_index: int | None = None
    mig_instance_id: str = ""
    mig_profile: str = ""

    @property
    def is_mig_instance(self) -> bool:
        return bool(self.mig_instance_id)


@dataclass(frozen=True, slots=True)
class Owner:
    """Who held the device: the workload's namespace and pod as read, the team and the request they map to."""

    namespace: str = ""
    pod: str = ""
    team: int | None = None
    request_id: int | None = None

    @property
    def is_unallocated(self) -> bool:
        """True for "unallocated/other": an idle device or a namespace no team owns."""
        return self.team is None


@dataclass(frozen=True, slots=True)
class HourStats:
    """One device's use by one owner in one hour, measured at one-minute points (``samples`` of 60 at most)."""

    samples: int = 0
    avg_utilization_pct: float | None = None
    peak_utilization_pct: float | None = None
    avg_memory_used_mib: float | None = None
    peak_memory_used_mib: float | None = None
    energy_kwh: float | None = None


def is_blank(value: float | None) -> bool:
    """True when a DCGM value means "no data": None, NaN, infinite, or one of DCGM's blank sentinels."""
    if value is None or math.isnan(value) or math.isinf(value):
        return True
    if value >= FP64_BLANK:
        return True
    return INT32_BLANK <= value <= INT32_BLANK + 3


def clean_value(value: float | None) -> float | None:
    """The value, or None when DCGM reported a blank."""
    return None if is_blank(value) else value


def _label(labels: Mapping[str, str], *names: str) -> str:
    for name in names:
        value = labels.get(name)
        if value:
            return value.strip()
    return ""


def gpu_identity(labels: Mapping[str, str], *, cluster: str) -> GpuIdentity | None:
    """The device a DCGM series describes, or None when the series has no ``UUID`` (not a device series)."""
    uuid = _label(labels, "UUID", "uuid")
    if not uuid:
        return None
    index = _label(labels, "gpu")
    instance = _label(labels, "GPU_I_ID")
    return GpuIdentity(
        cluster=cluster,
        uuid=uuid,
        model_name=_label(labels, "modelName"),
        host=_label(labels, "Hostname", "hostname"),
        gpu_index=int(index) if index.isdigit() else None,
        mig_instance_id=instance,
        # A profile without an instance id means nothing to us; keep them together.
        mig_profile=_label(labels, "GPU_I_PROFILE") if instance else "",
    )


def request_id_from_pod(pod: str) -> int | None:
    """The request id when the pod is ``gpr-<id>`` or ``gpr-<id>-...`` (never ``gpr-123`` for id 12)."""
    match = _REQUEST_POD.match(pod)
    return int(match.group(1)) if match else None


def workload_labels(labels: Mapping[str, str]) -> tuple[str, str]:
    """The workload's (namespace, pod), each read from ``exported_*`` first, then from the plain label.

    With ``honor_labels: false`` Prometheus keeps its own target labels (the exporter's namespace and pod) as
    ``namespace``/``pod`` and renames the exporter's conflicting ones to ``exported_namespace``/``exported_pod``;
    those describe the workload. Each label is renamed only when it conflicts, so each is read on its own.
    """
    return _label(labels, "exported_namespace", "namespace"), _label(labels, "exported_pod", "pod")


def owner_from_labels(
    labels: Mapping[str, str],
    *,
    team_by_namespace: Mapping[str, int],
    request_team: Mapping[int, int] | None = None,
) -> Owner:
    """The owner of a series: team by namespace, request by pod name; a request must belong to that team.

    ``request_team`` (request id -> team) is optional; when given, a ``gpr-<id>`` pod whose request is unknown or
    belongs to another team is attributed to the namespace's team only, never to someone else's request.
    """
    namespace, pod = workload_labels(labels)
    team = team_by_namespace.get(namespace) if namespace else None
    if team is None:
        return Owner(namespace=namespace, pod=pod)
    request_id = request_id_from_pod(pod)
    if request_id is not None and request_team is not None and request_team.get(request_id) != team:
        request_id = None
    return Owner(namespace=namespace, pod=pod, team=team, request_id=request_id)


def utilization_pct(metric_name: str, value: float | None) -> float | None:
    """Busy percentage 0-100 from ``DCGM_FI_DEV_GPU_UTIL`` (already %) or ``DCGM_FI_PROF_GR_ENGINE_ACTIVE`` (0..1)."""
    value = clean_value(value)
    if value is None:
        return None
    if metric_name == GPU_UTIL:
        return value
    if metric_name == GR_ENGINE_ACTIVE:
        return value * 100.0
    raise ValueError(f"{metric_name} is not a utilization metric")


def merge_stats(parts: Iterable[HourStats]) -> HourStats:
    """Several series of one (device, owner, hour) as one: averages weighted by samples, peaks and sums kept."""
    parts = [p for p in parts if p.samples > 0]
    if not parts:
        return HourStats()
    if len(parts) == 1:
        return parts[0]

    def weighted(attr: str) -> float | None:
        pairs = [(getattr(p, attr), p.samples) for p in parts if getattr(p, attr) is not None]
        weight = sum(n for _, n in pairs)
        return sum(v * n for v, n in pairs) / weight if weight else None

    def peak(attr: str) -> float | None:
        values = [getattr(p, attr) for p in parts if getattr(p, attr) is not None]
        return max(values) if values else None

    energies = [p.energy_kwh for p in parts if p.energy_kwh is not None]
    return HourStats(
        # One device cannot be held more than the whole hour by one owner: duplicates (two scrape jobs, a label
        # that changed) must not count twice.
        samples=min(60, sum(p.samples for p in parts)),
        avg_utilization_pct=weighted("avg_utilization_pct"),
        peak_utilization_pct=peak("peak_utilization_pct"),
        avg_memory_used_mib=weighted("avg_memory_used_mib"),
        peak_memory_used_mib=peak("peak_memory_used_mib"),
        energy_kwh=max(energies) if energies else None,
    )


MINUTES_PER_HOUR = 60


def device_minutes_covered(covered_by_owner: Iterable[int]) -> int:
    """Minutes of an hour at which a device was scraped, from its per-owner (per-series) counts.

    A device changes owner within an hour (a pod leaves, the idle series appears), so its owners' minutes add up;
    a minute scraped under both owners at a hand-over counts once at most, hence the bound of the hour.
    """
    return min(MINUTES_PER_HOUR, sum(max(0, int(minutes)) for minutes in covered_by_owner))


def hour_is_covered(minutes_covered: int) -> bool:
    """Whether a device's hour was measured at every minute: only then is its rollup complete."""
    return minutes_covered >= MINUTES_PER_HOUR
