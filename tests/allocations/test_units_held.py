"""Quota scope (``quota_covers``) and what a quota's team holds against it (``with_units_held``), counted in SQL in the
same statement as the quotas (the check under a lock, the home's and the approval queue's reads), equal to the rule
counted here in Python over every request."""

from __future__ import annotations

import itertools

import pytest

from allocations.models import QUOTA_HOLDING_STATUSES, GpuRequest, NodePool, Quota, RequestStatus
from allocations.teams.quota_usage import columns, constants, quota_covers, quota_usage_by_quota, with_units_held
from allocations.teams.quotas import quota_headroom, quota_headroom_by_request
from tests.factories import ClusterFactory, GpuRequestFactory, NodePoolFactory, QuotaFactory, TeamFactory

pytestmark = pytest.mark.django_db

GPU, SLICE = "nvidia.com/gpu", "nvidia.com/mig-1g.10gb"


def counted(quotas, statuses=QUOTA_HOLDING_STATUSES) -> dict[int, int]:
    """The rule, one request at a time: the quota's team and resource, a held status, its pool if it names one, its
    cluster (the request's own or its pool's) if it names one."""
    requests = list(GpuRequest.objects.select_related("node_pool"))
    usage = {}
    for quota in quotas:
        usage[quota.pk] = sum(
            request.resource_units
            for request in requests
            if request.team_id == quota.team_id
            and request.resource_name == quota.resource_name
            and request.status in statuses
            and (quota.node_pool_id is None or request.node_pool_id == quota.node_pool_id)
            and (
                quota.cluster_id is None
                or quota.cluster_id in (request.cluster_id, request.node_pool and request.node_pool.cluster_id)
            )
        )
    return usage


@pytest.fixture
def fleet():
    """Two teams, two clusters (one with two pools), quotas in every scope and requests in every placement."""
    vision, nlp = TeamFactory(), TeamFactory()
    east, west = ClusterFactory(), ClusterFactory()
    east_a, east_b, west_a = NodePoolFactory(cluster=east), NodePoolFactory(cluster=east), NodePoolFactory(cluster=west)
    for team, resource in itertools.product((vision, nlp), (GPU, SLICE)):
        QuotaFactory(team=team, resource_name=resource, limit=50)  # team-wide
        QuotaFactory(team=team, resource_name=resource, cluster=east, limit=40)
        QuotaFactory(team=team, resource_name=resource, cluster=west, limit=30)
        QuotaFactory(team=team, resource_name=resource, node_pool=east_a, limit=20)
        QuotaFactory(team=team, resource_name=resource, node_pool=west_a, limit=10)
    statuses = [
        RequestStatus.ACTIVE,
        RequestStatus.APPROVED,
        RequestStatus.PROVISIONING,
        RequestStatus.PENDING_APPROVAL,
        RequestStatus.RELEASED,
        RequestStatus.REJECTED,
    ]
    # Placed on a pool, on a cluster only (no pool yet), on a pool and its cluster, and nowhere.
    placements = [
        (east_a, None),
        (east_b, None),
        (west_a, None),
        (None, east),
        (None, west),
        (east_a, east),
        (None, None),
    ]
    for i, ((pool, cluster), status) in enumerate(itertools.product(placements, statuses)):
        GpuRequestFactory(
            team=(vision, nlp)[i % 2],
            resource_name=(GPU, SLICE)[i // 2 % 2],
            node_pool=pool,
            cluster=cluster,
            status=status,
            resource_units=i + 1,
        )
    return vision, nlp


def test_each_quota_carries_what_the_rule_counts(fleet, django_assert_num_queries):
    with django_assert_num_queries(1):
        quotas = list(with_units_held(Quota.objects.order_by("id")))
    expected = counted(quotas)
    assert len(quotas) == 20 and len(set(expected.values())) > 5  # the scopes count different things
    assert {quota.pk: quota.units_held for quota in quotas} == expected
    assert quota_usage_by_quota(quotas=quotas) == expected
    # And what the check under a lock reads: the quotas covering a request on each pool, or on none.
    for team, pool in itertools.product(fleet, [*NodePool.objects.all(), None]):
        headroom = quota_headroom(team=team, resource_name=GPU, node_pool=pool)
        covering = [
            quota
            for quota in quotas
            if quota.team_id == team.pk
            and quota.resource_name == GPU
            and (
                (quota.cluster_id is None and quota.node_pool_id is None)
                or (pool is not None and pool.pk == quota.node_pool_id)
                or (pool is not None and pool.cluster_id == quota.cluster_id)
            )
        ]
        assert {item.quota.pk: item.in_use for item in headroom} == {quota.pk: expected[quota.pk] for quota in covering}


def test_narrowed_to_some_statuses_it_counts_those_alone(fleet):
    quotas = list(with_units_held(Quota.objects.order_by("id"), statuses=[RequestStatus.ACTIVE]))
    expected = counted(quotas, statuses=[RequestStatus.ACTIVE])
    assert {quota.pk: quota.units_held for quota in quotas} == expected
    assert quota_usage_by_quota(quotas=quotas, statuses=[RequestStatus.ACTIVE]) == expected
    assert any(expected.values())


def test_a_quota_with_nothing_held_against_it_carries_zero():
    quota = QuotaFactory(cluster=ClusterFactory())
    GpuRequestFactory(team=quota.team, status=RequestStatus.ACTIVE, resource_units=3)  # on no cluster: not its
    assert with_units_held(Quota.objects.filter(pk=quota.pk)).get().units_held == 0


def test_the_queues_headroom_of_each_request_is_its_own_quota_headroom(fleet, django_assert_num_queries):
    """``quota_headroom_by_request`` (the approval queue's rows, in one query) answers what ``quota_headroom`` (the
    check under a lock) answers for each request: the same quotas, in the same order, with the same use."""
    vision, nlp = fleet
    bare = TeamFactory()  # no quota at all
    pending = [
        GpuRequestFactory(team=team, node_pool=pool, resource_name=resource, status=RequestStatus.PENDING_APPROVAL)
        for team in (vision, nlp, bare)
        for pool in [*NodePool.objects.all(), None]
        for resource in (GPU, SLICE, "nvidia.com/mig-7g.80gb")
    ]
    expected = {
        r.pk: quota_headroom(team=r.team, resource_name=r.resource_name, node_pool=r.node_pool) for r in pending
    }
    assert sum(1 for items in expected.values() for item in items if item.in_use) >= 4  # use is really counted
    with django_assert_num_queries(1):
        answer = quota_headroom_by_request(requests=pending)
    assert answer == expected
    assert quota_headroom_by_request(requests=pending[:6]) == {r.pk: expected[r.pk] for r in pending[:6]}
    assert quota_headroom_by_request(requests=[]) == {}


def test_the_rule_itself_counts_a_quotas_requests(fleet):
    """``quota_covers`` is what the reads above and the tests' counts use: asked one quota at a time, with the
    quota's own values, it picks the requests ``counted`` sums."""
    for quota in Quota.objects.order_by("id"):
        values = {name: getattr(quota, name) for name in ("team_id", "resource_name", "node_pool_id", "cluster_id")}
        covered = GpuRequest.objects.filter(
            quota_covers(quota=constants(values), request=columns()), status__in=QUOTA_HOLDING_STATUSES
        )
        assert sum(covered.values_list("resource_units", flat=True)) == counted([quota])[quota.pk]
