"""The header's links (portal.context_processors.nav_urls) are reverse()'s, under whatever prefix the server is
mounted: they are reversed once per URL configuration and script prefix, not on every page."""

from __future__ import annotations

import re

import pytest
from django.test import Client
from django.urls import reverse, set_script_prefix

from portal.context_processors import NAV_URL_NAMES

pytestmark = pytest.mark.django_db


def header_links(html: str) -> set[str]:
    header = html.partition("<header")[2].partition("</header>")[0]
    return set(re.findall(r'(?:href|action)="([^"]+)"', header)) - {
        h for h in re.findall(r'href="([^"]+)"', header) if h.startswith("/static/")
    }


def test_the_header_links_are_reverses_under_each_script_prefix(demo_org) -> None:
    client = Client()
    client.force_login(demo_org.platform_admin)
    plain = header_links(client.get("/").content.decode())
    expected = {reverse(view) for view in NAV_URL_NAMES.values()}
    assert expected - {reverse("audit:event-list")} <= plain <= expected  # the audit link needs its permission

    # A server mounted under /portal (the WSGI handler sets the prefix from SCRIPT_NAME; the test client does not).
    set_script_prefix("/portal/")
    try:
        mounted = header_links(client.get("/").content.decode())
    finally:
        set_script_prefix("/")
    assert mounted == {f"/portal{url}" for url in plain}
    assert header_links(client.get("/").content.decode()) == plain
