"""Two closed fixture months and an open one, built with fixed ids and times, for the byte-for-byte report check.

Every branch of "when did a request hold GPUs" and of the spec is here: activated before the month and still
running, activated and released inside it, never activated but provisioning (still, or failed since), approved
only, released or failed before the month, rejected; dedicated, multi-GPU replicas, MIG on a 7-slice and on a
4-slice GPU, time-slicing on both resource names; SLA multipliers, a mid-month price change, a model with no price,
imported usage and measured utilization. Ids are fixed because they are printed in the reports.
"""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta
from typing import Any

from django.contrib.auth.models import User

from allocations.models import GpuModel, GpuRequest, RequestEvent, RequestStatus, SharingMode, SlaTier, Team
from billing.metering.aggregates import refresh_usage_aggregates
from billing.models import ImportedUsage, UtilizationRollup
from tests.billing.cost_helpers import load_book
from tests.factories import ClusterFactory, NodePoolFactory, TeamFactory, UserFactory

SEPTEMBER = date(2025, 9, 1)
OCTOBER = date(2025, 10, 1)
NOVEMBER = date(2025, 11, 1)
CLOSED_AT = datetime(2025, 11, 3, 6, 0, tzinfo=UTC)  # "now" when September and October are closed
NOVEMBER_NOW = datetime(2025, 11, 15, 12, 30, tzinfo=UTC)  # "now" of the open month's estimate


def at(month: int, day: int, hour: int = 0, minute: int = 0) -> datetime:
    """A time in 2025, UTC."""
    return datetime(2025, month, day, hour, minute, tzinfo=UTC)


def _spec(model: GpuModel, strategy: str, resource: str, quantity: int, replicas: int, **extra: Any) -> dict:
    return {
        "strategy": strategy,
        "resource_name": resource,
        "quantity": quantity,
        "replicas": replicas,
        "gpu_model": model.name,
        "mig_profile": extra.get("mig_profile"),
        "time_slice_replicas": extra.get("time_slice_replicas"),
        "node_selector": {"nvidia.com/gpu.product": model.product_label},
    }


def _request(
    pk: int,
    *,
    team: Team,
    requester: User,
    name: str,
    pool: Any,
    spec: dict,
    tier: str,
    status: str,
    activated_at: datetime | None = None,
    ended_at: datetime | None = None,
    updated_at: datetime,
    events: list[tuple[str, datetime]] = (),
) -> GpuRequest:
    request = GpuRequest.objects.create(
        pk=pk,
        team=team,
        requester=requester,
        name=name,
        workload_type="training",
        gpu_memory_gb=40,
        gpu_count=spec["quantity"],
        replicas=spec["replicas"],
        sla_tier=SlaTier.objects.get(slug=tier),
        cluster=pool.cluster,
        node_pool=pool,
        spec=spec,
        resource_name=spec["resource_name"],
        resource_units=spec["quantity"] * spec["replicas"],
        status=status,
    )
    previous = ""
    for to_status, when in events:
        event = RequestEvent.objects.create(
            request=request, actor_label="fixture", from_status=previous, to_status=to_status
        )
        RequestEvent.objects.filter(pk=event.pk).update(at=when)  # history: it happened back then
        previous = to_status
    # auto_now fields can only be set around the model: the history is fixed, not "now".
    GpuRequest.objects.filter(pk=pk).update(activated_at=activated_at, ended_at=ended_at, updated_at=updated_at)
    return request


def build_fixture_months() -> None:
    """The organisation, price books, requests, imported usage and rollups of September to November 2025."""
    # Fixed cost centres: the golden CSVs carry them (the factory's sequence depends on the tests run before).
    vision = TeamFactory(slug="vision", name="Vision", cost_center="CC-1000")
    nlp = TeamFactory(slug="nlp", name="NLP", cost_center="CC-1001")
    speech = TeamFactory(slug="speech", name="Speech", cost_center="CC-1002")
    someone = UserFactory(username="fixture-user")
    cluster = ClusterFactory(name="fixture")
    models = {m.name: m for m in GpuModel.objects.all()}
    h100 = NodePoolFactory(cluster=cluster, name="h100", gpu_model=models["H100-80GB"], node_count=2, gpus_per_node=8)
    a100 = NodePoolFactory(
        cluster=cluster,
        name="a100-mig",
        gpu_model=models["A100-40GB"],
        node_count=1,
        gpus_per_node=8,
        sharing_mode=SharingMode.MIG,
        mig_devices={"3g.20gb": 2},
    )
    a30 = NodePoolFactory(
        cluster=cluster,
        name="a30-mig",
        gpu_model=models["A30"],
        node_count=1,
        gpus_per_node=4,
        sharing_mode=SharingMode.MIG,
        mig_devices={"2g.12gb": 2},
    )
    t4 = NodePoolFactory(
        cluster=cluster,
        name="t4-shared",
        gpu_model=models["T4"],
        node_count=1,
        gpus_per_node=4,
        sharing_mode=SharingMode.TIME_SLICING,
        time_slice_replicas=4,
    )
    load_book(
        {"H100-80GB": "2.00", "A100-40GB": "1.60", "T4": "0.52"},
        effective_from="2025-09-01",
        tier1_realtime="1.5",
        tier3_development="0.75",
    )
    load_book({"H100-80GB": "2.40", "A100-40GB": "1.60", "T4": "0.50"}, effective_from="2025-10-16")

    dedicated = _spec(models["H100-80GB"], "dedicated", "nvidia.com/gpu", 1, 1)
    common = {"requester": someone, "tier": "tier2_batch"}
    # Activated in August, still running: clipped to each month.
    _request(
        7001,
        team=vision,
        name="trainer",
        pool=h100,
        spec=dedicated,
        status=RequestStatus.ACTIVE,
        activated_at=at(8, 20, 9, 15),
        updated_at=at(8, 20, 9, 15),
        events=[("approved", at(8, 20, 9)), ("provisioning", at(8, 20, 9, 5)), ("active", at(8, 20, 9, 15))],
        **common,
    )
    # Two GPUs per replica, two replicas, tier 1: activated and released inside October.
    _request(
        7002,
        team=vision,
        name="inference-api",
        pool=h100,
        spec=_spec(models["H100-80GB"], "dedicated", "nvidia.com/gpu", 2, 2),
        status=RequestStatus.RELEASED,
        activated_at=at(10, 3, 14, 20),
        ended_at=at(10, 24, 8, 45),
        updated_at=at(10, 24, 8, 45),
        events=[
            ("approved", at(10, 3, 14)),
            ("provisioning", at(10, 3, 14, 1)),
            ("active", at(10, 3, 14, 20)),
            ("released", at(10, 24, 8, 45)),
        ],
        requester=someone,
        tier="tier1_realtime",
    )
    # A MIG slice on a 7-slice GPU, the whole of September and October.
    _request(
        7003,
        team=nlp,
        name="embedding",
        pool=a100,
        spec=_spec(models["A100-40GB"], "mig", "nvidia.com/mig-3g.20gb", 1, 2, mig_profile="3g.20gb"),
        status=RequestStatus.ACTIVE,
        activated_at=at(9, 1),
        updated_at=at(9, 1),
        events=[("approved", at(8, 31, 23)), ("provisioning", at(8, 31, 23, 30)), ("active", at(9, 1))],
        **common,
    )
    # A MIG slice on a 4-slice GPU that has no price (no book names the A30 and the catalog has none for it).
    _request(
        7004,
        team=nlp,
        name="a30-notebook",
        pool=a30,
        spec=_spec(models["A30"], "mig", "nvidia.com/mig-2g.12gb", 1, 1, mig_profile="2g.12gb"),
        status=RequestStatus.EXPIRED,
        activated_at=at(9, 10, 6),
        ended_at=at(10, 10, 6),
        updated_at=at(10, 10, 6),
        events=[("approved", at(9, 10, 5)), ("provisioning", at(9, 10, 5, 1)), ("active", at(9, 10, 6))],
        requester=someone,
        tier="tier3_development",
    )
    # Time-sliced T4 shares on both resource names.
    _request(
        7005,
        team=speech,
        name="dev-box",
        pool=t4,
        spec=_spec(models["T4"], "time-slicing", "nvidia.com/gpu", 1, 1, time_slice_replicas=4),
        status=RequestStatus.ACTIVE,
        activated_at=at(9, 15, 10),
        updated_at=at(9, 15, 10),
        events=[("approved", at(9, 15, 9)), ("provisioning", at(9, 15, 9, 30)), ("active", at(9, 15, 10))],
        requester=someone,
        tier="tier3_development",
    )
    _request(
        7006,
        team=speech,
        name="shared-batch",
        pool=t4,
        spec=_spec(models["T4"], "time-slicing", "nvidia.com/gpu.shared", 1, 3, time_slice_replicas=4),
        status=RequestStatus.RELEASED,
        activated_at=at(10, 1, 12),
        ended_at=at(10, 2, 0),
        updated_at=at(10, 2, 0),
        events=[("approved", at(10, 1, 11)), ("provisioning", at(10, 1, 11, 45)), ("active", at(10, 1, 12))],
        **common,
    )
    # Never activated: provisioning since October 28 (its pods may hold GPUs while pending).
    _request(
        7007,
        team=vision,
        name="stuck-provisioning",
        pool=h100,
        spec=dedicated,
        status=RequestStatus.PROVISIONING,
        updated_at=at(10, 28, 7),
        events=[("approved", at(10, 28, 6)), ("provisioning", at(10, 28, 7))],
        **common,
    )
    # Never activated: provisioning, then failed (not ended: a failed request may be re-applied).
    _request(
        7008,
        team=nlp,
        name="failed-start",
        pool=h100,
        spec=dedicated,
        status=RequestStatus.FAILED,
        updated_at=at(10, 12, 18, 30),
        events=[("approved", at(10, 12, 9)), ("provisioning", at(10, 12, 9, 10)), ("failed", at(10, 12, 18, 30))],
        **common,
    )
    # Held nothing in the fixture months: approved only, released in August, rejected.
    _request(
        7009,
        team=vision,
        name="approved-only",
        pool=h100,
        spec=dedicated,
        status=RequestStatus.APPROVED,
        updated_at=at(10, 30, 9),
        events=[("approved", at(10, 30, 9))],
        **common,
    )
    _request(
        7010,
        team=nlp,
        name="august-only",
        pool=h100,
        spec=dedicated,
        status=RequestStatus.RELEASED,
        activated_at=at(8, 1),
        ended_at=at(8, 31, 23),
        updated_at=at(8, 31, 23),
        events=[("approved", at(7, 31, 22)), ("active", at(8, 1)), ("released", at(8, 31, 23))],
        **common,
    )
    _request(
        7011,
        team=speech,
        name="rejected",
        pool=h100,
        spec=dedicated,
        status=RequestStatus.REJECTED,
        ended_at=at(10, 5, 9),
        updated_at=at(10, 5, 9),
        events=[("rejected", at(10, 5, 9))],
        **common,
    )
    # Failed in August and never ended: its last change was before the fixture months.
    _request(
        7012,
        team=vision,
        name="failed-in-august",
        pool=h100,
        spec=dedicated,
        status=RequestStatus.FAILED,
        updated_at=at(8, 6, 12),
        events=[("approved", at(8, 5, 9)), ("provisioning", at(8, 5, 10)), ("failed", at(8, 6, 12))],
        **common,
    )
    for pk, team, label, strategy, resource, quantity, replicas, start, end, util in (
        (8001, nlp, "legacy-train", "dedicated", "nvidia.com/gpu", 2, None, at(9, 2), at(9, 4, 12), 71.5),
        (8002, speech, "legacy-mig", "mig", "nvidia.com/mig-1g.5gb", 1, None, at(9, 29), at(10, 2, 6), None),
        (8003, vision, "legacy-share", "time-slicing", "nvidia.com/gpu", 1, 2, at(10, 20), at(10, 21), 12.25),
    ):
        ImportedUsage.objects.create(
            pk=pk,
            team=team,
            request_label=label,
            gpu_model="A100-40GB" if strategy == "mig" else ("T4" if strategy == "time-slicing" else "H100-80GB"),
            strategy=strategy,
            resource_name=resource,
            quantity=quantity,
            time_slice_replicas=replicas,
            start=start,
            end=end,
            avg_utilization_pct=util,
            imported_at=at(10, 25),
        )
    # Measured use of three requests, over the months: utilization means and energy in the report lines.
    for request_id, uuid, first, hours, util, energy in (
        (7001, "GPU-H100-0", at(9, 3), 50, 64.0, 0.41),
        (7001, "GPU-H100-0", at(10, 7, 3), 30, 22.5, 0.2),
        (7002, "GPU-H100-1", at(10, 4), 12, 91.0, 0.62),
        (7003, "GPU-A100-0", at(10, 15), 24, 35.0, None),
    ):
        request = GpuRequest.objects.get(pk=request_id)
        for index in range(hours):
            hour = first + timedelta(hours=index)
            UtilizationRollup.objects.create(
                cluster=cluster,
                hour=hour,
                gpu_uuid=uuid,
                mig_instance="1" if energy is None else "",
                namespace=request.team.namespace,
                pod=f"gpr-{request_id}",
                team=request.team,
                request=request,
                gpu_model_name="fixture",
                sample_count=60 - index % 7,
                avg_utilization_pct=util + index % 5,
                peak_utilization_pct=util + 5,
                energy_kwh=energy,
                pulled_at=hour,
            )
        # As every writer of rollups does: the daily and monthly totals follow.
        refresh_usage_aggregates(cluster_id=cluster.pk, start=first, end=first + timedelta(hours=hours))
