"""held_span_rows (the plain rows a month's chargeback curves read) gives exactly allocation_intervals' spans: the
same requests, starts and ends, in the same order, and the same spec keys, for every way a span starts and ends."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import pytest

from allocations.models import GpuRequest, RequestEvent, RequestStatus
from allocations.requests.held_intervals import allocation_intervals, held_span_rows, windows_held
from tests.factories import GpuRequestFactory

pytestmark = pytest.mark.django_db

START = datetime(2026, 11, 1, tzinfo=UTC)
END = datetime(2026, 12, 1, tzinfo=UTC)


def request(org, *, team=None, status=RequestStatus.ACTIVE, **columns) -> GpuRequest:
    made = GpuRequestFactory(
        team=team or org.team, requester=org.member, status=status, cluster=org.cluster, node_pool=org.pool
    )
    GpuRequest.objects.filter(pk=made.pk).update(**columns)
    return made


def without_nulls(spec: dict) -> dict:
    return {key: value for key, value in spec.items() if value is not None}


def test_held_span_rows_are_allocation_intervals_spans(demo_org) -> None:
    held_before = request(demo_org, activated_at=START - timedelta(days=3))
    pending_pods = request(demo_org, status=RequestStatus.PROVISIONING, activated_at=None)
    RequestEvent.objects.create(request=pending_pods, actor_label="t", to_status=RequestStatus.PROVISIONING)
    RequestEvent.objects.filter(request=pending_pods).update(at=START + timedelta(days=2))
    failed_in_month = request(
        demo_org,
        status=RequestStatus.FAILED,
        activated_at=START + timedelta(days=1),
        updated_at=START + timedelta(days=4),
    )
    request(demo_org, status=RequestStatus.FAILED, activated_at=START - timedelta(days=9), updated_at=START)
    request(demo_org, status=RequestStatus.RELEASED, activated_at=START - timedelta(days=9), ended_at=START)
    released = request(
        demo_org,
        status=RequestStatus.RELEASED,
        activated_at=START + timedelta(hours=5),
        ended_at=START + timedelta(hours=9),
    )
    elsewhere = request(demo_org, team=demo_org.other_team, activated_at=START + timedelta(days=6))

    intervals = allocation_intervals(start=START, end=END)
    rows = held_span_rows(start=START, end=END, fields=("pk", "held_spec_json"))

    assert [row[0][0] for row in rows] == [i.request.pk for i in intervals]
    assert [(row[1], row[2]) for row in rows] == [(i.start, i.end) for i in intervals]
    # The same keys (a null and a missing key read alike: allocation_spec_of reads spec.get(key)).
    assert [without_nulls(json.loads(row[0][1])) for row in rows] == [
        without_nulls(i.request.held_spec) for i in intervals
    ]
    assert {i.request.pk for i in intervals} == {
        held_before.pk, pending_pods.pk, failed_in_month.pk, released.pk, elsewhere.pk
    }  # fmt: skip
    assert {row[0][0]: (row[1], row[2]) for row in rows}[pending_pods.pk] == (START + timedelta(days=2), None)
    only_team = held_span_rows(start=START, end=END, fields=("pk",), teams=[demo_org.team])
    assert elsewhere.pk not in {row[0][0] for row in only_team}


def test_both_reads_give_each_spec_key_as_the_spec_holds_it(demo_org) -> None:
    """A key's JSON null is None (never the text "null"), a missing key None, an object an object, a spec that is
    no object no keys: the same in held_span_rows' JSON text and in allocation_intervals' held_spec."""
    from django.db.models import JSONField, Value

    specs = {
        "null_key": {"strategy": "dedicated", "mig_profile": None, "quantity": 2, "rationale": {"a": 1}},
        "object_key": {"strategy": "mig", "node_selector": {"pool": "a100"}},
        "empty": {},
        "json_null": Value(None, output_field=JSONField()),
    }
    made = {name: request(demo_org, activated_at=START + timedelta(days=1), spec=spec) for name, spec in specs.items()}
    rows = {
        row[0][0]: json.loads(row[0][1])
        for row in held_span_rows(start=START, end=END, fields=("pk", "held_spec_json"))
    }
    held = {i.request.pk: i.request.held_spec for i in allocation_intervals(start=START, end=END)}

    for spec in (rows, held):
        assert spec[made["null_key"].pk].get("mig_profile") is None
        assert spec[made["null_key"].pk]["strategy"] == "dedicated" and spec[made["null_key"].pk]["quantity"] == 2
        assert "rationale" not in spec[made["null_key"].pk]
        assert spec[made["object_key"].pk]["node_selector"] == {"pool": "a100"}
        assert without_nulls(spec[made["empty"].pk]) == {} == without_nulls(spec[made["json_null"].pk])
    assert {pk: without_nulls(spec) for pk, spec in rows.items()} == {
        pk: without_nulls(spec) for pk, spec in held.items()
    }
    assert "null" not in [value for spec in (*rows.values(), *held.values()) for value in spec.values()]


def _moved(request_obj: GpuRequest, from_status: str, to_status: str, at: datetime) -> None:
    event = RequestEvent.objects.create(
        request=request_obj, actor_label="system:idle-reclaim", from_status=from_status, to_status=to_status
    )
    RequestEvent.objects.filter(pk=event.pk).update(at=at)


def test_a_suspension_is_not_held_and_a_resume_holds_again(demo_org) -> None:
    """Billing stops at the suspension and starts again when the request is resumed (to provisioning)."""
    activated = START + timedelta(days=1)
    suspended_at = START + timedelta(days=2)
    resumed_at = START + timedelta(days=3)
    resumed = request(demo_org, activated_at=activated)
    _moved(resumed, RequestStatus.ACTIVE, RequestStatus.SUSPENDED, suspended_at)
    _moved(resumed, RequestStatus.SUSPENDED, RequestStatus.PROVISIONING, resumed_at)
    # A timeline note (an idle warning) goes from and to the same status: it splits nothing.
    _moved(resumed, RequestStatus.ACTIVE, RequestStatus.ACTIVE, START + timedelta(days=4))
    still = request(demo_org, status=RequestStatus.SUSPENDED, activated_at=activated)
    _moved(still, RequestStatus.ACTIVE, RequestStatus.SUSPENDED, suspended_at)

    intervals = allocation_intervals(start=START, end=END)
    spans = [(i.request.pk, i.start, i.end) for i in intervals]
    assert spans == [
        (resumed.pk, activated, suspended_at),
        (resumed.pk, resumed_at, None),
        (still.pk, activated, suspended_at),
    ]
    rows = held_span_rows(start=START, end=END, fields=("pk",))
    assert [(row[0][0], row[1], row[2]) for row in rows] == spans
    # A window inside the suspension holds nothing.
    inside = held_span_rows(start=suspended_at, end=resumed_at, fields=("pk",))
    assert inside == []


def test_windows_held_says_which_windows_any_request_held_in(demo_org) -> None:
    """As held_span_rows: a suspension that covers a whole window leaves it unheld, however the requests are read
    (a chunk at a time, down to one)."""
    weeks = [(START + timedelta(weeks=n), START + timedelta(weeks=n + 1)) for n in range(4)]
    assert windows_held(weeks) == [False] * 4
    suspended = request(demo_org, activated_at=START + timedelta(days=1))
    _moved(suspended, RequestStatus.ACTIVE, RequestStatus.SUSPENDED, START + timedelta(days=2))
    _moved(suspended, RequestStatus.SUSPENDED, RequestStatus.ACTIVE, START + timedelta(days=20))
    for _ in range(3):
        request(
            demo_org,
            status=RequestStatus.RELEASED,
            activated_at=START + timedelta(days=22),
            ended_at=START + timedelta(days=23),
        )
    expected = [
        any(
            began < end and (finished is None or finished > start)
            for _, began, finished in held_span_rows(start=start, end=end, fields=())
        )
        for start, end in weeks
    ]
    assert expected == [True, False, True, True]  # suspended from the 3rd to the 21st: the second week is unheld
    assert windows_held(weeks, chunk=1) == expected
    assert windows_held(weeks) == expected
