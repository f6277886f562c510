"""Demo utilization for ``seed_demo``: a realistic month of hourly rollups on the demo pools; deterministic, idempotent.

Each pool gets a few devices (whole GPUs, MIG instances of the pool's layout, time-sliced GPUs). Active requests
run on devices of their pool with a pattern by workload type: training busy and hot (a few afternoons above 83 °C),
real-time inference diurnal and light (a right-sizing candidate), batch inference at night, development in office
hours and idle at night (waste), time-sliced development memory-bound (memory pressure). Team workloads outside the
portal idle on a dedicated GPU (waste with no request) and squeeze a time-sliced one (memory pressure); the other
devices are unallocated. Requests that ran in the past (released or expired) hold their devices from their
activation to their end, so a device serves several requests over the months. Values are drawn from a random
generator seeded by device and hour, so a re-run writes the same rows and skips those already there.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.db import transaction
from django.utils import timezone

from allocations.models import GpuRequest, NodePool, RequestStatus, SharingMode, Team
from billing.metering.aggregates import refresh_usage_aggregates
from billing.models import IngestStatus, UtilizationIngestHour, UtilizationRollup, UtilizationWatermark
from gpucore.alerts import memory_pressure_minutes
from gpucore.vocabulary import Strategy

HOUR = timedelta(hours=1)
MAX_GPUS_PER_POOL = 8  # enough to look like a pool, few enough to seed in seconds
IDLE_POWER_FRACTION = 0.12
# Devices no request holds (unallocated, or running the workload outside the portal) are written for this many days
# back: the pages read them for the last month; the months before are their requests' history.
UNHELD_DAYS = 30
# A workload of the platform team outside the portal: no team's request, so no team's hours.
OUTSIDE_NAMESPACE, OUTSIDE_POD = "ml-platform", "jupyter-shared-0"


@dataclass(frozen=True)
class DemoDevice:
    """One simulated device and who holds it (nobody: unallocated)."""

    uuid: str
    gpu_index: int
    mig_instance: str
    mig_profile: str
    model_name: str
    memory_mib: float
    tdp_watts: float
    hostname: str
    pattern: str  # training | realtime_inference | batch_inference | development | shared_dev | waste | idle
    namespace: str = ""
    pod: str = ""
    team_id: int | None = None
    request_id: int | None = None


def pool_slots(pool: NodePool) -> list[DemoDevice]:
    """A pool's simulated devices, unallocated: whole GPUs, or the MIG instances of the pool's layout."""
    model = pool.gpu_model
    names = list(model.dcgm_model_names or [model.name])
    gpus = min(pool.gpu_total, MAX_GPUS_PER_POOL if pool.sharing_mode == SharingMode.NONE else 2)
    profiles = {p.name: p.memory_gb for p in model.mig_profiles.all()}
    slots: list[DemoDevice] = []
    for gpu in range(gpus):
        base = {
            "uuid": f"GPU-demo-{pool.cluster_id:02d}{pool.pk:03d}-{gpu:04d}",
            "gpu_index": gpu % pool.gpus_per_node,
            "model_name": names[0],
            "tdp_watts": float(model.tdp_watts),
            "hostname": f"{pool.name}-node-{gpu // pool.gpus_per_node + 1}",
        }
        if pool.sharing_mode == SharingMode.MIG:
            instance = 0
            for profile, count in sorted(pool.mig_devices.items()):
                for _ in range(int(count)):
                    instance += 1
                    memory = float(profiles.get(profile, model.memory_gb)) * 1024
                    slots.append(
                        DemoDevice(
                            **base, mig_instance=str(instance), mig_profile=profile, memory_mib=memory, pattern="idle"
                        )
                    )
        else:
            slots.append(
                DemoDevice(**base, mig_instance="", mig_profile="", memory_mib=model.memory_gb * 1024.0, pattern="idle")
            )
    return slots


def request_pattern(req: GpuRequest) -> str:
    """The utilization pattern of a request's workload type (a development share on time-slicing squeezes memory)."""
    pattern = str(req.workload_type)
    if req.allocation_spec.strategy == Strategy.TIME_SLICING and pattern == "development":
        return "shared_dev"
    return pattern


def demo_devices(pool: NodePool, requests: list[GpuRequest], outside: tuple[Team, str] | None) -> list[DemoDevice]:
    """A pool's simulated devices now: the requests' first, then an outside team workload, then unallocated ones."""
    slots = pool_slots(pool)
    taken: list[DemoDevice] = []
    free = list(slots)
    for req in requests:
        spec = req.allocation_spec
        pattern = request_pattern(req)
        wanted = spec.mig_profile
        for unit in range(max(1, req.resource_units or 1)):
            match = next((d for d in free if (d.mig_profile == wanted if wanted else not d.mig_profile)), None)
            if match is None:
                break
            free.remove(match)
            taken.append(
                DemoDevice(
                    **{
                        **match.__dict__,
                        "pattern": pattern,
                        "namespace": req.team.namespace,
                        "pod": f"gpr-{req.pk}-{unit}",
                        "team_id": req.team_id,
                        "request_id": req.pk,
                    }
                )
            )
    outside_pattern = {SharingMode.NONE: "waste", SharingMode.TIME_SLICING: "shared_dev"}.get(pool.sharing_mode)
    if outside is not None and outside_pattern and free:
        team, pod = outside
        device = free.pop(0)
        taken.append(
            DemoDevice(
                **{
                    **device.__dict__,
                    "pattern": outside_pattern,
                    "namespace": team.namespace,
                    "pod": pod,
                    "team_id": team.pk,
                }
            )
        )
    return taken + free


def demo_level(pattern: str, hour: datetime, rng: random.Random) -> tuple[float, float]:
    """The (utilization %, memory fraction) of a pattern at an hour, before noise."""
    local = (hour.hour + 1) % 24  # the demo teams sit around UTC+1
    weekend = hour.weekday() >= 5
    day_wave = math.sin(math.pi * max(0, local - 7) / 12) if 7 <= local <= 19 else 0.0
    if pattern == "training":
        return 82 + 10 * rng.random(), 0.6 + 0.08 * rng.random()
    if pattern == "realtime_inference":
        return 6 + (28 if not weekend else 10) * day_wave, 0.08 + 0.01 * rng.random()
    if pattern == "batch_inference":
        return (85.0 if local < 6 else 8.0), (0.6 if local < 6 else 0.2)
    if pattern == "development":
        return (0.0 if weekend else 35 * day_wave), 0.15 + 0.05 * day_wave
    if pattern == "shared_dev":
        return 20 + 45 * day_wave, 0.55 + 0.38 * day_wave
    if pattern == "waste":
        return 2 + 3 * rng.random(), 0.06
    return 0.0, 0.0


def _row(device: DemoDevice, *, cluster_id: int, hour: datetime, now: datetime) -> UtilizationRollup:
    rng = random.Random(f"{device.uuid}/{device.mig_instance}|{hour.isoformat()}")
    util, memory = demo_level(device.pattern, hour, rng)
    util = max(0.0, min(100.0, util + rng.gauss(0, 2.5) if util else 0.0))
    memory = max(0.0, min(0.99, memory + rng.gauss(0, 0.02) if memory else 0.0))
    peak_util = min(100.0, util * (1.1 + 0.3 * rng.random())) if util else 0.0
    ratios = [max(0.0, min(0.99, memory + rng.gauss(0, 0.04))) for _ in range(60)] if memory else [0.0] * 60
    is_mig = bool(device.mig_instance)
    # Temperature follows load; training on a warm afternoon crosses 83 °C (guide 3.3) for a while.
    temperature = (
        33 + 0.5 * util + rng.gauss(0, 1.5) + (9 if device.pattern == "training" and 13 <= hour.hour <= 15 else 0)
    )
    power = device.tdp_watts * (IDLE_POWER_FRACTION + (1 - IDLE_POWER_FRACTION) * util / 100.0)
    return UtilizationRollup(
        cluster_id=cluster_id,
        hour=hour,
        gpu_uuid=device.uuid,
        mig_instance=device.mig_instance,
        namespace=device.namespace,
        pod=device.pod,
        team_id=device.team_id,
        request_id=device.request_id,
        gpu_model_name=device.model_name,
        mig_profile=device.mig_profile,
        hostname=device.hostname,
        gpu_index=device.gpu_index,
        sample_count=60,
        avg_utilization_pct=round(util, 2),
        peak_utilization_pct=round(peak_util, 2),
        avg_memory_used_mib=round(memory * device.memory_mib, 1),
        peak_memory_used_mib=round(max(ratios) * device.memory_mib, 1),
        energy_kwh=None if is_mig else round(power / 1000.0, 4),
        max_temperature_c=None if is_mig else round(temperature, 1),
        memory_pressure_minutes=memory_pressure_minutes(ratios),
        is_complete=True,
        pulled_at=now,
    )


@dataclass(frozen=True)
class Holding:
    """A request holding one device from ``start`` to ``end`` (None: still running)."""

    request: GpuRequest
    unit: int
    start: datetime
    end: datetime | None
    pattern: str

    def covers(self, hour: datetime) -> bool:
        return hour + HOUR > self.start and (self.end is None or hour < self.end)


def _held_requests(pools: list[NodePool]) -> list[GpuRequest]:
    """Requests that ran on the pools, now or before: active ones, and ended ones with their end."""
    return list(
        GpuRequest.objects.filter(node_pool__in=pools, activated_at__isnull=False)
        .filter(status__in=[RequestStatus.ACTIVE, RequestStatus.RELEASED, RequestStatus.EXPIRED])
        .select_related("team", "node_pool__gpu_model")
        .order_by("activated_at", "pk")
    )


def pool_timelines(
    pool: NodePool, requests: list[GpuRequest], patterns: dict[int, str]
) -> list[tuple[DemoDevice, list[Holding]]]:
    """Each device of the pool with the requests that held it in turn: each unit of a request takes the first device
    of its kind free over the request's whole run (requests that do not fit the simulated devices are left out)."""
    timelines: list[tuple[DemoDevice, list[Holding]]] = [(slot, []) for slot in pool_slots(pool)]
    for req in requests:
        start, end = req.activated_at, req.ended_at if req.status != RequestStatus.ACTIVE else None
        wanted = req.allocation_spec.mig_profile
        pattern = patterns.get(req.pk) or request_pattern(req)
        for unit in range(max(1, req.resource_units or 1)):
            for slot, holdings in timelines:
                if (slot.mig_profile == wanted if wanted else not slot.mig_profile) and not any(
                    _overlap(h, start, end) for h in holdings
                ):
                    holdings.append(Holding(req, unit, start, end, pattern))
                    break
    return timelines


def _overlap(holding: Holding, start: datetime, end: datetime | None) -> bool:
    return (end is None or holding.start < end) and (holding.end is None or start < holding.end)


def _device_at(slot: DemoDevice, holdings: list[Holding], hour: datetime) -> DemoDevice:
    holding = next((h for h in holdings if h.covers(hour)), None)
    if holding is None:
        return slot
    req = holding.request
    return DemoDevice(
        **{
            **slot.__dict__,
            "pattern": holding.pattern,
            "namespace": req.team.namespace,
            "pod": f"gpr-{req.pk}-{holding.unit}",
            "team_id": req.team_id,
            "request_id": req.pk,
        }
    )


def _outside(slot: DemoDevice, pool: NodePool) -> DemoDevice:
    pattern = "waste" if pool.sharing_mode == SharingMode.NONE else "shared_dev"
    return DemoDevice(**{**slot.__dict__, "pattern": pattern, "namespace": OUTSIDE_NAMESPACE, "pod": OUTSIDE_POD})


def generate_demo_usage(*, days: int = 30, now: datetime | None = None, patterns: dict[int, str] | None = None) -> int:
    """Write ``days`` of hourly demo rollups up to the last whole hour before ``now``; returns the rows created.

    Idempotent: rows already there (same cluster, hour, device and owner) are kept, and the same values are drawn
    on every run. Requests are placed on devices of their own pool while they ran (``pool_timelines``); a device no
    request ever held runs a platform workload outside the portal on dedicated and time-sliced pools; hours no request
    held are written for the last ``UNHELD_DAYS`` only. Hours are
    logged as ingested and each cluster's watermark is set when it has none, so the pages read the months as
    complete. ``patterns`` overrides the utilization pattern of requests by id (the demo's idle notebook).
    """
    now = now or timezone.now()
    patterns = patterns or {}
    end = now.replace(minute=0, second=0, microsecond=0)
    start = end - timedelta(days=days)
    hours = [start + HOUR * i for i in range(days * 24)]
    recent = end - timedelta(days=min(days, UNHELD_DAYS))
    pools = list(NodePool.objects.filter(cluster__is_active=True).select_related("cluster", "gpu_model"))
    held = _held_requests(pools)
    created = 0
    for cluster_id in sorted({pool.cluster_id for pool in pools}):
        existing = set(
            UtilizationRollup.objects.filter(cluster_id=cluster_id, hour__gte=start, hour__lt=end).values_list(
                "hour", "gpu_uuid", "mig_instance", "namespace", "pod"
            )
        )
        rows = []
        for pool in (p for p in pools if p.cluster_id == cluster_id):
            timelines = pool_timelines(pool, [r for r in held if r.node_pool_id == pool.pk], patterns)
            never_held = [slot for slot, holdings in timelines if not holdings and not slot.mig_profile]
            outside = never_held[0] if never_held else None
            for slot, holdings in timelines:
                for hour in hours:
                    device = _outside(slot, pool) if slot is outside else _device_at(slot, holdings, hour)
                    if device.request_id is None and hour < recent:
                        continue  # unheld hours only for the last month: the history's rows are its requests'
                    key = (hour, device.uuid, device.mig_instance, device.namespace, device.pod)
                    if key in existing:
                        continue
                    existing.add(key)
                    rows.append(_row(device, cluster_id=cluster_id, hour=hour, now=now))
        with transaction.atomic():
            UtilizationRollup.objects.bulk_create(rows, batch_size=2000, ignore_conflicts=True)
            refresh_usage_aggregates(cluster_id=cluster_id, start=start, end=end)
            logged = set(
                UtilizationIngestHour.objects.filter(cluster_id=cluster_id, hour__gte=start, hour__lt=end).values_list(
                    "hour", flat=True
                )
            )
            UtilizationIngestHour.objects.bulk_create(
                [
                    UtilizationIngestHour(
                        cluster_id=cluster_id,
                        hour=hour,
                        status=IngestStatus.COMPLETE,
                        rows=0,
                        attempts=1,
                        updated_at=now,
                    )
                    for hour in hours
                    if hour not in logged
                ],
                batch_size=2000,
                ignore_conflicts=True,
            )
            if hours:
                UtilizationWatermark.objects.get_or_create(
                    cluster_id=cluster_id, defaults={"last_complete_hour": hours[-1], "updated_at": now}
                )
        created += len(rows)
    return created
