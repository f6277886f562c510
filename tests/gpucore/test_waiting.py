"""Where a request that is not running waits, and the ETA from the pool's allocations' expiries."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from gpucore.waiting import (
    Holding,
    PoolOutlook,
    QueueCondition,
    WaitingInputs,
    WaitingStage,
    capacity_eta,
    kueue_waiting,
    waiting_for,
)

NOW = datetime(2026, 11, 10, 9, 0, tzinfo=UTC)


def hours(n: float) -> datetime:
    return NOW + timedelta(hours=n)


def pool(capacity: int, *holdings: tuple[int, datetime | None]) -> PoolOutlook:
    return PoolOutlook(capacity=capacity, holdings=tuple(Holding(units, ends) for units, ends in holdings))


def test_free_units_now_are_an_eta_of_now():
    assert capacity_eta(needed=2, pool=pool(8, (4, hours(3)), (2, None)), now=NOW) == NOW


def test_the_eta_is_the_expiry_after_which_enough_is_free_in_order_of_the_ends():
    # 8 units, all held: 2 free at +5 h, 2 more at +2 h (earlier), 4 with no end.
    outlook = pool(8, (2, hours(5)), (2, hours(2)), (4, None))

    assert capacity_eta(needed=1, pool=outlook, now=NOW) == hours(2)
    assert capacity_eta(needed=2, pool=outlook, now=NOW) == hours(2)
    assert capacity_eta(needed=3, pool=outlook, now=NOW) == hours(5)
    assert capacity_eta(needed=5, pool=outlook, now=NOW) is None  # the rest has no end
    assert capacity_eta(needed=9, pool=outlook, now=NOW) is None  # more than the pool has


def test_an_expiry_already_past_is_an_eta_of_now():
    assert capacity_eta(needed=1, pool=pool(1, (1, hours(-1))), now=NOW) == NOW


def test_pending_with_room_waits_for_approval_with_its_place_in_the_queue():
    waiting = waiting_for(
        WaitingInputs(
            status="pending_approval",
            units=2,
            now=NOW,
            queue_position=3,
            units_ahead=4,
            pool=pool(16, (4, None)),
            resource_name="nvidia.com/gpu",
        )
    )

    assert waiting is not None
    assert (waiting.stage, waiting.position, waiting.ahead_gpu_units, waiting.eta) == ("approval", 3, 4, None)
    assert "2 request(s) ahead" in waiting.reasons[0]
    assert waiting.to_dict() == {
        "stage": "approval",
        "position": 3,
        "ahead_gpu_units": 4,
        "eta": None,
        "reasons": list(waiting.reasons),
    }


def test_pending_on_a_full_pool_waits_for_capacity_until_enough_expires_for_it_and_those_ahead():
    waiting = waiting_for(
        WaitingInputs(
            status="pending_approval",
            units=2,
            now=NOW,
            queue_position=2,
            units_ahead=1,
            pool=pool(4, (1, hours(1)), (1, hours(4)), (2, hours(8))),
            pool_name="h100",
            resource_name="nvidia.com/gpu",
        )
    )

    assert waiting is not None and waiting.stage is WaitingStage.CAPACITY
    # 3 units needed (1 ahead + 2 its own): +1 h frees 1, +4 h frees 2, +8 h frees 4.
    assert (waiting.ahead_gpu_units, waiting.eta, waiting.position) == (1, hours(8), 2)
    assert waiting.to_dict()["eta"] == "2026-11-10T17:00:00+00:00"
    assert any("Pool h100 has 4 nvidia.com/gpu: 4 held, 0 free" in reason for reason in waiting.reasons)


def test_a_pod_unschedulable_for_want_of_gpus_waits_for_capacity():
    waiting = waiting_for(
        WaitingInputs(
            status="provisioning",
            units=1,
            now=NOW,
            pool=pool(2, (2, hours(6))),
            observed_phase="Pending",
            pending_reason="0/4 nodes are available: 4 Insufficient nvidia.com/gpu.",
        )
    )

    assert waiting is not None and (waiting.stage, waiting.eta, waiting.ahead_gpu_units) == ("capacity", hours(6), 0)


def test_a_pod_pending_for_another_reason_is_still_provisioning():
    waiting = waiting_for(
        WaitingInputs(
            status="provisioning",
            units=1,
            now=NOW,
            pool=pool(2),
            observed_phase="Pending",
            pending_reason="0/4 nodes are available: 4 node(s) had untolerated taint {gpu: true}.",
        )
    )

    assert waiting is not None and waiting.stage is WaitingStage.PROVISIONING
    assert "untolerated taint" in waiting.reasons[0]


def test_approved_is_provisioning():
    waiting = waiting_for(WaitingInputs(status="approved", units=1, now=NOW, cluster_name="prod"))

    assert waiting is not None and waiting.stage is WaitingStage.PROVISIONING and "prod" in waiting.reasons[0]


@pytest.mark.parametrize("status", ["draft", "active", "suspended", "released", "expired", "rejected", "failed"])
def test_nothing_waits_outside_the_waiting_statuses(status):
    assert waiting_for(WaitingInputs(status=status, units=1, now=NOW, pool=pool(0))) is None


def test_a_workload_kueue_has_not_admitted_waits_in_kueue_with_its_message():
    message = "couldn't assign flavors to pod set main: insufficient unused quota for nvidia.com/gpu in flavor h100"
    conditions = (QueueCondition("QuotaReserved", "False", "Pending", message),)

    waiting = waiting_for(
        WaitingInputs(status="provisioning", units=1, now=NOW, pool=pool(8), queue_conditions=conditions)
    )

    assert waiting is not None and waiting.stage is WaitingStage.KUEUE
    assert waiting.reasons == (f"Kueue has not reserved quota: {message}",)


def test_an_admitted_workload_is_not_waiting_in_kueue_unless_evicted():
    admitted = (QueueCondition("QuotaReserved", "True"), QueueCondition("Admitted", "True"))
    preempted = (
        *admitted,
        QueueCondition("Evicted", "True", "Preempted", "Preempted to accommodate a workload (UID: x)"),
        QueueCondition("Preempted", "True", "InCohortReclamation", "Preempted to accommodate a workload"),
    )

    assert kueue_waiting(admitted) is None
    assert kueue_waiting(()) is None
    evicted = kueue_waiting(preempted)
    assert evicted is not None and evicted.stage is WaitingStage.KUEUE
    assert evicted.reasons[0].startswith("Preempted by Kueue (InCohortReclamation)")
