"""The demo's history, made by the product itself: requests submitted, approved, provisioned and released at past
moments through the same services users go through (the clock moved with time-machine), so every timestamp, event,
frozen cost and audit entry is what the portal would have written then. Then each finished month is closed through
the month-close service with the demo price book in force, and the budgets are set near their thresholds.

Times are relative to the start of the current month (past months) or to now (what runs or waits now), so the story
reads the same whichever day the demo is seeded. A run skips the requests already there: it is idempotent.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from decimal import ROUND_UP, Decimal
from typing import Any

import time_machine
from django.contrib.auth.models import User
from django.utils import timezone

from allocations.clusters.provisioning import gpu_request_provision
from allocations.mig_plans.services import mig_plan_create
from allocations.models import GpuRequest, MigPlan, NodePool, Quota, QuotaIncreaseRequest, SharingMode, Team
from allocations.quota_requests.services import quota_increase_request_create
from allocations.requests.services import (
    gpu_request_approve,
    gpu_request_reject,
    gpu_request_release,
    gpu_request_submit,
)
from audit.models import AuditEvent
from billing.costs.month_spend import team_month_to_date
from billing.costs.services import monthly_reports_close
from billing.models import TeamBudget

APPROVER = "carol"
# Past months the demo's history covers (and closes); the price book is in force from the first of them.
HISTORY_MONTHS = 3
# The share of its money budget each team has spent this month: vision just past the 80 % alert, nlp short of 50 %,
# speech about to cross 100 %.
BUDGET_USED = {"vision": Decimal("0.84"), "nlp": Decimal("0.46"), "speech": Decimal("0.96")}
FALLBACK_BUDGET = Decimal("10000")  # a team with no spend yet this month (the first hours of a month)


@dataclass(frozen=True)
class Moment:
    """A point in the demo's story: ``months_back`` months before this one at ``day`` ``hour``:00, or, with
    ``months_back`` None, ``hours_ago`` before now."""

    months_back: int | None = None
    day: int = 1
    hour: int = 9
    hours_ago: float = 0

    def at(self, now: datetime) -> datetime:
        if self.months_back is None:
            return (now - timedelta(hours=self.hours_ago)).replace(second=0, microsecond=0)
        return datetime.combine(month_start(now, self.months_back), datetime.min.time(), tzinfo=UTC).replace(
            day=self.day, hour=self.hour
        )


@dataclass(frozen=True)
class DemoRequest:
    """One request of the story: who asked for what, when, and what happened to it."""

    team: str
    requester: str
    name: str
    purpose: str
    profile: dict[str, Any]
    submitted: Moment
    outcome: str  # pending | rejected | running | released
    run_hours: float | None = None  # released: how long it ran (within its duration)
    review_minutes: int = 40
    comment: str = ""
    # Its utilization pattern when not its workload type's (billing.metering.demo_usage): the idle notebook, and a
    # transcription job squeezing its time-sliced share's memory.
    pattern: str = field(default="", compare=False)


def month_start(now: datetime, months_back: int) -> date:
    first = now.astimezone(UTC).date().replace(day=1)
    for _ in range(months_back):
        first = (first - timedelta(days=1)).replace(day=1)
    return first


def history_start(now: datetime) -> date:
    """The first day of the demo's history (and of its price book)."""
    return month_start(now, HISTORY_MONTHS)


# What each demo workload runs: the default images run nothing by themselves (development starts JupyterLab).
DEMO_COMMANDS = {
    "training": ["torchrun", "--nproc-per-node=2", "train.py", "--epochs", "30"],
    "batch_inference": ["python", "embed.py", "--input", "s3://corpus/nightly"],
    "realtime_inference": ["tritonserver", "--model-repository=s3://models/detector"],
}
H100_TRAINING = {"workload_type": "training", "sla_tier": "tier2_batch", "gpu_model": "H100-80GB"}
STORY: list[DemoRequest] = [
    DemoRequest(
        "vision", "alice", "detector-v1-training", "First training of the defect detector.",
        {**H100_TRAINING, "gpu_memory_gb": 120, "gpu_count": 2, "duration_hours": 96},
        Moment(3, day=6), "released", run_hours=90,
    ),
    DemoRequest(
        "nlp", "bob", "tokenizer-eval", "Compare the candidate tokenizers on the ticket corpus.",
        {"workload_type": "batch_inference", "gpu_memory_gb": 8, "sla_tier": "tier3_development", "duration_hours": 24},
        Moment(3, day=20, hour=13), "released", run_hours=20,
    ),
    DemoRequest(
        "nlp", "bob", "bert-base-pretrain", "Domain pre-training of the ticket encoder.",
        {**H100_TRAINING, "gpu_memory_gb": 240, "gpu_count": 4, "duration_hours": 120},
        Moment(2, day=3), "released", run_hours=110,
    ),
    DemoRequest(
        "vision", "alice", "old-augmentation-sweep", "Augmentation hyper-parameter sweep (finished).",
        {"workload_type": "batch_inference", "gpu_memory_gb": 4, "sla_tier": "tier3_development", "duration_hours": 48},
        Moment(2, day=14, hour=14), "released", run_hours=46,
    ),
    DemoRequest(
        "nlp", "bob", "embedding-batch", "Nightly embedding of the document corpus.",
        {"workload_type": "batch_inference", "gpu_memory_gb": 3, "sla_tier": "tier3_development"},
        Moment(1, day=5, hour=10), "rejected", comment="Run it on the shared T4 pool during off-hours instead.",
    ),
    DemoRequest(
        "speech", "erin", "whisper-finetune", "Fine-tune the speech recogniser on call-centre audio.",
        {**H100_TRAINING, "gpu_memory_gb": 120, "gpu_count": 2, "duration_hours": 72},
        Moment(1, day=8), "released", run_hours=70,
    ),
    DemoRequest(
        "vision", "alice", "detector-v2-training", "Retrain the detector with the October images.",
        {**H100_TRAINING, "gpu_memory_gb": 120, "gpu_count": 2, "duration_hours": 48},
        Moment(1, day=12), "released", run_hours=44,
    ),
    DemoRequest(
        "nlp", "bob", "embedding-backfill", "Embed the archive once, on time-sliced T4 shares.",
        {"workload_type": "batch_inference", "gpu_memory_gb": 3, "sla_tier": "tier3_development", "duration_hours": 48},
        Moment(1, day=18, hour=20), "released", run_hours=36,
    ),
    DemoRequest(
        "nlp", "bob", "support-bot-inference", "The support chatbot's answer model, behind the help-desk API.",
        {"workload_type": "realtime_inference", "gpu_memory_gb": 14, "latency_p99_ms": 80, "sla_tier": "tier2_batch"},
        Moment(1, day=20, hour=11), "running",
    ),
    DemoRequest(
        "nlp", "bob", "intent-classifier-serving", "The intent classifier behind the ticket router.",
        {"workload_type": "realtime_inference", "gpu_memory_gb": 6, "latency_p99_ms": 50, "sla_tier": "tier2_batch"},
        Moment(1, day=25, hour=10), "running",
    ),
    DemoRequest(
        "vision", "dave", "segmentation-training", "Train the segmentation model for the new line.",
        {**H100_TRAINING, "gpu_memory_gb": 240, "gpu_count": 4, "duration_hours": 100},
        Moment(hours_ago=9 * 24), "released", run_hours=96,
    ),
    DemoRequest(
        "speech", "erin", "asr-batch-nightly", "Transcribe the day's calls every night.",
        {"workload_type": "batch_inference", "gpu_memory_gb": 3, "sla_tier": "tier3_development"},
        Moment(hours_ago=4 * 24 + 3), "running", pattern="shared_dev",
    ),
    DemoRequest(
        "speech", "erin", "whisper-large-eval", "Evaluate the large speech model on the new accents set.",
        {**H100_TRAINING, "gpu_memory_gb": 60, "gpu_count": 1, "duration_hours": 96},
        Moment(hours_ago=2 * 24 + 5), "running",
    ),
    DemoRequest(
        "vision", "dave", "vision-notebook", "Exploration notebook for the segmentation prototype.",
        {"workload_type": "development", "gpu_memory_gb": 3, "sla_tier": "tier3_development"},
        Moment(hours_ago=6 * 24 + 2), "running", pattern="waste",
    ),
    DemoRequest(
        "vision", "alice", "resnet50-training", "Retrain the defect classifier on the new labelled set.",
        {**H100_TRAINING, "gpu_memory_gb": 120, "gpu_count": 2, "duration_hours": 72},
        Moment(hours_ago=30), "running",
    ),
    DemoRequest(
        "vision", "alice", "detector-serving", "Real-time object detection behind the inspection API.",
        {"workload_type": "realtime_inference", "gpu_memory_gb": 8, "latency_p99_ms": 25, "sla_tier": "tier2_batch"},
        Moment(hours_ago=3), "pending",
    ),
    DemoRequest(
        "nlp", "bob", "bert-finetune", "Fine-tune the support-ticket classifier.",
        {"workload_type": "training", "gpu_memory_gb": 30, "sla_tier": "tier2_batch", "duration_hours": 24},
        Moment(hours_ago=0.45), "pending",
    ),
]  # fmt: skip


@contextmanager
def at(moment: datetime) -> Iterator[None]:
    """Run the block with the clock at ``moment`` (standing still), as if it happened then."""
    with time_machine.travel(moment, tick=False):
        yield


def _walk(item: DemoRequest, users: dict[str, User], team: Team, now: datetime) -> GpuRequest | None:
    submitted = item.submitted.at(now)
    if submitted >= now:
        return None  # the month has just begun: this part of the story has not happened yet
    approver = users[APPROVER]
    with at(submitted):
        request = gpu_request_submit(
            acting_user=users[item.requester],
            team=team,
            name=item.name,
            purpose=item.purpose,
            profile_data=item.profile,
            command=DEMO_COMMANDS.get(item.profile["workload_type"], []),
        )
    if item.outcome == "pending":
        return request
    reviewed = min(submitted + timedelta(minutes=item.review_minutes), now - timedelta(minutes=1))
    with at(reviewed):
        if item.outcome == "rejected":
            gpu_request_reject(request=request, acting_user=approver, comment=item.comment)
            return request
        gpu_request_approve(request=request, acting_user=approver, comment="Fits the quota.")
    with at(reviewed + timedelta(minutes=2)):
        gpu_request_provision(request_id=request.pk)
    if item.outcome == "released" and item.run_hours:
        request.refresh_from_db()
        started = request.activated_at or reviewed
        # Never after now: on the first days of a month a run planned across it has only just finished.
        ended = min(started + timedelta(hours=item.run_hours), now - timedelta(minutes=30))
        with at(ended):
            gpu_request_release(request=request, acting_user=users[item.requester], comment="Finished.")
    return request


def demo_history_requests(*, users: dict[str, User], teams: dict[str, Team], now: datetime | None = None) -> int:
    """Walk each story request not yet there through the services at its moments; the number made."""
    now = now or timezone.now()
    made = 0
    for item in sorted(STORY, key=lambda i: i.submitted.at(now)):
        team = teams[item.team]
        if GpuRequest.objects.filter(team=team, name=item.name).exists():
            continue
        if _walk(item, users, team, now) is not None:
            made += 1
    return made


def demo_patterns() -> dict[int, str]:
    """The utilization pattern of the story's requests that do not look like their workload type, by request id."""
    names = {item.name: item.pattern for item in STORY if item.pattern}
    return {pk: names[name] for pk, name in GpuRequest.objects.filter(name__in=names).values_list("pk", "name")}


def demo_months_close(*, now: datetime | None = None) -> list[str]:
    """Close each finished month of the history through the month-close service, an hour into the next month."""
    now = now or timezone.now()
    closed = []
    for months_back in range(HISTORY_MONTHS, 0, -1):
        month = month_start(now, months_back)
        closing = datetime.combine(month_start(now, months_back - 1), datetime.min.time(), tzinfo=UTC)
        closing = min(closing + timedelta(hours=1), now)
        with at(closing):
            monthly_reports_close(month=month, now=closing, send_email=False)
        closed.append(f"{month:%Y-%m}")
    return closed


def demo_budgets(*, teams: dict[str, Team], now: datetime | None = None) -> int:
    """Each team's money budget, set so this month's spend so far stands near one of its thresholds; the number set.

    A later run sets it again: what runs has spent more since, and the story's budgets sit near their thresholds
    whichever day the demo is seeded (the same day, the same amounts). A budget someone set in the portal since
    (its change is audited) is theirs and left alone."""
    now = now or timezone.now()
    set_in_portal = set(
        AuditEvent.objects.filter(object_type=TeamBudget._meta.label_lower).values_list("object_id", flat=True)
    )
    made = 0
    for slug, team in teams.items():
        budget = TeamBudget.objects.filter(team=team).first()
        if budget is not None and str(budget.pk) in set_in_portal:
            continue
        spent = team_month_to_date(team=team, now=now)["amount"]
        share = BUDGET_USED.get(slug, Decimal("0.5"))
        amount = (spent / share).quantize(Decimal("1"), rounding=ROUND_UP) if spent else FALLBACK_BUDGET
        if budget is None:
            TeamBudget.objects.create(team=team, monthly_amount=amount)
        elif budget.monthly_amount != amount:
            budget.monthly_amount = amount
            budget.save(update_fields=["monthly_amount"])
        else:
            continue
        made += 1
    return made


def demo_mig_plan(*, users: dict[str, User]) -> int:
    """A proposed MIG plan for each MIG pool without one, for the demand of its running and waiting requests."""
    made = 0
    for pool in NodePool.objects.filter(sharing_mode=SharingMode.MIG).select_related("cluster", "gpu_model"):
        if not MigPlan.objects.filter(pool=pool).exists():
            # A GitOps cluster's nodes are not read from it: named as the demo's utilization names them.
            nodes = [f"{pool.name}-node-{index + 1}" for index in range(pool.node_count)]
            mig_plan_create(acting_user=users[APPROVER], pool=pool, nodes=nodes)
            made += 1
    return made


def demo_quota_increase(*, users: dict[str, User], now: datetime | None = None) -> int:
    """Speech's lead asks, five hours ago, for two more H100s: a quota increase waiting for an approver."""
    now = now or timezone.now()
    quota = Quota.objects.filter(team__slug="speech", node_pool__name="h100-dedicated").first()
    if quota is None or QuotaIncreaseRequest.objects.filter(quota=quota).exists():
        return 0
    with at(now - timedelta(hours=5)):
        quota_increase_request_create(
            acting_user=users["erin"],
            quota=quota,
            requested_limit=quota.limit + 2,
            reason="The large speech model's evaluation needs two more H100s for the next two weeks.",
        )
    return 1
