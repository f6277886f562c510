"""Values every page template needs."""

from django.conf import settings
from django.http import HttpRequest

from allocations.selectors import user_is_approver


def portal(request: HttpRequest) -> dict[str, object]:
    """Whether tasks run in-process (no broker) and the user's approver flag, for base.html."""
    user = getattr(request, "user", None)
    return {
        "tasks_run_eagerly": bool(settings.CELERY_TASK_ALWAYS_EAGER),
        "user_is_approver": bool(user and user.is_authenticated and user_is_approver(user)),
        "portal_currency": settings.PORTAL_CURRENCY,
    }
