"""The header's links are reverse()'s, under whatever prefix the server is mounted."""

from __future__ import annotations

import re

import pytest
from django.test import Client
from django.urls import reverse, set_script_prefix

pytestmark = pytest.mark.django_db

HEADER_VIEWS = [
    "home",
    "allocations:request-new",
    "allocations:request-list",
    "allocations:approvals",
    "allocations:cluster-list",
    "billing:utilization",
    "allocations:team-list",
    "billing:dashboard",
    "billing:report-list",
    "allocations:search",
    "api-docs",
    "tokens:list",
    "audit:event-list",
    "admin:index",
    "logout",
]


def header_links(html: str) -> set[str]:
    header = html.partition("<header")[2].partition("</header>")[0]
    return set(re.findall(r'(?:href|action)="([^"]+)"', header)) - {
        h for h in re.findall(r'href="([^"]+)"', header) if h.startswith("/static/")
    }


def test_the_header_links_are_reverses_under_each_script_prefix(demo_org) -> None:
    client = Client()
    client.force_login(demo_org.platform_admin)
    plain = header_links(client.get("/").content.decode())
    expected = {reverse(view) for view in HEADER_VIEWS}
    assert expected - {reverse("audit:event-list")} <= plain <= expected  # the audit link needs its permission

    # A server mounted under /portal (the WSGI handler sets the prefix from SCRIPT_NAME; the test client does not).
    set_script_prefix("/portal/")
    try:
        mounted = header_links(client.get("/").content.decode())
    finally:
        set_script_prefix("/")
    assert mounted == {f"/portal{url}" for url in plain}
    assert header_links(client.get("/").content.decode()) == plain
