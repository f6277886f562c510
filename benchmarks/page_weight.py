"""Dashboards page weight: bytes Chromium transfers for a cold load of /billing/dashboards/ under production's
static files (WhiteNoise's compressed manifest storage after ``collectstatic``, DEBUG off).

A fresh browser context (empty cache) signed in by a session cookie opens the page and waits for the network to
go quiet; the script sums what each response put on the wire (headers + encoded body, Playwright's
``request.sizes()``) and, beside it, the decoded bodies. ``--runs`` loads, printed as min/median/max. Target:
<= 1.5 MB transferred. No assertion.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/gpu_portal .venv/bin/python benchmarks/page_weight.py
"""

from __future__ import annotations

import argparse
import os
import sys
import threading
from datetime import UTC, datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.bench_cost_data import build, setup_django, spread
from benchmarks.bench_results import AT_MOST, Target, record

CHROMIUM = "/usr/bin/chromium"
ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
        "--disable-sync", "--no-first-run", "--disable-quic"]  # fmt: skip
MB = 1_000_000


def _serve() -> tuple[object, str]:
    from django.core.servers.basehttp import ThreadedWSGIServer, WSGIRequestHandler
    from django.core.wsgi import get_wsgi_application

    class Quiet(WSGIRequestHandler):
        def log_message(self, *args: object) -> None:
            pass

    server = ThreadedWSGIServer(("127.0.0.1", 0), Quiet)
    server.set_app(get_wsgi_application())
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_port}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    os.environ["DJANGO_SETTINGS_MODULE"] = "benchmarks.bench_page_settings"
    setup_django("page_weight")
    from django.conf import settings
    from django.contrib.auth.models import User
    from django.core.management import call_command
    from django.db import connection
    from django.test import Client
    from playwright.sync_api import sync_playwright

    call_command("collectstatic", interactive=False, verbosity=0, clear=True)
    build(gpus=16, start=datetime(2026, 9, 1, tzinfo=UTC), end=datetime(2026, 11, 1, tzinfo=UTC), team_count=5,
          closed_months=[])  # fmt: skip
    client = Client()
    client.force_login(User.objects.get(username="bench"))
    session = client.cookies[settings.SESSION_COOKIE_NAME].value
    server, base = _serve()
    transferred, decoded = [], []
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=ARGS, headless=True)
        for _ in range(args.runs):
            context = browser.new_context(base_url=base)
            context.add_cookies([{"name": settings.SESSION_COOKIE_NAME, "value": session, "url": base}])
            page = context.new_page()
            finished = []
            page.on("requestfinished", lambda request, into=finished: into.append(request))
            response = page.goto("/billing/dashboards/?month=2026-10", wait_until="networkidle")
            assert response is not None and response.status == 200, response and response.status
            page.wait_for_selector("#chart-cost-over-time .main-svg")
            wire = body = 0
            for request in finished:
                sizes = request.sizes()
                wire += sizes["responseHeadersSize"] + sizes["responseBodySize"]
                got = request.response()
                body += len(got.body()) if got is not None else 0
            transferred.append(wire / MB)
            decoded.append(body / MB)
            listing = sorted(
                ((r.sizes()["responseBodySize"], r.url.replace(base, "")) for r in finished), reverse=True
            )[:4]
            context.close()
        browser.close()
    server.shutdown()
    print(f"database: {connection.vendor}; {os.cpu_count()} cores; {len(finished)} responses for the page")
    print("largest (encoded bytes): " + ", ".join(f"{path.split('?')[0]} {size:,}" for size, path in listing))
    print(f"dashboards page, transferred MB (min/median/max; target <= 1.5): {spread(transferred, '{:.3f}')}")
    print(f"dashboards page, decoded MB (min/median/max):                    {spread(decoded, '{:.3f}')}")
    record(
        "page_weight",
        "dashboards page, transferred (Chromium, cold)",
        transferred,
        Target(AT_MOST, 1.5),
        unit="MB",
        detail=f"{spread(decoded, '{:.2f}')} MB decoded",
    )
    connection.close()
    connection.creation.destroy_test_db(connection.settings_dict["NAME"], verbosity=0)


if __name__ == "__main__":
    main()
