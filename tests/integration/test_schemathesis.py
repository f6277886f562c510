"""The API against its own OpenAPI schema: generated requests never get a 5xx, and every response matches the schema.

Schemathesis reads ``/api/schema/`` from the WSGI app and calls it in-process, authenticated with a member's token,
over the demo organisation with a few requests submitted through the service. Examples are kept few (``MAX_EXAMPLES``
per operation) so the run stays well under a minute.
"""

from __future__ import annotations

import pytest
import schemathesis
from django.core import signals
from django.core.handlers.wsgi import WSGIHandler
from django.db import close_old_connections
from hypothesis import HealthCheck, settings
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from allocations.requests.services import gpu_request_approve, gpu_request_submit
from tests.factories import api_key_for, build_demo_org

MAX_EXAMPLES = 15
CHECKS = [not_a_server_error, status_code_conformance, content_type_conformance, response_schema_conformance]


@pytest.fixture
def keep_test_connection():
    """Keep the test's database connection open across WSGI calls, as Django's own test client does.

    A real WSGI request ends with ``close_old_connections``, which would close the connection that holds the test's
    transaction (on PostgreSQL; SQLite's in-memory database ignores it).
    """
    signals.request_started.disconnect(close_old_connections)
    signals.request_finished.disconnect(close_old_connections)
    yield
    signals.request_started.connect(close_old_connections)
    signals.request_finished.connect(close_old_connections)


@pytest.fixture
def member_token(db, keep_test_connection) -> str:
    """A member's API token, over the demo organisation with a pending and an approved request."""
    org = build_demo_org()
    profile = {"workload_type": "training", "gpu_memory_gb": 40}
    gpu_request_submit(
        command=["python", "main.py"], acting_user=org.member, team=org.team, name="pending", profile_data=profile
    )
    approved = gpu_request_submit(
        command=["python", "main.py"], acting_user=org.member, team=org.team, name="approved", profile_data=profile
    )
    gpu_request_approve(request=approved, acting_user=org.approver)
    return api_key_for(user=org.member).key


# Loaded at collection (serving the schema touches no database). ``schemathesis.pytest.from_fixture`` would defer it,
# but schemathesis 4.32 sets ``node._nodeid``, which pytest 9 no longer has.
schema = schemathesis.openapi.from_wsgi("/api/schema/", WSGIHandler())


@schema.parametrize()
@settings(
    max_examples=MAX_EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow, HealthCheck.filter_too_much],
)
def test_api_conforms_to_its_schema(case, member_token):
    case.call_and_validate(headers={"Authorization": f"Token {member_token}"}, checks=CHECKS)
