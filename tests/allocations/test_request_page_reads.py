"""A request's page reads its extensions and events newest first (extensions) and in time order (events), with who
asked and decided, in one query each and none after."""

from __future__ import annotations

from datetime import timedelta
from decimal import Decimal

import pytest
from django.utils import timezone

from allocations.models import AllocationExtension, ExtensionStatus, RequestEvent, RequestStatus
from allocations.requests.pages import gpu_request_extension_rows
from allocations.selectors import gpu_request_detail
from tests.factories import DemoOrg, GpuRequestFactory

pytestmark = pytest.mark.django_db


def _extension_shape(extension: AllocationExtension) -> tuple:
    decided_by = extension.decided_by
    return (
        extension.pk, extension.status, extension.hours, extension.reason, extension.decided_at,
        extension.requested_by.username, decided_by.username if decided_by else None,
    )  # fmt: skip


def test_the_extension_rows_are_the_orms_newest_first_with_who_asked_and_decided(
    demo_org: DemoOrg, django_assert_num_queries
) -> None:
    request = GpuRequestFactory(team=demo_org.team, requester=demo_org.member, status=RequestStatus.ACTIVE)
    other = GpuRequestFactory(team=demo_org.team, status=RequestStatus.ACTIVE)
    decided = {"decided_by": demo_org.approver, "decided_at": timezone.now()}
    for hours, status, extra in [
        (4, ExtensionStatus.APPROVED, decided),
        (8, ExtensionStatus.REJECTED, decided),
        (2, ExtensionStatus.PENDING, {}),
    ]:
        AllocationExtension.objects.create(
            request=request, requested_by=demo_org.member, hours=Decimal(hours), reason=f"{hours} h", status=status,
            **extra,
        )  # fmt: skip
    AllocationExtension.objects.create(request=other, requested_by=demo_org.member, hours=Decimal(1), reason="x")
    # Two created in the same instant are ordered by id, as AllocationExtension's ordering says.
    AllocationExtension.objects.filter(request=request).update(created_at=timezone.now() - timedelta(hours=1))
    expected = [_extension_shape(e) for e in request.extensions.select_related("requested_by", "decided_by")]
    assert [shape[0] for shape in expected] == sorted(shape[0] for shape in expected)[::-1]
    gpu_request_extension_rows(user=demo_org.outsider, request=request)  # the user's permissions, read once
    for _ in range(2):
        with django_assert_num_queries(1):
            rows = gpu_request_extension_rows(user=demo_org.outsider, request=request)
            shapes = [_extension_shape(row["extension"]) for row in rows]
            assert all(row["extension"].request is request for row in rows)
        assert shapes == expected
    decidable = [row["decide"] for row in gpu_request_extension_rows(user=demo_org.approver, request=request)]
    assert decidable == [True, False, False]  # only the pending one
    assert gpu_request_extension_rows(user=demo_org.member, request=GpuRequestFactory(team=demo_org.team)) == []


def test_the_events_are_the_orms_in_time_order_and_point_back_to_the_request(
    demo_org: DemoOrg, django_assert_num_queries
) -> None:
    request = GpuRequestFactory(team=demo_org.team, requester=demo_org.member)
    at = timezone.now()
    timeline = [(5, RequestStatus.APPROVED), (0, RequestStatus.PENDING_APPROVAL), (5, RequestStatus.ACTIVE)]
    for minutes, status in timeline:
        event = RequestEvent.objects.create(request=request, actor_label="alice", to_status=status)
        RequestEvent.objects.filter(pk=event.pk).update(at=at + timedelta(minutes=minutes))  # auto_now_add otherwise
    RequestEvent.objects.create(request=GpuRequestFactory(team=demo_org.team), actor_label="bob", to_status="draft")
    expected = list(RequestEvent.objects.filter(request=request).values_list("pk", "to_status", "at"))
    assert [status for _, status, _ in expected] == ["pending_approval", "approved", "active"]  # by time, then id
    for _ in range(2):
        found = gpu_request_detail(user=demo_org.member, pk=request.pk)
        with django_assert_num_queries(0):
            events = list(found.events.all())
            assert all(event.request is found for event in events)
        assert [(e.pk, e.to_status, e.at) for e in events] == expected
    # The kept events are the relation's queryset: asking it something new reads the database, for this request only.
    assert list(found.events.filter(to_status="active").values_list("pk", flat=True)) == [expected[2][0]]
    assert found.events.count() == 3
