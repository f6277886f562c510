"""HTML pages are compressed for clients that accept gzip, and sent as they are to those that do not."""

from __future__ import annotations

import gzip

import pytest
from django.test import Client

pytestmark = pytest.mark.django_db


def test_a_page_is_gzipped_when_the_client_accepts_it(demo_org) -> None:
    client = Client()
    client.force_login(demo_org.platform_admin)
    plain = client.get("/")
    packed = client.get("/", headers={"accept-encoding": "gzip, deflate, br"})
    assert plain.status_code == packed.status_code == 200
    assert "Content-Encoding" not in plain.headers
    assert packed.headers["Content-Encoding"] == "gzip" and "Accept-Encoding" in packed.headers["Vary"]
    body = gzip.decompress(packed.content)
    assert body.startswith(b"<!DOCTYPE html") or b"<html" in body[:500]
    assert len(packed.content) < len(body) / 2
