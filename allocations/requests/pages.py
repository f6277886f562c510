"""What a request's page shows: the buttons its services would allow, its extensions, the clone form's values, the
live status the page refreshes and its manifests as YAML."""

from __future__ import annotations

import json
import shlex
from functools import lru_cache

from allocations.models import (
    POLLING_STATUSES,
    ExtensionStatus,
    GpuRequest,
    RequestStatus,
    Role,
)
from allocations.requests.extension_services import extend_refusal, extension_decide_refusal
from allocations.requests.reclaim_services import keep_refusal, resume_refusal
from allocations.requests.refusals import (
    ROLE_NOT_READ,
    RoleNotRead,
    approve_refusal,
    cancel_refusal,
    reapply_refusal,
    release_refusal,
)
from allocations.selectors import User, gpu_request_detail, membership_role, user_is_approver
from gpucore.manifests import to_yaml
from gpucore.troubleshooting import troubleshoot


def gpu_request_actions(
    *, user: User, request: GpuRequest, role: str | RoleNotRead | None = ROLE_NOT_READ
) -> dict[str, bool]:
    """Which buttons the detail page shows this user: exactly those whose service would not refuse (the predicates).
    ``role``: the user's role in the request's team when the caller has it (``gpu_request_detail``'s viewer_role)."""
    approver = user_is_approver(user)
    if isinstance(role, RoleNotRead):
        role = membership_role(user=user, team=request.team)  # read once for the four answers that depend on it
    return {
        "cancel": cancel_refusal(user=user, request=request, role=role) is None,
        "release": release_refusal(user=user, request=request, role=role) is None,
        "review": approve_refusal(user=user, request=request) is None,
        "own_request_pending_review": (
            approver and request.status == RequestStatus.PENDING_APPROVAL and request.requester_id == user.pk
        ),
        "extend": extend_refusal(user=user, request=request, role=role) is None,
        # Any request of the user's teams, whatever its status: cloning only pre-fills a form, and submitting it is
        # checked like any new request.
        "clone": role is not None,
        # A team's leads save its requests as the team's templates.
        "save_template": role == Role.LEAD,
        "reapply": reapply_refusal(user=user, request=request) is None,
        # Idle reclaim: bring a suspended notebook back, or keep a running one from being suspended.
        "resume": resume_refusal(user=user, request=request, role=role) is None,
        "keep": keep_refusal(user=user, request=request, role=role) is None,
    }


CLONE_NAME_SUFFIX = " (copy)"


def gpu_request_clone_initial(*, user: User, pk: int) -> dict[str, object]:
    """The new-request form pre-filled from one of the user's visible requests (GpuRequest.DoesNotExist otherwise):
    the same team, profile, tier, cluster, image and command; a duration but never a past expiry date."""
    source = gpu_request_detail(user=user, pk=pk)
    name = source.name[: 100 - len(CLONE_NAME_SUFFIX)] + CLONE_NAME_SUFFIX
    initial: dict[str, object] = {
        "team": source.team.slug,
        "name": name,
        "purpose": source.purpose,
        "workload_type": source.workload_type,
        "gpu_memory_gb": source.gpu_memory_gb,
        "gpu_count": source.gpu_count,
        "replicas": source.replicas,
        "latency_sensitive": "true" if source.latency_sensitive else "false",
        "latency_p99_ms": source.latency_p99_ms,
        "isolation_required": source.isolation_required,
        "expected_utilization_pct": source.expected_utilization_pct,
        "gpu_model": source.gpu_model_requested,
        "sla_tier": source.sla_tier.slug if source.sla_tier else "",
        "duration_hours": source.duration_hours,
        "cluster": source.cluster.name if source.cluster else "",
        "image": source.image,
        "command": shlex.join(source.command or []),
    }
    return {key: value for key, value in initial.items() if value is not None}


def gpu_request_extension_rows(*, user: User, request: GpuRequest) -> list[dict[str, object]]:
    """The request's extensions, newest first, each with whether this user may decide it (pending, not their own)."""
    # Newest first (AllocationExtension's order), not joined to the request again: it is the one given.
    extensions = list(request.extensions.select_related("requested_by", "decided_by"))
    return [
        {
            "extension": extension,
            "decide": extension.status == ExtensionStatus.PENDING
            and extension_decide_refusal(user=user, extension=extension) is None,
        }
        for extension in extensions
    ]


def gpu_request_manifests_yaml(*, request: GpuRequest) -> str:
    """The request's last rendered Kubernetes objects as one multi-document YAML ('' before the first render)."""
    if not request.manifests:
        return ""
    # Keyed by the objects' own JSON text (order kept): a re-render is a new key, so nothing is ever stale, and the
    # page and its status refresh do not run PyYAML's pure-Python dump again for the same objects.
    return _manifests_yaml(json.dumps(request.manifests))


@lru_cache(maxsize=256)
def _manifests_yaml(manifests_json: str) -> str:
    return to_yaml(json.loads(manifests_json))


def gpu_request_live_status(*, request: GpuRequest) -> dict[str, object]:
    """What the cluster last said about a request, the causes and fixes of a stuck workload, and whether to poll."""
    phase = request.observed_phase
    hints = troubleshoot(request.status_detail, phase=phase)
    waiting = phase == "Pending" and request.status == "active"
    return {
        "status": request.status,
        "status_display": request.get_status_display(),
        "observed_phase": phase,
        "observed_at": request.observed_at,
        "status_detail": request.status_detail,
        "hints": hints,
        "manifests_rendered_at": request.manifests_rendered_at,
        "manifest_count": len(request.manifests or []),
        "polling": request.status in POLLING_STATUSES or waiting,
    }
