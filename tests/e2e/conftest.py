"""Headless Chromium (Debian's, driven by Playwright) against pytest-django's live server, seeded with the demo org.

Playwright's sync API runs an asyncio loop in the test thread, so Django's async-safety check must be relaxed for the
ORM calls the tests make (DJANGO_ALLOW_ASYNC_UNSAFE). Tests are marked ``e2e``: tests/conftest.py skips them where
Chromium or Playwright is missing, and fails them under REQUIRE_SERVICES=1.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from playwright.sync_api import Browser, Page

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-quic",
]


@pytest.fixture(scope="session", autouse=True)
def _allow_orm_inside_playwrights_loop() -> Iterator[None]:
    # Set from the first browser test on (the browser's loop lives for the session), not at import time, so tests
    # that run before (and the subprocesses they start) keep Django's async-safety check.
    previous = os.environ.get("DJANGO_ALLOW_ASYNC_UNSAFE")
    os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"
    yield
    if previous is None:
        os.environ.pop("DJANGO_ALLOW_ASYNC_UNSAFE", None)
    else:
        os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = previous


@pytest.fixture(scope="session")
def browser() -> Iterator[Browser]:
    """One headless Chromium for the session (each test gets its own context: fresh cookies and storage)."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        yield browser
        browser.close()


@pytest.fixture
def demo(live_server, settings) -> str:
    """The demo organisation (seed_demo) in the live server's database; returns the server's base URL."""
    from django.core.management import call_command
    from django.test import override_settings

    # Without the month of usage and closed reports: each test adds the history it checks (and it is faster).
    with override_settings(DEBUG=True):
        call_command("seed_demo", "--no-usage", verbosity=0)
    return live_server.url


@pytest.fixture
def new_page(browser: Browser, demo: str):
    """A factory of pages, each in a fresh browser context, signed in as the given demo user.

    Every page records what the Content-Security-Policy blocked; any violation fails the test at teardown, so each
    browser test also proves the pages it visits run under the policy (scripts from our static files only).
    """
    contexts = []
    violations: list[str] = []

    def open_as(username: str) -> Page:
        context = browser.new_context(base_url=demo, viewport={"width": 1400, "height": 1000})
        context.set_default_timeout(10_000)
        contexts.append(context)
        page = context.new_page()
        page.on(
            "console",
            lambda message: violations.append(message.text) if "Content Security Policy" in message.text else None,
        )
        page.goto("/accounts/login/")
        page.fill("#id_username", username)
        page.fill("#id_password", "demo")
        page.click("button[type=submit]")
        page.wait_for_url(f"{demo}/")
        return page

    yield open_as
    for context in contexts:
        context.close()
    _wait_for_the_servers_queries()
    assert violations == [], "the Content-Security-Policy blocked something"


def _wait_for_the_servers_queries(timeout_s: float = 15.0) -> None:
    """Wait until no other connection runs a statement in the test database.

    A closed page can leave the live server answering its last fetch; the flush after the test truncates every
    table, and a join still reading two of them deadlocks with it (PostgreSQL then kills the flush).
    """
    from django.db import connection

    if connection.vendor != "postgresql":
        return
    deadline = time.monotonic() + timeout_s
    with connection.cursor() as cursor:
        while time.monotonic() < deadline:
            cursor.execute(
                "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()"
                " AND state IN ('active', 'idle in transaction')"
            )
            if cursor.fetchone()[0] == 0:
                return
            time.sleep(0.05)
