"""The request lifecycle: every allowed transition works and is logged; every other one is refused, changing nothing."""

from itertools import product

import pytest

from allocations.lifecycle import InvalidTransition, gpu_request_transition
from allocations.models import ALLOWED_TRANSITIONS, RequestEvent, RequestStatus
from tests.factories import GpuRequestFactory, UserFactory

ALL_STATUSES = list(RequestStatus.values)
ALLOWED = [(src, dst) for src, targets in ALLOWED_TRANSITIONS.items() for dst in sorted(targets)]
REFUSED = [(src, dst) for src, dst in product(ALL_STATUSES, ALL_STATUSES) if dst not in ALLOWED_TRANSITIONS[src]]


def test_every_status_has_a_rule() -> None:
    assert set(ALLOWED_TRANSITIONS) == set(ALL_STATUSES)
    assert ALLOWED
    assert REFUSED


@pytest.mark.django_db
@pytest.mark.parametrize(("from_status", "to_status"), ALLOWED)
def test_allowed_transition_changes_status_and_writes_one_event(from_status: str, to_status: str) -> None:
    actor = UserFactory()
    request = GpuRequestFactory(status=from_status)

    gpu_request_transition(request=request, to_status=to_status, acting_user=actor, comment="because")

    request.refresh_from_db()
    assert request.status == to_status
    events = list(RequestEvent.objects.filter(request=request))
    assert len(events) == 1
    event = events[0]
    assert (event.from_status, event.to_status, event.actor, event.comment) == (
        from_status,
        to_status,
        actor,
        "because",
    )
    assert event.actor_label == actor.username


@pytest.mark.django_db
@pytest.mark.parametrize(("from_status", "to_status"), REFUSED)
def test_refused_transition_raises_and_changes_nothing(from_status: str, to_status: str) -> None:
    request = GpuRequestFactory(status=from_status)
    before = request.updated_at

    with pytest.raises(InvalidTransition) as excinfo:
        gpu_request_transition(request=request, to_status=to_status, acting_user=None)

    message = str(excinfo.value)
    assert f"is {from_status}" in message
    assert f"cannot move to {to_status}" in message
    request.refresh_from_db()
    assert request.status == from_status
    assert request.updated_at == before
    assert not RequestEvent.objects.filter(request=request).exists()


@pytest.mark.django_db
def test_unknown_status_is_refused() -> None:
    request = GpuRequestFactory(status=RequestStatus.PENDING_APPROVAL)
    with pytest.raises(InvalidTransition):
        gpu_request_transition(request=request, to_status="teleported", acting_user=None)
    request.refresh_from_db()
    assert request.status == RequestStatus.PENDING_APPROVAL


@pytest.mark.django_db
def test_lifecycle_sets_timestamps_and_system_actor_label() -> None:
    request = GpuRequestFactory(status=RequestStatus.DRAFT)
    for status in ("pending_approval", "approved", "provisioning", "active", "released"):
        gpu_request_transition(request=request, to_status=status, acting_user=None, actor_label="policy:test")
    request.refresh_from_db()
    assert request.submitted_at <= request.approved_at <= request.activated_at <= request.ended_at
    labels = set(RequestEvent.objects.filter(request=request).values_list("actor_label", flat=True))
    assert labels == {"policy:test"}
    assert [e.to_status for e in request.events.all()] == [
        "pending_approval",
        "approved",
        "provisioning",
        "active",
        "released",
    ]
