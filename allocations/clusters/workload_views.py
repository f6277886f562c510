"""The request page's live reading of its workload: pods and recent Kubernetes events, re-read on each refresh."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, JsonResponse
from django.template.loader import render_to_string
from django.utils import timezone
from django.views.decorators.http import require_GET

from allocations.clusters.workloads import gpu_request_workload_live
from allocations.models import GpuRequest
from allocations.selectors import gpu_requests_visible_to


@login_required
@require_GET
def request_workload(request: HttpRequest, pk: int) -> JsonResponse:
    """Pods and events of a request in the user's teams, read now through the gateway with its short timeout.

    The "Use it" card swaps in ``pods_html`` and ``events_html``; an unreachable cluster answers 200 with ``error``
    (the page shows the message), never a 5xx, since the page around it is still right."""
    try:
        gpu_request = gpu_requests_visible_to(user=request.user).get(pk=pk)  # its team and cluster joined
    except GpuRequest.DoesNotExist as exc:
        raise Http404("No such request in your teams.") from exc
    workload = gpu_request_workload_live(request=gpu_request)
    context = {"workload": workload, "gpu_request": gpu_request}
    return JsonResponse(
        {
            "id": gpu_request.pk,
            "observable": workload.observable,
            "error": workload.error,
            "pods": [
                {"name": p.name, "phase": p.phase, "ready": p.ready, "reason": p.reason, "message": p.message}
                for p in workload.pods
            ],
            "events": [
                {
                    "object": f"{e.object_kind}/{e.object_name}",
                    "type": e.type,
                    "reason": e.reason,
                    "message": e.message,
                    "count": e.count,
                    "last_seen": e.last_seen.isoformat() if e.last_seen else None,
                }
                for e in workload.events
            ],
            "read_at": timezone.now().isoformat(),
            "pods_html": render_to_string("allocations/_workload_pods.html", context, request),
            "events_html": render_to_string("allocations/_workload_events.html", context, request),
        }
    )
