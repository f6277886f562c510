"""Query budgets (netbox keeps such a baseline): the SQL queries each list and page makes, reviewed in one JSON file.

``tests/query_budgets.json`` holds, per endpoint, the number of queries it makes over the demo organisation with one
row of everything it lists. An endpoint that goes over its budget fails, and so does one whose count grows with its
rows: with 100 rows it runs under ``django_assert_max_num_queries`` of its one-row count, so a loop that
queries per row is caught here, its queries listed, before production data finds it. Lowering a budget is a reviewed
edit of the JSON; raising one should come with the reason in the commit.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass
from datetime import timedelta
from decimal import Decimal
from pathlib import Path

import pytest
from django.contrib.auth.models import User
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from allocations.models import (
    AllocationExtension,
    Cluster,
    GpuModel,
    GpuRequest,
    Membership,
    MigPlan,
    NodePool,
    Quota,
    QuotaIncreaseRequest,
    RequestEvent,
    RequestStatus,
    RequestTemplate,
    Reservation,
    ReservationStatus,
    Role,
    SharingMode,
    SlaTier,
    Team,
)
from audit.models import AuditEvent
from billing.costs.dashboard_query import MAX_MONTHS
from billing.metering.aggregates import refresh_usage_aggregates
from billing.models import MonthlyReport, ReportStatus, UtilizationRollup
from gpucore.months import add_months
from portal.tokens.models import ApiToken
from tests.billing.cost_helpers import load_book
from tests.factories import DemoOrg, GpuRequestFactory, NodePoolFactory, TeamBudgetFactory

pytestmark = pytest.mark.django_db

BUDGETS = json.loads((Path(__file__).parent.parent / "query_budgets.json").read_text(encoding="utf-8"))
MIG_POOL = "a100-mig"
# endpoint: (URL, who looks at it). {request}: the team's first running request; {month}: this month, YYYY-MM.
PAGES = {
    # Browser pages.
    "home": ("/", "member"),
    "home_lead": ("/", "team_lead"),
    "home_approver": ("/", "approver"),
    "search": ("/search/?q=run", "member"),
    "request_list": ("/requests/", "member"),
    "request_new": ("/requests/new/", "member"),
    # Its pods, address, commands, expiry, clone parts, events and extensions.
    "request_detail": ("/requests/{request}/", "member"),
    "request_status": ("/requests/{request}/status/", "member"),
    "request_workload": ("/requests/{request}/workload/", "member"),  # its pods and events, for the refresh
    "approval_queue": ("/approvals/", "approver"),
    "quotas": ("/quotas/", "approver"),  # with each quota's edit form and the pending increases' cost
    "quotas_member": ("/quotas/", "member"),
    "template_list": ("/templates/", "team_lead"),  # with the Delete the lead may use
    "team_list": ("/teams/", "approver"),
    "team_page": ("/teams/vision/", "member"),
    "team_page_lead": ("/teams/vision/", "team_lead"),  # with the lead's member controls
    "reservation_list": ("/reservations/", "team_lead"),  # with the lead's form and the windows' rows
    "cluster_list": ("/clusters/", "platform_admin"),
    "cluster_detail": ("/clusters/demo/", "platform_admin"),
    "mig_pool": (f"/clusters/demo/pools/{MIG_POOL}/mig/", "platform_admin"),
    "tokens": ("/account/tokens/", "member"),
    "audit": ("/audit/", "platform_admin"),
    "team_budget": ("/billing/teams/vision/budget/", "team_lead"),
    "budget_list": ("/billing/budgets/", "team_lead"),  # with the budgets the lead edits
    "report_list": ("/billing/reports/", "approver"),
    "report_detail": ("/billing/reports/vision/{month}/", "team_lead"),
    "report_csv": ("/billing/reports/vision/{month}.csv", "team_lead"),
    "dashboards": ("/billing/dashboards/", "approver"),
    "dashboard_csv": ("/billing/dashboards/cost-per-request.csv", "approver"),
    "utilization": ("/billing/utilization/", "approver"),  # with its temperature and memory-pressure alerts
    # REST API.
    "request_list_api": ("/api/v1/requests/", "member"),
    "request_detail_api": ("/api/v1/requests/{request}/", "member"),
    "request_events_api": ("/api/v1/requests/{request}/events/", "member"),
    "request_extensions_api": ("/api/v1/requests/{request}/extensions/", "member"),
    "teams_api": ("/api/v1/teams/", "member"),
    "templates_api": ("/api/v1/templates/", "member"),
    "team_detail_api": ("/api/v1/teams/vision/", "member"),
    "team_usage_api": ("/api/v1/teams/vision/usage/?month={month}", "member"),
    "team_budget_api": ("/api/v1/teams/vision/budget/", "team_lead"),
    "extensions_api": ("/api/v1/extensions/", "member"),
    "reservations_api": ("/api/v1/reservations/", "team_lead"),
    "clusters_api": ("/api/v1/clusters/", "platform_admin"),
    "cluster_detail_api": ("/api/v1/clusters/demo/", "platform_admin"),
    "node_pools_api": ("/api/v1/clusters/demo/node-pools/", "platform_admin"),
    "cluster_manifests_api": ("/api/v1/clusters/demo/manifests/", "approver"),
    "mig_plans_api": (f"/api/v1/clusters/demo/node-pools/{MIG_POOL}/mig-plans/", "platform_admin"),
    "reports_api": ("/api/v1/reports/?team=vision", "team_lead"),
    "reports_csv_api": ("/api/v1/reports/?team=vision&format=csv", "team_lead"),
    "price_book_api": ("/api/v1/price-book/", "member"),
    "tokens_api": ("/api/v1/tokens/", "member"),
    "audit_api": ("/api/v1/audit-events/", "platform_admin"),
    "audit_csv_api": ("/api/v1/audit-events/?format=csv", "platform_admin"),
}


@dataclass
class Rows:
    """Adds rows of everything the endpoints list, in bulk (a hundred of each in well under a second)."""

    org: DemoOrg
    mig_pool: NodePool
    added: int = 0

    def add(self, count: int) -> None:
        org, now = self.org, timezone.now()
        hour = max(now.replace(day=1, hour=0, minute=0, second=0, microsecond=0), now - timedelta(hours=2))
        hour = hour.replace(minute=0, second=0, microsecond=0)
        numbers = range(self.added, self.added + count)
        self.added += count
        tier = SlaTier.objects.get(slug="tier2_batch")
        h100 = GpuModel.objects.get(name="H100-80GB")

        # Pending requests (the approval queue), running ones on the demo pool with an hour of usage each.
        pending = GpuRequestFactory.build_batch(
            count, team=org.team, requester=org.member, sla_tier=tier, submitted_at=now
        )
        running = [
            GpuRequestFactory.build(
                team=org.team,
                requester=org.member,
                name=f"run-{n}",
                sla_tier=tier,
                status=RequestStatus.ACTIVE,
                cluster=org.cluster,
                node_pool=org.pool,
                activated_at=hour,
                expires_at=now + timedelta(days=7),
            )
            for n in numbers
        ]
        GpuRequest.objects.bulk_create(pending + running)
        RequestEvent.objects.bulk_create(
            RequestEvent(request=r, actor=org.member, actor_label="member", to_status=r.status)
            for r in pending + running
        )
        AllocationExtension.objects.bulk_create(
            AllocationExtension(request=r, requested_by=org.member, hours=Decimal(24), reason="more epochs")
            for r in running
        )
        UtilizationRollup.objects.bulk_create(
            UtilizationRollup(
                cluster=org.cluster,
                hour=hour,
                gpu_uuid=f"GPU-{r.pk}",
                namespace=org.team.namespace,
                pod=f"gpr-{r.pk}",
                team=org.team,
                request=r,
                gpu_model_name="NVIDIA H100 80GB HBM3",
                hostname=f"node-{n % 2}",
                gpu_index=n % 8,
                sample_count=60,
                avg_utilization_pct=50.0,
                peak_utilization_pct=90.0,
                energy_kwh=0.35,
                max_temperature_c=92.0,  # hot and short of memory: an alert of each kind per GPU
                memory_pressure_minutes=30,
                pulled_at=hour,
            )
            for n, r in zip(numbers, running, strict=True)
        )
        refresh_usage_aggregates(cluster_id=org.cluster.pk, start=hour, end=hour + timedelta(hours=1))
        # The first running request's history grows too (its detail page and events).
        first = GpuRequest.objects.filter(team=org.team, status=RequestStatus.ACTIVE).order_by("pk").first()
        RequestEvent.objects.bulk_create(
            RequestEvent(request=first, actor=org.member, actor_label="member", to_status=first.status, comment=f"{n}")
            for n in numbers
        )

        # Members of the team, other teams with a quota, clusters with a pool, pools of the demo cluster.
        users = User.objects.bulk_create(User(username=f"engineer-{n}") for n in numbers)
        Membership.objects.bulk_create(Membership(user=u, team=org.team, role=Role.MEMBER) for u in users)
        teams = Team.objects.bulk_create(
            Team(slug=f"team-{n}", name=f"Team {n}", namespace=f"team-{n}") for n in numbers
        )
        Quota.objects.bulk_create(Quota(team=t, resource_name="nvidia.com/gpu", limit=4) for t in teams)
        clusters = Cluster.objects.bulk_create(
            Cluster(name=f"cluster-{n}", gitops_path=f"cluster-{n}") for n in numbers
        )
        pools = NodePool.objects.bulk_create(
            [NodePool(cluster=c, name="h100", gpu_model=h100, node_count=2, gpus_per_node=8) for c in clusters]
            + [NodePool(cluster=org.cluster, name=f"pool-{n}", gpu_model=h100, node_count=1) for n in numbers]
        )
        # The team's quotas on the new pools, each with an increase waiting; the team's request templates.
        pool_quotas = Quota.objects.bulk_create(
            Quota(team=org.team, node_pool=pool, resource_name="nvidia.com/gpu", limit=2) for pool in pools[count:]
        )
        QuotaIncreaseRequest.objects.bulk_create(
            QuotaIncreaseRequest(
                team=org.team, quota=q, limit_when_asked=2, requested_limit=4, reason="more", requested_by=org.member
            )
            for q in pool_quotas
        )
        RequestTemplate.objects.bulk_create(
            RequestTemplate(
                team=org.team, name=f"preset-{n}", profile={"workload_type": "training", "gpu_memory_gb": 8}
            )
            for n in numbers
        )
        # A reservation of the team on each new pool, the first approved (its window on now), then every other one.
        Reservation.objects.bulk_create(
            Reservation(
                team=org.team,
                node_pool=pool,
                resource_name="nvidia.com/gpu",
                quantity=1,
                start=now - timedelta(hours=1),
                end=now + timedelta(hours=8),
                requested_by=org.team_lead,
                status=ReservationStatus.PENDING if n % 2 else ReservationStatus.APPROVED,
            )
            for n, pool in zip(numbers, pools[count:], strict=True)
        )

        # Tokens, audit events, MIG plans of the MIG pool, closed reports of earlier months.
        ApiToken.objects.bulk_create(
            ApiToken(
                user=org.member,
                name=f"notebook {n}",
                public_id=uuid.uuid4().hex[:16],
                digest=uuid.uuid4().hex * 2,
                expires_at=now + timedelta(days=30),
            )
            for n in numbers
        )
        AuditEvent.objects.bulk_create(
            AuditEvent(
                actor=org.platform_admin,
                actor_label="platform_admin",
                action="update",
                object_type="allocations.cluster",
                object_id=str(c.pk),
                object_repr=c.name,
                before={"prometheus_url": ""},
                after={"prometheus_url": "http://prometheus:9090"},
            )
            for c in clusters
        )
        MigPlan.objects.bulk_create(
            MigPlan(pool=self.mig_pool, created_by=org.platform_admin, demand={"3g.20gb": n + 1}) for n in numbers
        )
        # Older than any window the dashboards read (a closed month of one team only is read live, a month at a time).
        this_month = now.date().replace(day=1)
        MonthlyReport.objects.bulk_create(
            MonthlyReport(
                team=org.team,
                month=add_months(this_month, -(MAX_MONTHS + 1 + n)),
                status=ReportStatus.CLOSED,
                currency="USD",
                closed_at=now,
            )
            for n in numbers
        )


@pytest.fixture
def rows(demo_org: DemoOrg) -> Rows:
    load_book({"H100-80GB": "2.00", "A100-40GB": "1.50"})
    TeamBudgetFactory(team=demo_org.team)
    mig_pool = NodePoolFactory(
        cluster=demo_org.cluster,
        name=MIG_POOL,
        gpu_model=GpuModel.objects.get(name="A100-40GB"),
        sharing_mode=SharingMode.MIG,
        mig_devices={"3g.20gb": 2},
    )
    return Rows(demo_org, mig_pool)


def get(client: Client, url: str) -> None:
    response = client.get(url)
    assert response.status_code == 200, (url, response.status_code)
    if response.streaming:  # a streamed download reads its rows while it is sent: count those queries too
        b"".join(response.streaming_content)


@pytest.mark.parametrize("page", sorted(PAGES))
def test_each_page_stays_within_its_budget_and_does_not_grow_with_rows(
    rows: Rows, page: str, django_assert_max_num_queries: Callable[[int], AbstractContextManager[object]]
) -> None:
    url, role = PAGES[page]
    client = Client()
    client.force_login(rows.org.user(role))

    rows.add(1)
    running = GpuRequest.objects.filter(team=rows.org.team, status=RequestStatus.ACTIVE).order_by("pk").first()
    url = url.format(request=running.pk, month=f"{timezone.now():%Y-%m}")
    get(client, url)  # warm: the session, the user's permissions, the price book and catalog caches of a request
    with CaptureQueriesContext(connection) as captured:
        get(client, url)
    with_one = len(captured)  # now: the connection keeps only its last 9,000 queries
    assert with_one <= BUDGETS[page], f"{page} makes {with_one} queries; its budget is {BUDGETS[page]}"

    rows.add(99)
    # Warm again, as for one row: what a process keeps until its inputs change (the fleet's alerts, replaced by the
    # rollups just written) is read once more; a query per row would still show on the next view.
    get(client, url)
    # Fails listing every query when 100 rows cost more than one.
    with django_assert_max_num_queries(with_one):
        get(client, url)


def test_every_page_has_a_budget_and_every_budget_a_page() -> None:
    assert set(BUDGETS) - {"_comment"} == set(PAGES)
