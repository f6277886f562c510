"""``manage.py seed_demo``: an idempotent demo organisation, built through the same services users go through."""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

from django.conf import settings
from django.contrib.auth.models import Group, Permission, User
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import transaction
from django.test import override_settings
from django.utils import timezone

from allocations.models import Cluster, ClusterBackend, GpuModel, Membership, NodePool, Quota, Role, SharingMode, Team
from allocations.request_templates.demo import seed_demo_request_templates
from allocations.selectors import APPROVERS_GROUP
from billing.costs.services import price_book_load
from billing.costs.visibility import FINANCE_GROUP, FINANCE_PERMISSIONS
from billing.metering.demo_usage import generate_demo_usage
from billing.models import PriceBook
from portal.demo_history import (
    at,
    demo_budgets,
    demo_history_requests,
    demo_mig_plan,
    demo_months_close,
    demo_patterns,
    demo_quota_increase,
    history_start,
)

# One basis for every model (cloud on-demand price per GPU-hour, from the reference catalog), so comparisons between
# models are fair; A30 and V100 have no sourced price and are left out.
DEMO_PRICE_BOOK = """\
currency: USD
effective_from: {effective_from}
gpu_models:
  A100-40GB: {{hourly: "2.7447"}}
  A100-80GB: {{hourly: "3.4309"}}
  H100-80GB: {{hourly: "6.88"}}
  H200: {{hourly: "7.912"}}
  L4: {{hourly: "0.8048"}}
  T4: {{hourly: "0.526"}}
sla_multipliers: {{tier1_realtime: "1.5", tier2_batch: "1.0", tier3_development: "0.8"}}
"""
DEMO_PASSWORD = "demo"  # noqa: S105 - documented demo credential, refused outside DEBUG without --force
GPU_TAINT = [{"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}]

USERS = [
    # username, first name, email, staff, superuser
    ("alice", "Alice", "alice@example.com", False, False),
    ("dave", "Dave", "dave@example.com", False, False),
    ("bob", "Bob", "bob@example.com", False, False),
    ("carol", "Carol", "carol@example.com", True, True),
    ("finance", "Fiona", "finance@example.com", False, False),
    ("erin", "Erin", "erin@example.com", False, False),
]
# Users in the Finance group (every team's costs and reports; every team and request read-only, no approvals).
FINANCE_USERS = ("finance",)
TEAMS = [
    # slug, name, cost center, monthly GPU-hour budget (the money budgets follow the month's spend: demo_budgets)
    ("vision", "Computer Vision", "CC-4100", Decimal("6000")),
    ("nlp", "Natural Language", "CC-4200", Decimal("4000")),
    ("speech", "Speech", "CC-4300", Decimal("2000")),
]
MEMBERSHIPS = [
    ("alice", "vision", Role.MEMBER),
    ("dave", "vision", Role.LEAD),
    ("bob", "nlp", Role.MEMBER),
    ("erin", "speech", Role.LEAD),
]
POOLS = [
    # name, model, nodes, GPUs per node, sharing, time-slice replicas, MIG layout per GPU
    ("a100-mig", "A100-40GB", 2, 8, SharingMode.MIG, None, {"1g.5gb": 2, "2g.10gb": 1, "3g.20gb": 1}),
    ("h100-dedicated", "H100-80GB", 2, 8, SharingMode.NONE, None, {}),
    ("t4-shared", "T4", 4, 4, SharingMode.TIME_SLICING, 4, {}),
]
QUOTAS = {
    # team: [(pool, resource, limit)]
    "vision": [
        ("h100-dedicated", "nvidia.com/gpu", 8),
        ("t4-shared", "nvidia.com/gpu", 16),
        ("a100-mig", "nvidia.com/mig-1g.5gb", 8),
        ("a100-mig", "nvidia.com/mig-2g.10gb", 4),
        ("a100-mig", "nvidia.com/mig-3g.20gb", 2),
    ],
    "nlp": [
        ("h100-dedicated", "nvidia.com/gpu", 4),
        ("t4-shared", "nvidia.com/gpu", 8),
        ("a100-mig", "nvidia.com/mig-1g.5gb", 4),
        ("a100-mig", "nvidia.com/mig-2g.10gb", 2),
        ("a100-mig", "nvidia.com/mig-3g.20gb", 2),
    ],
    "speech": [
        ("h100-dedicated", "nvidia.com/gpu", 4),
        ("t4-shared", "nvidia.com/gpu", 8),
    ],
}


class Command(BaseCommand):
    help = (
        "Create the demo organisation (teams vision, nlp and speech, users alice/dave/bob/erin/carol/finance with "
        "password 'demo') and its history: three closed months, requests running and waiting."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--force", action="store_true", help="Run even with DEBUG off (demo passwords!).")
        parser.add_argument(
            "--prometheus-url", default="", help="Prometheus the demo cluster reads utilization from (compose stack)."
        )
        parser.add_argument(
            "--no-usage",
            action="store_true",
            help="Skip the utilization history and the closing of the past months' reports.",
        )

    def handle(
        self, *args: Any, force: bool = False, prometheus_url: str = "", no_usage: bool = False, **options: Any
    ) -> None:
        if not settings.DEBUG and not force:
            raise CommandError(
                "seed_demo creates users with the password 'demo'; it refuses to run with DEBUG off. "
                "Pass --force if you really want the demo organisation here."
            )
        now = timezone.now()
        # The organisation exists from the start of its history (pages treat a team younger than a month as new).
        founded = datetime.combine(history_start(now), datetime.min.time(), tzinfo=UTC)
        with at(founded), transaction.atomic():
            users = self._users()
            teams = self._teams(users)
            pools = self._cluster()
            self._quotas(teams, pools)
            seed_demo_request_templates(teams)
        with at(founded):
            books = self._price_book(now)  # before the requests, so their frozen costs use it
        # The demo's own history notifies nobody (the console backend would print every email).
        with override_settings(EMAIL_BACKEND="django.core.mail.backends.dummy.EmailBackend"):
            created = demo_history_requests(users=users, teams=teams, now=now)
        if prometheus_url:
            Cluster.objects.filter(name="demo").update(prometheus_url=prometheus_url)
        rollups, closed = 0, "no reports closed"
        if not no_usage:
            days = (now.date() - history_start(now)).days + 1
            rollups = generate_demo_usage(days=days, now=now, patterns=demo_patterns())
            closed = f"reports for {', '.join(demo_months_close(now=now))} closed"
        budgets = demo_budgets(teams=teams, now=now)
        plans = demo_mig_plan(users=users)
        asks = demo_quota_increase(users=users, now=now)
        self.stdout.write(
            self.style.SUCCESS(
                f"Demo organisation ready: {len(users)} users (password '{DEMO_PASSWORD}'), {len(teams)} teams, "
                f"{len(pools)} node pools, {created} new requests, {rollups} new hourly utilization rollups, "
                f"{books} new price book, {budgets} budgets set, {plans} new MIG plan, {asks} new quota increase, "
                f"{closed}."
            )
        )

    def _price_book(self, now: datetime) -> int:
        """A price book in list-price mode (the catalog's sourced cloud prices), once, in force over the history."""
        if PriceBook.objects.exists():
            return 0
        price_book_load(text=DEMO_PRICE_BOOK.format(effective_from=history_start(now).isoformat()))
        return 1

    def _users(self) -> dict[str, User]:
        users = {}
        approvers = Group.objects.get(name=APPROVERS_GROUP)
        finance, _ = Group.objects.get_or_create(name=FINANCE_GROUP)
        for permission in FINANCE_PERMISSIONS:
            app_label, codename = permission.split(".")
            finance.permissions.add(Permission.objects.get(content_type__app_label=app_label, codename=codename))
        for username, first_name, email, staff, superuser in USERS:
            user, created = User.objects.get_or_create(
                username=username,
                defaults={"first_name": first_name, "email": email, "is_staff": staff, "is_superuser": superuser},
            )
            if created:
                user.set_password(DEMO_PASSWORD)
                user.save()
            if staff:
                user.groups.add(approvers)
            if username in FINANCE_USERS:
                user.groups.add(finance)
            users[username] = user
        return users

    def _teams(self, users: dict[str, User]) -> dict[str, Team]:
        teams = {}
        for slug, name, cost_center, budget in TEAMS:
            teams[slug], _ = Team.objects.get_or_create(
                slug=slug, defaults={"name": name, "cost_center": cost_center, "monthly_gpu_hour_budget": budget}
            )
        for username, slug, role in MEMBERSHIPS:
            Membership.objects.get_or_create(user=users[username], team=teams[slug], defaults={"role": role})
        return teams

    def _cluster(self) -> dict[str, NodePool]:
        cluster, _ = Cluster.objects.get_or_create(
            name="demo",
            defaults={
                "description": "Demo cluster: manifests are written to a GitOps tree under var/gitops/demo.",
                "backend": ClusterBackend.GITOPS,
                "gitops_path": "demo",
            },
        )
        pools = {}
        for name, model, nodes, per_node, sharing, replicas, layout in POOLS:
            pool, created = NodePool.objects.get_or_create(
                cluster=cluster,
                name=name,
                defaults={
                    "gpu_model": GpuModel.objects.get(name=model),
                    "node_count": nodes,
                    "gpus_per_node": per_node,
                    "sharing_mode": sharing,
                    "time_slice_replicas": replicas,
                    "mig_devices": layout,
                    "node_labels": {"gpu-portal/pool": name},
                    "taints": GPU_TAINT,
                },
            )
            if created:
                pool.full_clean()
            pools[name] = pool
        return pools

    def _quotas(self, teams: dict[str, Team], pools: dict[str, NodePool]) -> None:
        for slug, rows in QUOTAS.items():
            for pool_name, resource, limit in rows:
                Quota.objects.get_or_create(
                    team=teams[slug],
                    node_pool=pools[pool_name],
                    cluster=None,
                    resource_name=resource,
                    defaults={"limit": limit},
                )
