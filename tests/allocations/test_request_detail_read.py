"""A request's page reads it with its role and events (allocations.selectors.gpu_request_detail): the visible
request, joined, for every role that may see it, in two queries, and nothing for those who may not see it."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import AnonymousUser
from django.db.models import OuterRef, Subquery

from allocations.models import GpuRequest, Membership, RequestEvent, RequestStatus
from allocations.selectors import gpu_request_detail, gpu_requests_visible_to
from tests.factories import DemoOrg, GpuRequestFactory

pytestmark = pytest.mark.django_db


def _orm_detail(user, pk):
    """What the page read before: the visible queryset, joined, annotated with the role, its events prefetched."""
    role = Membership.objects.filter(user=user, team=OuterRef("team_id")).order_by().values("role")[:1]
    return (
        gpu_requests_visible_to(user=user)
        .select_related("node_pool__cluster")
        .prefetch_related("events")
        .annotate(viewer_role=Subquery(role))
        .get(pk=pk)
    )


def _shape(request: GpuRequest):
    def fields(obj):
        # The columns read (a deferred one, the spec's text, would be read on access by either).
        if obj is None:
            return None
        deferred = obj.get_deferred_fields()
        return {f.attname: getattr(obj, f.attname) for f in obj._meta.concrete_fields if f.attname not in deferred}

    related = [request.team, request.requester, request.sla_tier, request.cluster, request.node_pool]
    pool_cluster = request.node_pool.cluster if request.node_pool else None
    events = [(e.pk, e.to_status, e.comment) for e in request.events.all()]
    return fields(request), [fields(obj) for obj in related], fields(pool_cluster), request.viewer_role, events


@pytest.mark.parametrize("role", ["member", "team_lead", "approver", "platform_admin"])
def test_the_detail_is_what_the_orm_reads_for_each_role_that_may_see_it(
    demo_org: DemoOrg, role, django_assert_num_queries
):
    user = demo_org.user(role)
    on_pool = GpuRequestFactory(team=demo_org.team, node_pool=demo_org.pool, cluster=demo_org.cluster)
    bare = GpuRequestFactory(team=demo_org.team, sla_tier=None, status=RequestStatus.DRAFT)
    for status in (RequestStatus.PENDING_APPROVAL, RequestStatus.APPROVED):
        RequestEvent.objects.create(request=on_pool, actor_label="alice", to_status=status, comment=status)
    for request in (on_pool, bare):
        expected = _shape(_orm_detail(user, request.pk))
        with django_assert_num_queries(2):  # the request with its role, then its events
            found = gpu_request_detail(user=user, pk=request.pk)
            shape = _shape(found)
        assert shape == expected
        assert found.get_deferred_fields() == {"spec_text"}
    assert _shape(gpu_request_detail(user=user, pk=on_pool.pk))[4] != []


def test_no_one_reads_a_request_they_may_not_see(demo_org: DemoOrg):
    theirs = GpuRequestFactory(team=demo_org.other_team)
    mine = GpuRequestFactory(team=demo_org.team)
    for _ in range(7):
        with pytest.raises(GpuRequest.DoesNotExist):
            gpu_request_detail(user=demo_org.outsider, pk=mine.pk)
        with pytest.raises(GpuRequest.DoesNotExist):
            gpu_request_detail(user=demo_org.member, pk=theirs.pk)
    assert gpu_request_detail(user=demo_org.member, pk=mine.pk).viewer_role == "member"
    assert gpu_request_detail(user=demo_org.approver, pk=theirs.pk).viewer_role is None
    for pk in (2**63, -(2**63) - 1, 0, mine.pk + 1000):
        with pytest.raises(GpuRequest.DoesNotExist):
            gpu_request_detail(user=demo_org.approver, pk=pk)
    with pytest.raises(GpuRequest.DoesNotExist):
        gpu_request_detail(user=AnonymousUser(), pk=mine.pk)
