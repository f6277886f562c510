"""The tokens page's notebook snippet, copied right after creating a token, runs as pasted in a plain Python process
against a live portal: the user's own team, the new key, no edits."""

from __future__ import annotations

import html
import os
import subprocess
import sys
from urllib.parse import urlsplit

import pytest
from django.test import Client

from tests.factories import build_demo_org


@pytest.mark.integration
@pytest.mark.django_db(transaction=True)
def test_the_snippet_runs_as_pasted(live_server) -> None:
    org = build_demo_org()
    address = urlsplit(live_server.url)
    browser = Client(HTTP_HOST=address.netloc)
    browser.force_login(org.member)

    page = browser.post("/account/tokens/", {"name": "notebook", "expires_in_days": "7"}, follow=True)

    snippet = html.unescape(page.content.decode().split('<code id="snippet">', 1)[1].split("</code>", 1)[0])
    assert 'TEAM = "vision"' in snippet and f'API = "{live_server.url}/api/v1/"' in snippet
    env = {key: value for key, value in os.environ.items() if key != "GPU_PORTAL_TOKEN"}
    result = subprocess.run(
        [sys.executable, "-c", snippet], capture_output=True, text=True, timeout=120, check=False, env=env
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "nvidia.com/gpu 0 of 8 used" in result.stdout
    assert "0 requests in vision" in result.stdout
