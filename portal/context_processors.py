"""Values every page template needs."""

from django.conf import settings
from django.http import HttpRequest
from django.urls import get_script_prefix, get_urlconf, reverse

from allocations.selectors import user_is_approver

# The header's links (base.html), by the name the template reads them under.
NAV_URL_NAMES = {
    "home": "home",
    "request_new": "allocations:request-new",
    "request_list": "allocations:request-list",
    "approvals": "allocations:approvals",
    "cluster_list": "allocations:cluster-list",
    "utilization": "billing:utilization",
    "team_list": "allocations:team-list",
    "dashboard": "billing:dashboard",
    "report_list": "billing:report-list",
    "search": "allocations:search",
    "api_docs": "api-docs",
    "tokens": "tokens:list",
    "audit": "audit:event-list",
    "admin": "admin:index",
    "logout": "logout",
}
# Reversed once per URL configuration and script prefix: 15 {% url %} tags cost a third of rendering the header on
# every page (issue #15); the URLs change only with the code or the prefix the server is mounted under.
_nav_urls: dict[tuple[object, str], dict[str, str]] = {}


def nav_urls() -> dict[str, str]:
    """The header's links, as ``reverse`` gives them under the current URL configuration and script prefix."""
    key = (get_urlconf(), get_script_prefix())
    urls = _nav_urls.get(key)
    if urls is None:
        urls = _nav_urls[key] = {name: reverse(view) for name, view in NAV_URL_NAMES.items()}
    return urls


def portal(request: HttpRequest) -> dict[str, object]:
    """Whether tasks run in-process (no broker), the user's approver flag and the header's links, for base.html."""
    user = getattr(request, "user", None)
    return {
        "tasks_run_eagerly": bool(settings.CELERY_TASK_ALWAYS_EAGER),
        "user_is_approver": bool(user and user.is_authenticated and user_is_approver(user)),
        "portal_currency": settings.PORTAL_CURRENCY,
        "nav": nav_urls(),
    }
