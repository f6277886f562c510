"""Reads for the hardware-vs-software troubleshooting tree on the request and cluster pages.

The rules are pure (``gpucore.gpu_triage``); this module gathers their evidence: XID codes and driver versions per
GPU and hour (``GpuHealthHour``), the hottest minute per GPU (``UtilizationRollup.max_temperature_c``) and the
messages requests carry (``GpuRequest.status_detail``: the scheduler's or kubelet's words, a failed container's last
lines). A request looks at the GPUs it held, in the hours it held them; a cluster at all its GPUs.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.db import connection
from django.db.models import Max, Q
from django.utils import timezone

from allocations.models import Cluster, GpuRequest, RequestStatus
from allocations.selectors import User, clusters_visible_to, gpu_requests_visible_to
from billing.models import GpuHealthHour, UtilizationRollup
from billing.utilization.selectors import window
from gpucore.alerts import TEMPERATURE_LIMIT_C
from gpucore.gpu_triage import GpuSignals, Message, triage

REQUEST_WINDOW_DAYS = 7
CLUSTER_WINDOW_DAYS = 1
MAX_MESSAGES = 50
# Observed phases of a workload that is in trouble: the tree's last leaf (the container runtime) may apply.
FAILING_PHASES = frozenset({"Failed", "CrashLoopBackOff"})


@dataclass(frozen=True)
class _Hottest:
    value: float
    hour: datetime | None = None
    hostname: str = ""
    gpu_index: int | None = None


def _signals(rows: Iterable[dict[str, Any]], temperatures: dict[str, _Hottest]) -> list[GpuSignals]:
    """One GpuSignals per GPU from its health hours (oldest first) and its hottest minute."""
    by_gpu: dict[str, dict[str, Any]] = {}
    for row in rows:
        gpu = by_gpu.setdefault(row["gpu_uuid"], {"codes": [], "events": 0, "last_hour": None})
        gpu.update(hostname=row["hostname"], index=row["gpu_index"], model=row["gpu_model_name"])
        if row["driver_version"]:
            gpu["driver"] = row["driver_version"]
        for code in row["xid_codes"] or ():
            if code not in gpu["codes"]:
                gpu["codes"].append(code)
        gpu["events"] += row["xid_events"]
        if row["xid_codes"]:
            gpu["last_hour"] = row["hour"]
    uuids = list(by_gpu) + [uuid for uuid in temperatures if uuid not in by_gpu]
    signals = []
    for uuid in uuids:
        gpu = by_gpu.get(uuid, {})
        hottest = temperatures.get(uuid)
        signals.append(
            GpuSignals(
                gpu_uuid=uuid,
                hostname=gpu.get("hostname") or (hottest.hostname if hottest else ""),
                gpu_index=gpu["index"] if gpu.get("index") is not None else (hottest.gpu_index if hottest else None),
                gpu_model=gpu.get("model", ""),
                driver_version=gpu.get("driver", ""),
                xid_codes=tuple(gpu.get("codes", ())),
                xid_events=gpu.get("events", 0),
                last_xid_hour=gpu.get("last_hour"),
                max_temperature_c=hottest.value if hottest else None,
                hottest_hour=hottest.hour if hottest else None,
            )
        )
    return signals


_HEALTH_FIELDS = (
    "gpu_uuid",
    "hour",
    "hostname",
    "gpu_index",
    "gpu_model_name",
    "driver_version",
    "xid_codes",
    "xid_events",
)


def _hot_gpus(rollups: Any) -> dict[str, _Hottest]:
    """Each GPU's hottest minute in the rollups; above the alert limit also its hour and node (one more query)."""
    hottest = {
        row["gpu_uuid"]: _Hottest(row["hottest"])
        for row in rollups.values("gpu_uuid").annotate(hottest=Max("max_temperature_c"))
        if row["hottest"] is not None
    }
    hot = [uuid for uuid, found in hottest.items() if found.value > TEMPERATURE_LIMIT_C]
    if hot:
        for row in (
            rollups.filter(gpu_uuid__in=hot, max_temperature_c__gt=TEMPERATURE_LIMIT_C)
            .order_by("gpu_uuid", "-max_temperature_c", "-hour")
            .values("gpu_uuid", "hour", "max_temperature_c", "hostname", "gpu_index")
        ):
            found = hottest[row["gpu_uuid"]]
            if found.hour is None and row["max_temperature_c"] == found.value:
                hottest[row["gpu_uuid"]] = _Hottest(found.value, row["hour"], row["hostname"], row["gpu_index"])
    return hottest


def cluster_drivers(*, cluster_ids: Iterable[int], start: datetime, end: datetime) -> dict[str, str]:
    """Each node's latest reported NVIDIA driver version in [start, end) (hostname -> version)."""
    rows = (
        GpuHealthHour.objects.filter(cluster_id__in=list(cluster_ids), hour__gte=start, hour__lt=end)
        .exclude(driver_version="")
        .order_by("hostname", "-hour")
    )
    if connection.vendor == "postgresql":
        rows = rows.distinct("hostname")  # DISTINCT ON; elsewhere the first row of each host is kept below
    latest: dict[str, str] = {}
    for hostname, version in rows.values_list("hostname", "driver_version"):
        latest.setdefault(hostname, version)
    return latest


def request_triage_context(
    *,
    user: User,
    request: GpuRequest,
    now: datetime | None = None,
    visibility_checked: bool = False,
    no_rollups_between: tuple[datetime, datetime] | None = None,
) -> dict[str, Any]:
    """Context of ``billing/_gpu_troubleshooting.html`` for a request (``{"triage": None}`` when not visible).

    ``visibility_checked``: the caller read ``request`` through ``gpu_requests_visible_to(user=user)``;
    ``no_rollups_between``: [start, end) in which the caller found none of the request's rollups (not read again)."""
    if not visibility_checked and not gpu_requests_visible_to(user=user).filter(pk=request.pk).exists():
        return {"triage": None}
    start, end = window(days=REQUEST_WINDOW_DAYS, now=now)
    held: dict[tuple[int, str], set[datetime]] = defaultdict(set)
    hot: dict[str, _Hottest] = {}  # no rollups in the window: none was hot
    # Skipped when the utilization panel already found none of the request's rollups in this window.
    if no_rollups_between is None or not (no_rollups_between[0] <= start and end <= no_rollups_between[1]):
        rollups = UtilizationRollup.objects.filter(request=request, hour__gte=start, hour__lt=end)
        for cluster_id, uuid, hour in rollups.values_list("cluster_id", "gpu_uuid", "hour"):
            held[(cluster_id, uuid)].add(hour)
        if held:
            hot = _hot_gpus(rollups)
    health = []
    if held:
        scope = Q()
        for cluster_id, uuid in held:
            scope |= Q(cluster_id=cluster_id, gpu_uuid=uuid)
        for row in (
            GpuHealthHour.objects.filter(scope, hour__gte=start, hour__lt=end)
            .order_by("hour")
            .values("cluster_id", *_HEALTH_FIELDS)
        ):
            # Only the hours the request held the GPU: an XID of the team before or after is not its evidence.
            if row["hour"] in held[(row["cluster_id"], row["gpu_uuid"])]:
                health.append(row)
    gpus = _signals(health, hot)
    messages = [Message(f"Request #{request.pk}", request.status_detail)] if request.status_detail else []
    has_readings = bool(gpus) or bool(messages)
    branches: tuple[Any, ...] = ()
    if has_readings:  # without readings the panel is not shown: the cluster's drivers are not read for it
        cluster_ids = {cluster_id for cluster_id, _ in held} or ({request.cluster_id} if request.cluster_id else set())
        drivers = cluster_drivers(cluster_ids=cluster_ids, start=end - timedelta(days=1), end=end)
        failing = request.status == RequestStatus.FAILED or request.observed_phase in FAILING_PHASES
        branches = triage(gpus=gpus, drivers=drivers, messages=messages, failing=failing)
    return {
        "triage": {
            "scope": "this request's GPUs",
            "days": REQUEST_WINDOW_DAYS,
            "gpu_count": len(gpus),
            "has_readings": has_readings,
            "branches": branches,
        }
    }


def cluster_triage_context(*, user: User, cluster: Cluster, now: datetime | None = None) -> dict[str, Any]:
    """Context of ``billing/_gpu_troubleshooting.html`` for a cluster (platform admins; None for anyone else)."""
    if not clusters_visible_to(user=user).filter(pk=cluster.pk).exists():
        return {"triage": None}
    start, end = window(days=CLUSTER_WINDOW_DAYS, now=now or timezone.now())
    health = GpuHealthHour.objects.filter(cluster=cluster, hour__gte=start, hour__lt=end)
    # Only GPUs with an XID need their hours read; the others count and give their driver version below. An hour has
    # codes exactly when it has XID minutes (gpucore.xid.xid_hours); the minutes compare on every database.
    xid_rows = health.filter(xid_minutes__gt=0).order_by("hour").values(*_HEALTH_FIELDS)
    rollups = UtilizationRollup.objects.filter(cluster=cluster, hour__gte=start, hour__lt=end)
    gpus = _signals(xid_rows, _hot_gpus(rollups))
    # A GPU was read when either its health (XID, driver) or its utilization (temperature) came in: the count above
    # the tree covers every GPU the tree may name.
    read = set(health.values_list("gpu_uuid", flat=True).distinct())
    read |= set(rollups.values_list("gpu_uuid", flat=True).distinct())
    drivers = cluster_drivers(cluster_ids=[cluster.pk], start=start, end=end)
    recent = (
        GpuRequest.objects.filter(Q(cluster=cluster) | Q(node_pool__cluster=cluster), updated_at__gte=start)
        .exclude(status_detail="")
        .order_by("-updated_at")
        .values_list("pk", "name", "status_detail")[:MAX_MESSAGES]
    )
    messages = [Message(f"Request #{pk} {name}", detail) for pk, name, detail in recent]
    return {
        "triage": {
            "scope": "this cluster's GPUs",
            "days": CLUSTER_WINDOW_DAYS,
            "gpu_count": len(read),
            "has_readings": True,
            "branches": triage(gpus=gpus, drivers=drivers, messages=messages),
        }
    }
