"""What the idle reclaim policy reads: the candidates, and each one's hourly device readings from the rollups."""

from __future__ import annotations

from datetime import datetime, timedelta

from django.db.models import Max

from allocations.models import GpuRequest, RequestEvent, RequestStatus
from billing.models import UtilizationRollup
from gpucore.idle_reclaim import RECLAIMABLE_WORKLOADS, DeviceReading


def reclaim_candidates() -> list[GpuRequest]:
    """Running requests of the workload types the policy may suspend, with what the decision needs loaded."""
    return list(
        GpuRequest.objects.filter(status=RequestStatus.ACTIVE, workload_type__in=list(RECLAIMABLE_WORKLOADS))
        .exclude(cluster=None)
        .select_related("team", "requester", "sla_tier", "cluster")
        .order_by("pk")
    )


def last_resumed(request_ids: list[int]) -> dict[int, datetime]:
    """Per request, when it last left ``suspended`` (idle hours count again from its resume)."""
    rows = (
        RequestEvent.objects.filter(request_id__in=request_ids, from_status=RequestStatus.SUSPENDED)
        .values("request_id")
        .annotate(at=Max("at"))
    )
    return {row["request_id"]: row["at"] for row in rows}


def idle_since(request: GpuRequest, resumed: datetime | None) -> datetime:
    """The earliest moment whose hours may count as idle: its activation, its last resume, its owner's last keep."""
    moments = [m for m in (request.activated_at, resumed, request.idle_kept_at) if m is not None]
    return max(moments) if moments else request.created_at


def device_readings_by_request(*, starts: dict[int, datetime], end: datetime) -> dict[int, list[DeviceReading]]:
    """Per request id, its rollup rows of the hours in ``[starts[id], end)``, one per device and hour (a device's rows
    for several pods of the request in one hour each stand alone: every one has to be idle); one query for all."""
    readings: dict[int, list[DeviceReading]] = {request_id: [] for request_id in starts}
    if not starts:
        return readings
    rows = (
        UtilizationRollup.objects.filter(request_id__in=list(starts), hour__gte=min(starts.values()), hour__lt=end)
        .order_by("request_id", "hour", "gpu_uuid", "mig_instance", "pod")
        .values_list(
            "request_id",
            "hour",
            "gpu_uuid",
            "mig_instance",
            "pod",
            "sample_count",
            "avg_utilization_pct",
            "peak_memory_used_mib",
            "is_complete",
        )
    )
    for request_id, hour, uuid, mig, _pod, samples, util, memory, complete in rows:
        if hour < starts[request_id]:
            continue
        readings[request_id].append(
            DeviceReading(
                hour=hour,
                device=f"{uuid}/{mig}" if mig else uuid,
                sample_count=samples,
                avg_utilization_pct=util,
                peak_memory_used_mib=memory,
                is_complete=complete,
            )
        )
    return readings


def window_start(now: datetime, window_hours: int) -> datetime:
    """The first hour the policy can look at for a window of ``window_hours`` ending with the last hour ended."""
    return now.replace(minute=0, second=0, microsecond=0) - timedelta(hours=window_hours)
