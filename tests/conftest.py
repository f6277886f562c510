"""Shared fixtures, the service gate for integration tests, and the end-of-run report of what was skipped."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import pytest

from tests.services import BRING_UP_COMMAND, REQUIRE_SERVICES, SERVICE_CHECKS, SKIP_PREFIX


def pytest_runtest_setup(item: pytest.Item) -> None:
    for marker, check in SERVICE_CHECKS.items():
        if item.get_closest_marker(marker) is None:
            continue
        problem = check()
        if problem is None:
            continue
        if REQUIRE_SERVICES:
            pytest.fail(f"REQUIRE_SERVICES=1 but this test {SKIP_PREFIX} {problem}", pytrace=False)
        pytest.skip(f"{SKIP_PREFIX} {problem}")


def _is_transactional(item: pytest.Item) -> bool:
    marker = item.get_closest_marker("django_db")
    fixtures = getattr(item, "fixturenames", ())
    return bool(marker is not None and marker.kwargs.get("transaction")) or any(
        name in fixtures for name in ("transactional_db", "live_server")
    )


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Under pytest-xdist (`make test`), every transactional test runs in one process, in the order a one-process run
    gives them: each ends with a flush, and a test restoring a serialized database must not follow another kind of
    flush in the same database. The other processes share the rest of the suite."""
    for item in items:
        if _is_transactional(item):
            # The Chromium tests get a process of their own, beside the other transactional tests: the two groups are
            # the slowest part of the suite and run in parallel this way.
            group = "e2e" if item.get_closest_marker("e2e") else "transactional"
            item.add_marker(pytest.mark.xdist_group(group))


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    _report_figures(terminalreporter)
    _report_missing_services(terminalreporter)


def _report_figures(terminalreporter: pytest.TerminalReporter) -> None:
    """The figures the failure tests measured (``record_property("figure", ...)``), shown in every run's log: CI
    runs without ``-s``, so a passing test's print would be hidden (xdist carries the properties back too)."""
    figures = [
        (report.nodeid, value)
        for outcome in ("passed", "failed")
        for report in terminalreporter.stats.get(outcome, [])
        if getattr(report, "when", "") == "call"
        for name, value in getattr(report, "user_properties", ())
        if name == "figure"
    ]
    if not figures:
        return
    terminalreporter.section("figures measured by the failure tests")
    for nodeid, value in figures:
        terminalreporter.write_line(f"{nodeid}:\n  {value}")


def _report_missing_services(terminalreporter: pytest.TerminalReporter) -> None:
    skipped = [
        report
        for report in terminalreporter.stats.get("skipped", [])
        if isinstance(report.longrepr, tuple) and SKIP_PREFIX in str(report.longrepr[2])
    ]
    if not skipped:
        return
    terminalreporter.section("integration tests skipped: services missing")
    for report in skipped:
        terminalreporter.write_line(f"  {report.nodeid}: {report.longrepr[2].replace('Skipped: ', '')}")
    terminalreporter.write_line("")
    terminalreporter.write_line(f"Bring PostgreSQL and Redis up with:  {BRING_UP_COMMAND}")
    terminalreporter.write_line(
        "then: DATABASE_URL=postgres://portal:portal@127.0.0.1:5432/gpu_portal "
        "CELERY_BROKER_URL=redis://127.0.0.1:6379/15 make test   (Prometheus, Chromium, the font: docs/testing.md)"
    )


@pytest.fixture(autouse=True)
def _fresh_cache() -> None:
    """Each test starts with an empty cache: a rolled-back test must not leave throttle counters or the catalog
    version token (infra.reference_cache) of rows that no longer exist."""
    from django.conf import settings

    if not settings.configured:  # the pure core's tests run without Django (make test-core)
        return
    from django.core.cache import cache

    cache.clear()


@pytest.fixture(autouse=True)
def _reference_data_after_flush(request: pytest.FixtureRequest) -> None:
    """Transactional tests flush every table, including the rows the data migrations seeded; put them back.

    pytest-django runs ordinary tests before transactional ones; `make test` keeps that order in every xdist process
    (`--dist load` hands each process its tests in collection order), so no ordinary test runs after a flush.
    """
    marker = request.node.get_closest_marker("django_db")
    transactional = (marker is not None and marker.kwargs.get("transaction")) or any(
        name in request.fixturenames for name in ("transactional_db", "live_server")
    )
    if not transactional:
        return
    request.getfixturevalue("transactional_db")
    import importlib

    from django.apps import apps

    for module, functions in _DATA_MIGRATIONS:
        migration = importlib.import_module(module)
        for function in functions:
            getattr(migration, function)(apps, None)


# Every data migration's forward functions, in migration order: what a flushed database must get back.
_DATA_MIGRATIONS = (
    (
        "allocations.migrations.0002_seed_tiers_catalog_approvers",
        ("seed_tiers", "seed_catalog", "seed_approvers_group"),
    ),
    ("allocations.migrations.0006_catalog_price_sources_and_throughput", ("seed_price_sources",)),
    ("billing.migrations.0002_cost_price_books_reports", ("seed_finance_group",)),
    ("billing.migrations.0007_usage_aggregates", ("backfill_usage_aggregates",)),
    ("billing.migrations.0011_finance_reads_teams_and_requests", ("grant_finance_reads",)),
    ("billing.migrations.0013_usage_totals_peak_memory", ("backfill_peak_memory",)),
    ("billing.migrations.0016_day_charge_groups", ("sum_stored_days",)),
)
# Migrations whose RunPython moves live rows between tables (the sessions, into a table of their own and back; DRF's
# plain keys into hashed tokens) or converts a table in place (the hourly rollups into monthly partitions): a
# flushed database has none to move and its tables are already converted, so they are not replayed.
_ROW_MOVES = (
    "portal.migrations.0002_user_session",
    "portal.migrations.0003_sessions_back_to_django",
    "portal.tokens.migrations.0002_migrate_legacy_keys",
    "billing.migrations.0012_partition_hourly_tables_by_month",
)


if TYPE_CHECKING:
    from rest_framework.test import APIClient

    from tests.factories import DemoOrg
    from tests.oidc import OidcProvider


# Django is imported inside fixtures so the pure-core tests also run without it (`pytest -p no:django`).
@pytest.fixture
def api_client() -> APIClient:
    from rest_framework.test import APIClient

    return APIClient()


@pytest.fixture
def demo_org(db) -> DemoOrg:
    """Two teams with a member, a lead and an outsider, an approver and a platform admin, on one cluster."""
    from tests.factories import build_demo_org

    return build_demo_org()


@pytest.fixture(scope="session")
def oidc_provider() -> Iterator[OidcProvider]:
    """A real OpenID Connect provider on loopback for the whole run (tests/oidc.py)."""
    from tests.oidc import running_provider

    with running_provider() as provider:
        yield provider


@pytest.fixture
def sso(oidc_provider: OidcProvider, settings: Any, monkeypatch: pytest.MonkeyPatch) -> OidcProvider:
    """Single sign-on switched on against the test provider, the client secret given by reference."""
    from tests.oidc import CLIENT_SECRET, SECRET_VARIABLE

    monkeypatch.setenv(SECRET_VARIABLE, CLIENT_SECRET)
    for name, value in oidc_provider.settings().items():
        setattr(settings, name, value)
    # The settings allow the issuer's origin as a form target when OIDC_ISSUER comes from the environment; here it
    # is set after start-up, so the policy is given the same way.
    import copy
    from urllib.parse import urlsplit

    issuer = urlsplit(oidc_provider.url)
    policy = copy.deepcopy(settings.CONTENT_SECURITY_POLICY)
    policy["DIRECTIVES"]["form-action"] = ["'self'", f"{issuer.scheme}://{issuer.netloc}"]
    settings.CONTENT_SECURITY_POLICY = policy
    return oidc_provider
