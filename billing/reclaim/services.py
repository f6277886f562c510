"""One pass of the idle reclaim policy over every running development workload, and the notices it sends.

``idle_reclaim_run`` is what the hourly Celery task runs. For each candidate it reads the rollups of the idle window,
asks ``gpucore.idle_reclaim.decide`` and, on its answer, writes the warning or the suspension through the allocations
services (each once: the warning is keyed on the idle run it warns about, the suspension on the active status). The
owner and the team's leads are told by email, and the team's chat (its budget's chat URL) as budget alerts are. One
request's failure (a cluster down) is logged and left for the next run; it never holds the others back.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

from django.utils import timezone

from allocations.clusters.gateways.base import GatewayError
from allocations.clusters.suspension import NothingToSuspend
from allocations.idle_policy import reclaim_enabled, reclaim_thresholds
from allocations.models import GpuRequest
from allocations.requests.reclaim_services import gpu_request_idle_warn, gpu_request_suspend
from billing.reclaim.notices import tell_owner
from billing.reclaim.readings import (
    device_readings_by_request,
    idle_since,
    last_resumed,
    reclaim_candidates,
    window_start,
)
from gpucore.idle_reclaim import ReclaimAction, ReclaimDecision, decide

logger = logging.getLogger(__name__)


@dataclass
class ReclaimRunResult:
    """What one pass did: request ids warned, suspended, and those that failed (retried by the next pass)."""

    warned: list[int] = field(default_factory=list)
    suspended: list[int] = field(default_factory=list)
    failed: list[int] = field(default_factory=list)
    enabled: bool = True


def idle_reclaim_run() -> ReclaimRunResult:
    """Warn or suspend each idle development workload as the policy decides, now; safe to run again at any time."""
    if not reclaim_enabled():
        return ReclaimRunResult(enabled=False)
    now = timezone.now()  # the services stamp the warning and the suspension with the same clock
    result = ReclaimRunResult()
    candidates = reclaim_candidates()
    resumed = last_resumed([request.pk for request in candidates])
    thresholds_of = {
        request.pk: reclaim_thresholds(request.sla_tier.slug if request.sla_tier_id else None) for request in candidates
    }
    # Every candidate's window read in one query (a pass over hundreds of notebooks is one round trip, not hundreds).
    readings_of = device_readings_by_request(
        starts={pk: window_start(now, thresholds.window_hours) for pk, thresholds in thresholds_of.items()}, end=now
    )
    for request in candidates:
        thresholds = thresholds_of[request.pk]
        since = idle_since(request, resumed.get(request.pk))
        readings = readings_of[request.pk]
        decision = decide(
            workload_type=request.workload_type,
            readings=readings,
            thresholds=thresholds,
            now=now,
            since=since,
            warned_at=request.idle_warned_at,
        )
        try:
            _act(request, decision, result)
        except (GatewayError, NothingToSuspend) as exc:
            logger.warning("idle reclaim of request %s failed, left active: %s", request.pk, exc)
            result.failed.append(request.pk)
    return result


def _act(request: GpuRequest, decision: ReclaimDecision, result: ReclaimRunResult) -> None:
    if decision.action is ReclaimAction.WARN:
        if gpu_request_idle_warn(request=request, reason=decision.reason, readings=decision.readings):
            result.warned.append(request.pk)
            notify_idle(request, decision)
    elif decision.action is ReclaimAction.SUSPEND and gpu_request_suspend(
        request=request, reason=decision.reason, readings=decision.readings
    ):
        result.suspended.append(request.pk)
        notify_idle(request, decision)


def idle_message(request: GpuRequest, decision: ReclaimDecision) -> tuple[str, str]:
    """The subject and body telling the owner what the policy did to ``request`` and what they can do about it."""
    page = f"the request's page (/requests/{request.pk}/)"
    if decision.action is ReclaimAction.SUSPEND:
        subject = f"[GPU Portal] Request #{request.pk} {request.name} was suspended for idling"
        action = (
            "Its Deployment was scaled to zero (its objects and volumes are kept) and it is no longer billed.\n"
            f"Resume it from {page} or POST /api/v1/requests/{request.pk}/resume/ (if the team's quota allows)."
        )
    else:
        subject = f"[GPU Portal] Request #{request.pk} {request.name} is idle and will be suspended"
        action = f"Keep it running from {page} or POST /api/v1/requests/{request.pk}/keep/ (once per idle window)."
    hours = "\n".join(
        f"  {v.hour:%Y-%m-%d %H:00} UTC: {v.max_utilization_pct or 0:.1f} % utilization, "
        f"{v.max_memory_mib or 0:.0f} MiB memory"
        for v in decision.readings
    )
    body = f"{request.team.name}'s {request.workload_type} workload {request.name}: {decision.reason}\n{action}\n"
    return " ".join(subject.split()), f"{body}\nThe hours behind it:\n{hours}\n"


def notify_idle(request: GpuRequest, decision: ReclaimDecision) -> None:
    """Email the requester and the team's leads, and post to the team's chat; an outage is logged, never raised."""
    subject, body = idle_message(request, decision)
    tell_owner(request, subject=subject, body=body)
