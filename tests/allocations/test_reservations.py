"""Reservations through the services: a lead asks, an approver approves (audited); the window holds the pool's units
against other teams' requests that would overlap it, and the team's own requests in the window draw on it (its
nominal quota rises to the reservation); bad asks are refused naming the field."""

from __future__ import annotations

from datetime import timedelta

import pytest
import time_machine
from django.core.exceptions import PermissionDenied, ValidationError
from django.utils import timezone

from allocations.models import Quota, RequestStatus, Reservation, ReservationStatus
from allocations.requests.services import gpu_request_approve, gpu_request_cancel, gpu_request_submit
from allocations.requests.waiting import request_waiting
from allocations.reservations.services import reservation_cancel, reservation_create, reservation_decide
from allocations.teams.quotas import quota_fit, quota_headroom_by_request
from audit.models import AuditEvent
from tests.factories import DemoOrg, MembershipFactory, NodePoolFactory, QuotaFactory, UserFactory

pytestmark = pytest.mark.django_db

TRAINING = {"workload_type": "training", "gpu_memory_gb": 40}


@pytest.fixture
def nlp_lead(demo_org: DemoOrg):
    """A lead of NLP, whose cluster quota is 4 GPUs with 8 more borrowable (12 in all)."""
    Quota.objects.filter(team=demo_org.other_team).delete()
    QuotaFactory(team=demo_org.other_team, cluster=demo_org.cluster, limit=4, borrowing_limit=8)
    lead = UserFactory(username="nlp-lead")
    MembershipFactory(user=lead, team=demo_org.other_team, role="lead")
    return lead


def ask(org: DemoOrg, user, team, quantity: int, *, hours_ahead: float = 24, hours: float = 9, **kw) -> Reservation:
    start = kw.pop("start", timezone.now() + timedelta(hours=hours_ahead))
    return reservation_create(
        acting_user=user,
        team=team,
        node_pool=kw.pop("node_pool", org.pool),
        resource_name=kw.pop("resource_name", "nvidia.com/gpu"),
        quantity=quantity,
        start=start,
        end=kw.pop("end", start + timedelta(hours=hours)),
        reason="Tuesday's retraining run",
    )


def submit(org: DemoOrg, user, team, gpus: int, name: str, **profile):
    return gpu_request_submit(
        acting_user=user,
        team=team,
        name=name,
        profile_data={**TRAINING, "gpu_count": gpus, **profile},
        command=["python", "train.py"],
    )


def test_a_lead_asks_and_an_approver_approves_each_step_audited(demo_org: DemoOrg) -> None:
    reservation = ask(demo_org, demo_org.team_lead, demo_org.team, 8)

    assert reservation.status == ReservationStatus.PENDING
    approved = reservation_decide(acting_user=demo_org.approver, reservation=reservation, approve=True, comment="ok")

    assert (approved.status, approved.decided_by) == (ReservationStatus.APPROVED, demo_org.approver)
    events = list(
        AuditEvent.objects.filter(object_type="allocations.reservation", object_id=str(reservation.pk)).order_by("pk")
    )
    assert [event.action for event in events] == ["create", "update"]
    assert events[1].before == {"status": "pending", "decided_by_id": None, "decided_at": None, "decision_comment": ""}
    assert events[1].after["status"] == "approved"


@pytest.mark.parametrize(
    ("changes", "field", "words"),
    [
        ({"hours_ahead": -1}, "start", "must start in the future"),
        ({"hours": -2}, "end", "must end after it starts"),
        ({"hours": 24 * 40}, "end", "at most 31 days"),
        ({"quantity": 17}, "quantity", "has 16 nvidia.com/gpu in all"),
        ({"quantity": 9}, "quantity", "quota allows at most 8 nvidia.com/gpu"),
        ({"resource_name": "nvidia.com/mig-1g.10gb"}, "resource_name", "offers nvidia.com/gpu, not"),
    ],
)
def test_a_bad_ask_is_refused_naming_the_field(demo_org: DemoOrg, changes: dict, field: str, words: str) -> None:
    quantity = changes.pop("quantity", 4)
    with pytest.raises(ValidationError) as refused:
        ask(demo_org, demo_org.team_lead, demo_org.team, quantity, **changes)

    assert words in " ".join(refused.value.message_dict[field])
    assert not Reservation.objects.exists()


def test_a_pool_without_the_teams_quota_is_refused_on_node_pool(demo_org: DemoOrg) -> None:
    Quota.objects.filter(team=demo_org.team).update(node_pool=NodePoolFactory(cluster=demo_org.cluster, name="a100"))

    with pytest.raises(ValidationError) as refused:
        ask(demo_org, demo_org.team_lead, demo_org.team, 2)

    assert "no quota on node pool" in refused.value.message_dict["node_pool"][0]


@pytest.mark.parametrize("role", ["member", "outsider", "approver"])
def test_only_a_lead_of_the_team_reserves(demo_org: DemoOrg, role: str) -> None:
    with pytest.raises(PermissionDenied):
        ask(demo_org, demo_org.user(role), demo_org.team, 2)


def test_members_do_not_decide_and_a_decline_needs_a_reason(demo_org: DemoOrg) -> None:
    reservation = ask(demo_org, demo_org.team_lead, demo_org.team, 4)

    with pytest.raises(PermissionDenied):
        reservation_decide(acting_user=demo_org.team_lead, reservation=reservation, approve=True)
    with pytest.raises(ValidationError) as refused:
        reservation_decide(acting_user=demo_org.approver, reservation=reservation, approve=False)
    assert "comment" in refused.value.message_dict
    declined = reservation_decide(
        acting_user=demo_org.approver, reservation=reservation, approve=False, comment="Maintenance that day."
    )
    assert declined.status == ReservationStatus.DECLINED


def test_the_window_holds_its_units_against_other_teams_requests(demo_org: DemoOrg, nlp_lead) -> None:
    reservation = ask(demo_org, nlp_lead, demo_org.other_team, 12, hours_ahead=3)
    reservation_decide(acting_user=demo_org.approver, reservation=reservation, approve=True)
    # Six GPUs for two hours end before the window: they fit.
    short = submit(demo_org, demo_org.member, demo_org.team, 6, "short", duration_hours=2)
    assert gpu_request_approve(request=short, acting_user=demo_org.approver).status == RequestStatus.APPROVED
    # Two more that run into the window do not: 16 in the pool, 6 held, 12 reserved for NLP.
    long = submit(demo_org, demo_org.member, demo_org.team, 2, "long", duration_hours=8)

    with pytest.raises(ValidationError) as refused:
        gpu_request_approve(request=long, acting_user=demo_org.approver)

    message = refused.value.message_dict["capacity"][0]
    assert "6 held, 12 reserved for other teams over its run" in message
    assert "reserved for team nlp from" in message and f"(reservation #{reservation.pk})" in message
    long.refresh_from_db()
    assert long.status == RequestStatus.PENDING_APPROVAL  # it waits, with the reason

    reservation_cancel(acting_user=nlp_lead, reservation=reservation)
    assert gpu_request_approve(request=long, acting_user=demo_org.approver).status == RequestStatus.APPROVED


def test_the_teams_requests_in_the_window_draw_on_it(demo_org: DemoOrg, nlp_lead) -> None:
    reservation = ask(demo_org, nlp_lead, demo_org.other_team, 10, hours_ahead=1)
    reservation_decide(acting_user=demo_org.approver, reservation=reservation, approve=True)
    # Before the window a tier-2 request of 8 is over NLP's nominal 4 (only tier 3 borrows).
    with pytest.raises(ValidationError) as refused:
        submit(demo_org, nlp_lead, demo_org.other_team, 8, "early")
    assert "may hold 4 nvidia.com/gpu" in " ".join(refused.value.messages)

    with time_machine.travel(reservation.start + timedelta(minutes=5)):
        inside = submit(demo_org, nlp_lead, demo_org.other_team, 8, "inside")
        assert gpu_request_approve(request=inside, acting_user=demo_org.approver).status == RequestStatus.APPROVED
        # The approval queue reads the same: two more of NLP's fit the raised quota (8 + 2 <= 10).
        two = submit(demo_org, nlp_lead, demo_org.other_team, 2, "two")
        (item,) = quota_headroom_by_request(requests=[two])[two.pk]
        assert (item.reserved, item.limit, item.in_use) == (10, 10, 8)
        assert quota_fit(request=two, headroom=[item]).fits
        gpu_request_cancel(request=two, acting_user=nlp_lead)
        # Vision is kept to what is left: 16 - 8 held - (10 - 8 not yet drawn) = 6.
        six = submit(demo_org, demo_org.member, demo_org.team, 6, "six")
        assert gpu_request_approve(request=six, acting_user=demo_org.approver).status == RequestStatus.APPROVED
        one_more = submit(demo_org, demo_org.member, demo_org.team, 1, "one-more")
        with pytest.raises(ValidationError) as full:
            gpu_request_approve(request=one_more, acting_user=demo_org.approver)
        assert "2 reserved for other teams" in full.value.message_dict["capacity"][0]
        # Waiting says why, and that the window's end frees enough.
        waiting = request_waiting(one_more)
        assert waiting.stage == "capacity"
        assert any("2 nvidia.com/gpu reserved for team nlp until" in reason for reason in waiting.reasons)
        assert waiting.eta is not None and waiting.eta <= reservation.end


def test_reservations_do_not_add_up_to_more_than_the_pool(demo_org: DemoOrg, nlp_lead) -> None:
    first = ask(demo_org, nlp_lead, demo_org.other_team, 12)
    reservation_decide(acting_user=demo_org.approver, reservation=first, approve=True)

    with pytest.raises(ValidationError) as refused:
        ask(demo_org, demo_org.team_lead, demo_org.team, 8, start=first.start + timedelta(hours=2))
    assert "12 already reserved" in refused.value.message_dict["quantity"][0]
    # After NLP's window it fits.
    assert ask(demo_org, demo_org.team_lead, demo_org.team, 8, start=first.end).status == ReservationStatus.PENDING


def test_an_approval_counts_other_teams_allocations_that_run_into_the_window(demo_org: DemoOrg, nlp_lead) -> None:
    reservation = ask(demo_org, nlp_lead, demo_org.other_team, 12, hours_ahead=3)
    open_ended = submit(demo_org, demo_org.member, demo_org.team, 6, "open-ended")
    gpu_request_approve(request=open_ended, acting_user=demo_org.approver)

    with pytest.raises(ValidationError) as refused:
        reservation_decide(acting_user=demo_org.approver, reservation=reservation, approve=True)

    assert "6 held by other teams' allocations that run into the window" in refused.value.message_dict["quantity"][0]
    reservation.refresh_from_db()
    assert reservation.status == ReservationStatus.PENDING


def test_who_may_cancel_and_when(demo_org: DemoOrg) -> None:
    reservation = ask(demo_org, demo_org.team_lead, demo_org.team, 4)
    reservation_decide(acting_user=demo_org.approver, reservation=reservation, approve=True)

    with pytest.raises(PermissionDenied):
        reservation_cancel(acting_user=demo_org.member, reservation=reservation)
    cancelled = reservation_cancel(acting_user=demo_org.team_lead, reservation=reservation)
    assert cancelled.status == ReservationStatus.CANCELLED
    with pytest.raises(PermissionDenied, match="already cancelled"):
        reservation_cancel(acting_user=demo_org.team_lead, reservation=reservation)
    assert AuditEvent.objects.filter(object_type="allocations.reservation", after__status="cancelled").exists()
