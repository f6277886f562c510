"""No API route answers 500 to a format suffix (``/requests/{id}/events.json``, ``/manifests.yaml``, ``/teams.json``).

Every route pattern under /api/v1/ is walked from the URL resolver, filled with real objects' keys, and asked for
with ``.json``, ``.yaml`` and ``.api`` appended, by GET and POST, as a platform admin: the answer is a client error
(404, or 405 for a method the route lacks: the API has no format suffixes, clients choose the format with the Accept
header or ``?format=``), never a 500.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest
from django.urls import URLPattern, URLResolver, get_resolver
from rest_framework.test import APIClient

from allocations.requests.services import gpu_request_submit

pytestmark = pytest.mark.django_db

SUFFIXES = (".json", ".yaml", ".api")
_GROUP = re.compile(r"\(\?P<(\w+)>[^)]*\)|<(?:\w+:)?(\w+)>")


def _api_patterns(resolver: URLResolver | None = None, prefix: str = "") -> Iterator[str]:
    for entry in (resolver or get_resolver()).url_patterns:
        pattern = prefix + str(entry.pattern).replace("^", "").replace("$", "")
        if isinstance(entry, URLResolver):
            yield from _api_patterns(entry, pattern)
        elif isinstance(entry, URLPattern) and pattern.startswith("api/v1/") and "format" not in pattern:
            yield pattern


def _filled(pattern: str, values: dict[str, str]) -> str:
    return "/" + _GROUP.sub(lambda m: values[m.group(1) or m.group(2)], pattern).replace("\\.", ".")


def test_every_api_route_refuses_a_format_suffix_without_a_500(demo_org) -> None:
    request = gpu_request_submit(
        command=["python", "main.py"],
        acting_user=demo_org.member,
        team=demo_org.team,
        name="suffix",
        profile_data={"workload_type": "training", "gpu_memory_gb": 40},
    )
    values = {"pk": str(request.pk), "name": "demo", "cluster_name": "demo", "pool": "h100", "slug": "vision"}
    client = APIClient()
    client.raise_request_exception = False  # count the 500s instead of stopping at the first
    client.force_authenticate(demo_org.platform_admin)
    patterns = sorted(set(_api_patterns()))
    answers: dict[str, int] = {}
    for pattern in patterns:
        path = _filled(pattern, values)
        # A route that serves its own path answers 2xx/4xx (not 5xx) without a suffix, so the probe reaches it.
        for suffix in SUFFIXES:
            for probe in (path.rstrip("/") + suffix, path.rstrip("/") + suffix + "/"):
                for method in (client.get, client.post):
                    answers[f"{method.__name__.upper()} {probe}"] = method(probe, {}, format="json").status_code
    errors = {probe: code for probe, code in answers.items() if code >= 500}
    print(f"\n{len(patterns)} API route patterns, {len(answers)} suffixed probes, {len(errors)} answered 5xx")
    assert len(patterns) >= 25
    assert errors == {}
    # 301: APPEND_SLASH sends `.../5.json` to `.../5.json/`, which names no object (404 there).
    assert set(answers.values()) <= {301, 404, 405}, sorted(set(answers.values()))
