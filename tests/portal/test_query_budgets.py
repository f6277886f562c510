"""Query budgets (netbox keeps such a baseline): the SQL queries each busy page makes, reviewed in one JSON file.

``tests/query_budgets.json`` holds, per page, the number of queries it makes over the demo organisation. A page that
goes over its budget fails, and so does a page whose count grows with its rows (1 and 20 rows must cost the same): a
loop that queries per row is caught here before production data finds it. Lowering a budget is a reviewed edit of
the JSON; raising one should come with the reason in the commit.
"""

from __future__ import annotations

import json
import uuid
from datetime import timedelta
from pathlib import Path

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from allocations.models import GpuRequest, RequestStatus
from audit.services import audit_record
from portal.tokens.services import api_token_create
from tests.billing.cost_helpers import held_request, load_book, rollup
from tests.factories import ClusterFactory, DemoOrg, GpuRequestFactory, NodePoolFactory

pytestmark = pytest.mark.django_db

BUDGETS = json.loads((Path(__file__).parent.parent / "query_budgets.json").read_text(encoding="utf-8"))
# page: (URL, who looks at it)
PAGES = {
    "home": ("/", "member"),
    "home_lead": ("/", "team_lead"),
    "home_approver": ("/", "approver"),
    "team_page": ("/teams/vision/", "member"),
    "team_page_lead": ("/teams/vision/", "team_lead"),  # with the lead's member controls
    "team_list": ("/teams/", "approver"),
    # {request}: the team's first running request (its pods, address, commands, expiry and clone parts).
    "request_detail": ("/requests/{request}/", "member"),
    "team_budget": ("/billing/teams/vision/budget/", "team_lead"),
    "approval_queue": ("/approvals/", "approver"),
    "dashboards": ("/billing/dashboards/", "approver"),
    "utilization": ("/billing/utilization/", "approver"),
    "request_list_api": ("/api/v1/requests/", "member"),
    # Every other list and page (issue #15): the same rule, one budget each.
    "request_list": ("/requests/", "member"),
    "request_detail_api": ("/api/v1/requests/{request}/", "member"),
    "teams_api": ("/api/v1/teams/", "member"),
    "extensions_api": ("/api/v1/extensions/", "member"),
    "cluster_list": ("/clusters/", "platform_admin"),
    "clusters_api": ("/api/v1/clusters/", "platform_admin"),
    "tokens": ("/account/tokens/", "member"),
    "tokens_api": ("/api/v1/tokens/", "member"),
    "audit": ("/audit/", "platform_admin"),
    "audit_api": ("/api/v1/audit-events/", "platform_admin"),
}


def add_rows(org: DemoOrg, count: int) -> None:
    """``count`` more of everything a page lists: pending requests, running allocations with an hour of usage, API
    tokens, audit events and clusters with a pool."""
    now = timezone.now()
    start = max(now.replace(day=1, hour=0, minute=0, second=0, microsecond=0), now - timedelta(hours=2))
    for _ in range(count):
        api_token_create(acting_user=org.member, name=f"notebook {uuid.uuid4().hex[:8]}", expires_in_days=30)
        cluster = ClusterFactory()
        NodePoolFactory(cluster=cluster)
        audit_record(actor=org.platform_admin, obj=cluster, before=None)
        GpuRequestFactory(team=org.team, requester=org.member, status=RequestStatus.PENDING_APPROVAL, submitted_at=now)
        running = held_request(team=org.team, start=start, end=None, node_pool=org.pool)
        running.cluster = org.cluster
        running.requester = org.member
        running.save(update_fields=["cluster", "requester"])
        rollup(cluster=org.cluster, hour=start, request=running, util=50.0, gpu=f"GPU-{running.pk}")


def queries(client: Client, url: str) -> int:
    client.get(url)  # warm: the session, the user's permissions, the price book and catalog caches of a request
    with CaptureQueriesContext(connection) as captured:
        response = client.get(url)
    assert response.status_code == 200, (url, response.status_code)
    return len(captured)


@pytest.mark.parametrize("page", sorted(PAGES))
def test_each_page_stays_within_its_budget_and_does_not_grow_with_rows(demo_org: DemoOrg, page: str) -> None:
    url, role = PAGES[page]
    load_book({"H100-80GB": "2.00"})
    client = Client()
    client.force_login(demo_org.user(role))

    add_rows(demo_org, 1)
    running = GpuRequest.objects.filter(team=demo_org.team, status=RequestStatus.ACTIVE).order_by("pk").first()
    url = url.format(request=running.pk)
    with_one = queries(client, url)
    add_rows(demo_org, 19)
    with_twenty = queries(client, url)

    print(f"{page}: {with_one} queries with 1 row, {with_twenty} with 20")
    assert with_twenty == with_one, f"{page} makes more queries with more rows: {with_one} -> {with_twenty}"
    assert with_one <= BUDGETS[page], f"{page} makes {with_one} queries; its budget is {BUDGETS[page]}"


def test_every_page_has_a_budget_and_every_budget_a_page() -> None:
    assert set(BUDGETS) - {"_comment"} == set(PAGES)
