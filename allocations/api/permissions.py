"""Who may call the allocations API at all; who may do what to a request is the services' rule, not the view's.

The object rules (approvers approve, never their own request; the requester or a team lead cancels and releases;
only members submit) live in ``allocations.requests.services`` so the browser, a notebook, the admin and a task
retry obey the same ones; visibility comes from the selectors (``gpu_requests_visible_to``), so other teams' objects
are 404.
"""

from __future__ import annotations

from typing import Any

from rest_framework.permissions import BasePermission
from rest_framework.request import Request


class IsActivePortalUser(BasePermission):
    """An authenticated, active user (by token or session); anonymous callers get 401/403."""

    def has_permission(self, request: Request, view: Any) -> bool:
        user = request.user
        return bool(user and user.is_authenticated and user.is_active)
