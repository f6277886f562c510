"""The API against its own OpenAPI schema: the schema says what the API accepts, and the API refuses the rest.

Schemathesis reads ``/api/schema/`` from the WSGI app and calls it in-process, authenticated with a member's token,
over the demo organisation with a few requests submitted through the service. Besides no 5xx and responses that
match their documented status, content type and shape, a schema-valid request must not be refused
(``positive_data_acceptance``) and a schema-invalid one must not be accepted (``negative_data_rejection``).
Examples are few (``MAX_EXAMPLES`` per operation) and derandomized, so every run sends the same requests and a
finding reproduces.
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
    negative_data_rejection,
    positive_data_acceptance,
    response_schema_conformance,
    status_code_conformance,
)

from allocations.requests.services import gpu_request_approve, gpu_request_submit
from tests.factories import api_key_for, build_demo_org

MAX_EXAMPLES = 15
CHECKS = [
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_schema_conformance,
    positive_data_acceptance,
    negative_data_rejection,
]


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
# A NUL character is refused in any string, a property name included (docs/security.md); OpenAPI 3.0's JSON Schema
# cannot say so of property names, so positive examples leave NUL out.
schema.config.generation.update(allow_x00=False)
# Well formed but not servable (a team that is not yours, a profile no pool holds) is a documented 422
# (portal.api_errors), not a refusal of the input's form.
schema.config.checks.positive_data_acceptance.expected_statuses = [
    *schema.config.checks.positive_data_acceptance.expected_statuses,
    "422",
]


@schema.parametrize()
@settings(
    max_examples=MAX_EXAMPLES,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow, HealthCheck.filter_too_much],
)
def test_api_conforms_to_its_schema(case, member_token):
    # identity: the in-process WSGI client does not undo GZipMiddleware's compression, as an HTTP client would.
    headers = {"Authorization": f"Token {member_token}", "Accept-Encoding": "identity"}
    case.call_and_validate(headers=headers, checks=CHECKS)
