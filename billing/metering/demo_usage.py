"""Demo utilization for ``seed_demo``: a realistic month of hourly rollups on the demo pools; deterministic, idempotent.

Each pool gets a few devices (whole GPUs, MIG instances of the pool's layout, time-sliced GPUs). Active requests
run on devices of their pool with a pattern by workload type: training busy and hot (a few afternoons above 83 °C),
real-time inference diurnal and light (a right-sizing candidate), batch inference at night, development in office
hours and idle at night (waste), time-sliced development memory-bound (memory pressure). Team workloads outside the
portal idle on a dedicated GPU (waste with no request) and squeeze a time-sliced one (memory pressure); the other
devices are unallocated. Values are drawn from
a random generator seeded by device and hour, so a re-run writes the same rows and skips those already there.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.db import transaction
from django.utils import timezone

from allocations.models import GpuRequest, NodePool, RequestEvent, RequestStatus, SharingMode, Team
from billing.metering.aggregates import refresh_usage_aggregates
from billing.models import IngestStatus, UtilizationIngestHour, UtilizationRollup, UtilizationWatermark
from gpucore.alerts import memory_pressure_minutes
from gpucore.vocabulary import Strategy

HOUR = timedelta(hours=1)
MAX_GPUS_PER_POOL = 8  # enough to look like a pool, few enough to seed in seconds
IDLE_POWER_FRACTION = 0.12
# How long ago the demo's running requests started, in turn (days): a month of history, a rising last week.
BACKDATE_DAYS = (26, 5, 2, 15, 4, 1)


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


def demo_devices(pool: NodePool, requests: list[GpuRequest], outside: tuple[Team, str] | None) -> list[DemoDevice]:
    """A pool's simulated devices: the requests' first, then an outside team workload, then unallocated ones."""
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
    taken: list[DemoDevice] = []
    free = list(slots)
    for req in requests:
        spec = req.allocation_spec
        pattern = str(req.workload_type)
        if spec.strategy == Strategy.TIME_SLICING:
            pattern = "shared_dev" if pattern == "development" else pattern
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


def backdate_demo_requests(*, now: datetime) -> int:
    """Move the events and timestamps of requests seeded within the last day back to give them a history.

    Only requests whose first event is less than a day old move, so a second run moves nothing. Events are
    append-only through the model; this demo-only history edit goes around it with a queryset update.
    """
    moved = 0
    requests = GpuRequest.objects.filter(status=RequestStatus.ACTIVE, node_pool__isnull=False).order_by("pk")
    for index, req in enumerate(requests):
        first = req.events.order_by("at").values_list("at", flat=True).first()
        if first is None or now - first > timedelta(days=1):
            continue
        shift = timedelta(days=BACKDATE_DAYS[index % len(BACKDATE_DAYS)])
        for event_id, at in req.events.values_list("pk", "at"):
            RequestEvent.objects.filter(pk=event_id).update(at=at - shift)
        # created_at too, so "requested ... ago" agrees with the timeline below it.
        moved_fields = ("created_at", "submitted_at", "approved_at", "activated_at")
        updates = [name for name in moved_fields if getattr(req, name) is not None]
        for name in updates:
            setattr(req, name, getattr(req, name) - shift)
        req.save(update_fields=updates)  # a save: the month so far kept (infra.reference_cache) is rebuilt
        moved += 1
    return moved


def generate_demo_usage(*, days: int = 30, now: datetime | None = None, backdate_requests: bool = True) -> int:
    """Write ``days`` of hourly demo rollups up to the last whole hour before ``now``; returns the rows created.

    Idempotent: rows already there (same cluster, hour, device and owner) are kept, and the same values are drawn
    on every run. Requests are placed on devices of their own pool from their activation on; hours are logged as
    ingested and each cluster's watermark is set when it has none, so the pages read the month as complete.
    ``backdate_requests`` first gives freshly seeded running requests a start in the past (see above).
    """
    now = now or timezone.now()
    if backdate_requests:
        backdate_demo_requests(now=now)
    end = now.replace(minute=0, second=0, microsecond=0)
    start = end - timedelta(days=days)
    hours = [start + HOUR * i for i in range(days * 24)]
    pools = list(NodePool.objects.filter(cluster__is_active=True).select_related("cluster", "gpu_model"))
    active = list(
        GpuRequest.objects.filter(status=RequestStatus.ACTIVE, node_pool__in=pools)
        .select_related("team")
        .order_by("pk")
    )
    outside_team = Team.objects.exclude(pk__in=[r.team_id for r in active]).order_by("slug").first()
    outside_team = outside_team or Team.objects.order_by("slug").first()
    created = 0
    for cluster_id in sorted({pool.cluster_id for pool in pools}):
        existing = set(
            UtilizationRollup.objects.filter(cluster_id=cluster_id, hour__gte=start, hour__lt=end).values_list(
                "hour", "gpu_uuid", "mig_instance", "namespace", "pod"
            )
        )
        rows = []
        outside = (outside_team, "jupyter-shared-0") if outside_team else None
        since = {r.pk: r.activated_at or r.approved_at or r.created_at for r in active}
        for pool in (p for p in pools if p.cluster_id == cluster_id):
            devices = demo_devices(pool, [r for r in active if r.node_pool_id == pool.pk], outside)
            for device in devices:
                for hour in hours:
                    held_since = since.get(device.request_id) if device.request_id else None
                    if held_since is not None and hour + HOUR <= held_since:
                        device_now = DemoDevice(
                            **{
                                **device.__dict__,
                                "namespace": "",
                                "pod": "",
                                "team_id": None,
                                "request_id": None,
                                "pattern": "idle",
                            }
                        )
                    else:
                        device_now = device
                    key = (hour, device_now.uuid, device_now.mig_instance, device_now.namespace, device_now.pod)
                    if key in existing:
                        continue
                    existing.add(key)
                    rows.append(_row(device_now, cluster_id=cluster_id, hour=hour, now=now))
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
