"""``manage.py seed_demo``: an idempotent demo organisation, built through the same services users go through."""

from __future__ import annotations

from datetime import timedelta
from decimal import Decimal
from typing import Any

from django.conf import settings
from django.contrib.auth.models import Group, Permission, User
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import transaction
from django.test import override_settings
from django.utils import timezone

from allocations.clusters.provisioning import gpu_request_provision
from allocations.models import (
    Cluster,
    ClusterBackend,
    GpuModel,
    GpuRequest,
    Membership,
    NodePool,
    Quota,
    RequestStatus,
    Role,
    SharingMode,
    Team,
)
from allocations.request_templates.demo import seed_demo_request_templates
from allocations.requests.services import (
    gpu_request_approve,
    gpu_request_reject,
    gpu_request_release,
    gpu_request_submit,
)
from allocations.selectors import APPROVERS_GROUP
from billing.costs.services import monthly_reports_close, previous_month, price_book_load
from billing.costs.visibility import FINANCE_GROUP, FINANCE_PERMISSIONS
from billing.metering.demo_usage import generate_demo_usage
from billing.models import PriceBook, TeamBudget

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
]
# Users in the Finance group (every team's costs and reports; every team and request read-only, no approvals).
FINANCE_USERS = ("finance",)
TEAMS = [
    # slug, name, cost center, monthly GPU-hour budget, monthly money budget (PORTAL_CURRENCY)
    ("vision", "Computer Vision", "CC-4100", Decimal("6000"), Decimal("12000")),
    ("nlp", "Natural Language", "CC-4200", Decimal("4000"), Decimal("8000")),
]
MEMBERSHIPS = [("alice", "vision", Role.MEMBER), ("dave", "vision", Role.LEAD), ("bob", "nlp", Role.MEMBER)]
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
}
# team, requester, name, purpose, profile, the status to walk it to
REQUESTS: list[tuple[str, str, str, str, dict[str, Any], str]] = [
    (
        "vision",
        "alice",
        "resnet50-training",
        "Retrain the defect classifier on the new labelled set.",
        {
            "workload_type": "training",
            "gpu_memory_gb": 60,
            "gpu_count": 2,
            "sla_tier": "tier2_batch",
            "gpu_model": "H100-80GB",
            "duration_hours": 72,
        },
        RequestStatus.ACTIVE,
    ),
    (
        "vision",
        "alice",
        "detector-serving",
        "Real-time object detection behind the inspection API.",
        {"workload_type": "realtime_inference", "gpu_memory_gb": 8, "latency_p99_ms": 25, "sla_tier": "tier2_batch"},
        RequestStatus.PENDING_APPROVAL,
    ),
    (
        "vision",
        "dave",
        "vision-notebook",
        "Exploration notebook for the segmentation prototype.",
        {"workload_type": "development", "gpu_memory_gb": 3, "sla_tier": "tier3_development"},
        RequestStatus.APPROVED,
    ),
    (
        "vision",
        "alice",
        "old-augmentation-sweep",
        "Augmentation hyper-parameter sweep (finished).",
        {"workload_type": "batch_inference", "gpu_memory_gb": 4, "sla_tier": "tier3_development"},
        RequestStatus.RELEASED,
    ),
    (
        "nlp",
        "bob",
        "bert-finetune",
        "Fine-tune the support-ticket classifier.",
        {"workload_type": "training", "gpu_memory_gb": 30, "sla_tier": "tier2_batch", "duration_hours": 24},
        RequestStatus.PENDING_APPROVAL,
    ),
    (
        "nlp",
        "bob",
        "embedding-batch",
        "Nightly embedding of the document corpus.",
        {"workload_type": "batch_inference", "gpu_memory_gb": 3, "sla_tier": "tier3_development"},
        RequestStatus.REJECTED,
    ),
]
# What each demo workload runs (the default images run nothing by themselves; development starts JupyterLab).
DEMO_COMMANDS = {
    "training": ["torchrun", "--nproc-per-node=2", "train.py", "--epochs", "30"],
    "batch_inference": ["python", "embed.py", "--input", "s3://corpus/nightly"],
    "realtime_inference": ["tritonserver", "--model-repository=s3://models/detector"],
}
# How each demo request reaches its status, through the services. Approval queues provisioning once the transaction
# commits; "provision" runs the same (idempotent) service at once, so the demo does not depend on a worker.
WALKS = {
    RequestStatus.PENDING_APPROVAL: [],
    RequestStatus.APPROVED: ["approve"],
    RequestStatus.ACTIVE: ["approve", "provision"],
    RequestStatus.RELEASED: ["approve", "provision", "release"],
    RequestStatus.REJECTED: ["reject"],
}


class Command(BaseCommand):
    help = (
        "Create the demo organisation (teams vision and nlp, users alice/dave/bob/carol/finance with password 'demo')."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--force", action="store_true", help="Run even with DEBUG off (demo passwords!).")
        parser.add_argument(
            "--prometheus-url", default="", help="Prometheus the demo cluster reads utilization from (compose stack)."
        )
        parser.add_argument(
            "--no-usage",
            action="store_true",
            help="Skip the month of utilization history and the closing of last month's reports.",
        )

    def handle(
        self, *args: Any, force: bool = False, prometheus_url: str = "", no_usage: bool = False, **options: Any
    ) -> None:
        if not settings.DEBUG and not force:
            raise CommandError(
                "seed_demo creates users with the password 'demo'; it refuses to run with DEBUG off. "
                "Pass --force if you really want the demo organisation here."
            )
        with transaction.atomic():
            users = self._users()
            teams = self._teams(users)
            pools = self._cluster()
            self._quotas(teams, pools)
            seed_demo_request_templates(teams)
        books = self._price_book()  # before the requests, so their frozen costs use it
        # The demo's own history notifies nobody (the console backend would print every email).
        with override_settings(EMAIL_BACKEND="django.core.mail.backends.dummy.EmailBackend"):
            created = self._requests(users, teams)
        if prometheus_url:
            Cluster.objects.filter(name="demo").update(prometheus_url=prometheus_url)
        rollups, closed = 0, "no reports closed"
        if not no_usage:
            rollups = generate_demo_usage()
            closed = f"reports for {monthly_reports_close(month=previous_month(), send_email=False).month:%Y-%m} closed"
        self.stdout.write(
            self.style.SUCCESS(
                f"Demo organisation ready: {len(users)} users (password '{DEMO_PASSWORD}'), {len(teams)} teams, "
                f"{len(pools)} node pools, {created} new requests, {rollups} new hourly utilization rollups, "
                f"{books} new price book, {closed}."
            )
        )

    def _price_book(self) -> int:
        """A price book in list-price mode (the catalog's sourced cloud prices), once, effective two months back."""
        if PriceBook.objects.exists():
            return 0
        start = (timezone.now().date().replace(day=1) - timedelta(days=40)).replace(day=1)
        price_book_load(text=DEMO_PRICE_BOOK.format(effective_from=start.isoformat()))
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
        for slug, name, cost_center, budget, money in TEAMS:
            teams[slug], _ = Team.objects.get_or_create(
                slug=slug, defaults={"name": name, "cost_center": cost_center, "monthly_gpu_hour_budget": budget}
            )
            TeamBudget.objects.get_or_create(team=teams[slug], defaults={"monthly_amount": money})
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

    def _requests(self, users: dict[str, User], teams: dict[str, Team]) -> int:
        created = 0
        approver = users["carol"]
        for team_slug, username, name, purpose, profile, target in REQUESTS:
            team = teams[team_slug]
            if GpuRequest.objects.filter(team=team, name=name).exists():
                continue
            request = gpu_request_submit(
                acting_user=users[username],
                team=team,
                name=name,
                purpose=purpose,
                profile_data=profile,
                command=DEMO_COMMANDS.get(profile["workload_type"], []),
            )
            for step in WALKS[target]:
                if step == "approve":
                    gpu_request_approve(request=request, acting_user=approver, comment="Fits the quota.")
                elif step == "provision":
                    gpu_request_provision(request_id=request.pk)
                elif step == "release":
                    gpu_request_release(request=request, acting_user=users[username], comment="Sweep finished.")
                else:
                    gpu_request_reject(
                        request=request,
                        acting_user=approver,
                        comment="Run it on the shared T4 pool during off-hours instead.",
                    )
            created += 1
        return created
