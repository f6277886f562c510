"""What the header's search finds: requests, teams and clusters the user may see."""

from __future__ import annotations

from django.db.models import Q

from allocations.selectors import User, clusters_visible_to, gpu_requests_visible_to, teams_visible_to

SEARCH_LIMIT = 20


def global_search(*, user: User, query: str) -> dict[str, object]:
    """The header's search: requests by name or id (``42`` or ``#42``), teams by name or slug, clusters by name,
    each drawn only from what the user may see (the same selectors as the lists: no other team's request)."""
    query = query.strip()
    if not query:
        return {"query": "", "requests": [], "teams": [], "clusters": []}
    request_match = Q(name__icontains=query)
    number = query.removeprefix("#")
    if number.isdigit() and len(number) < 10:
        request_match |= Q(pk=int(number))
    requests = gpu_requests_visible_to(user=user).filter(request_match).order_by("-created_at", "-id")
    teams = teams_visible_to(user).filter(Q(name__icontains=query) | Q(slug__icontains=query)).order_by("name")
    clusters = clusters_visible_to(user=user).filter(name__icontains=query).order_by("name")
    return {
        "query": query,
        "requests": list(requests[:SEARCH_LIMIT]),
        "teams": list(teams[:SEARCH_LIMIT]),
        "clusters": list(clusters[:SEARCH_LIMIT]),
    }
