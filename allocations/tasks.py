"""Celery tasks of the request lifecycle: thin, idempotent, named; the work is in services."""

from __future__ import annotations

from celery import shared_task
from django.utils import timezone

from allocations.models import GpuRequest, RequestStatus


@shared_task(name="allocations.provision_request", acks_late=True, reject_on_worker_lost=True)
def provision_request(request_id: int) -> str:
    """Hand an approved request to provisioning.

    Until the cluster gateways exist this records that the request was queued, and does nothing else: re-running it
    is harmless.
    """
    request = GpuRequest.objects.filter(pk=request_id).first()
    if request is None or request.status != RequestStatus.APPROVED:
        return "skipped"
    task_id = getattr(provision_request.request, "id", None) or ""
    GpuRequest.objects.filter(pk=request_id, status=RequestStatus.APPROVED).update(
        status_detail=f"Queued for provisioning at {timezone.now():%Y-%m-%d %H:%M UTC}.", last_task_id=task_id
    )
    return "queued"
