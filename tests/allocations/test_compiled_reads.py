"""Reads through SQL compiled once per process (allocations.compiled_reads) answer what the ORM's querysets do."""

import pytest
from django.contrib.auth.models import AnonymousUser
from django.db.models import Prefetch

from allocations.models import Quota
from allocations.selectors import teams_of, teams_with_quotas_of
from tests.factories import MembershipFactory, NodePoolFactory, QuotaFactory, TeamFactory, UserFactory


def _orm_answer(user):
    """What the home read before: teams_of() with the quotas prefetched, cluster and pool joined."""
    quotas = Prefetch("quotas", queryset=Quota.objects.select_related("cluster", "node_pool__cluster"))
    return [(team, list(team.quotas.all())) for team in teams_of(user).prefetch_related(quotas)]


def _shape(answer):
    # Every field of each team and quota, and of the quota's cluster, pool and pool's cluster.
    def fields(obj):
        return None if obj is None else {f.attname: getattr(obj, f.attname) for f in obj._meta.concrete_fields}

    return [
        (
            fields(team),
            [
                (
                    fields(q),
                    fields(q.cluster),
                    fields(q.node_pool),
                    fields(q.node_pool.cluster if q.node_pool else None),
                    q.team.pk,
                )
                for q in quotas
            ],
        )
        for team, quotas in answer
    ]


@pytest.mark.django_db
def test_teams_with_quotas_equal_the_orms_prefetch(django_assert_num_queries):
    user, other = UserFactory(), UserFactory()
    vision, nlp, foreign = TeamFactory(name="Vision"), TeamFactory(name="NLP"), TeamFactory(name="Foreign")
    MembershipFactory(user=user, team=vision)
    MembershipFactory(user=user, team=nlp)
    MembershipFactory(user=other, team=foreign)
    pool = NodePoolFactory()
    QuotaFactory(team=vision, resource_name="nvidia.com/gpu", limit=8)  # anywhere
    QuotaFactory(team=vision, resource_name="nvidia.com/mig-1g.10gb", cluster=pool.cluster, limit=4)
    QuotaFactory(team=nlp, resource_name="nvidia.com/gpu", node_pool=pool, limit=2)
    QuotaFactory(team=foreign, resource_name="nvidia.com/gpu", limit=1)
    TeamFactory(name="Empty")

    expected = _orm_answer(user)
    assert [team.name for team, _ in expected] == ["NLP", "Vision"]
    with django_assert_num_queries(2):
        answer = teams_with_quotas_of(user)
        shape = _shape(answer)  # the related objects were read with the rows
    assert shape == _shape(expected)

    # Nothing but the SQL is kept: a quota added and a team joined show on the next read.
    QuotaFactory(team=nlp, resource_name="nvidia.com/mig-3g.40gb", limit=1)
    MembershipFactory(user=user, team=foreign)
    assert _shape(teams_with_quotas_of(user)) == _shape(_orm_answer(user))
    assert len(teams_with_quotas_of(user)) == 3


@pytest.mark.django_db
def test_no_team_no_rows(django_assert_num_queries):
    user = UserFactory()
    with django_assert_num_queries(1):
        assert teams_with_quotas_of(user) == []
    with django_assert_num_queries(0):
        assert teams_with_quotas_of(AnonymousUser()) == []


@pytest.mark.django_db
@pytest.mark.parametrize("approver", [False, True])
def test_latest_requests_equal_the_orms_rows(approver, django_assert_num_queries):
    from django.contrib.auth.models import Permission

    from allocations.selectors import HOME_REQUEST_COLUMNS, gpu_requests_visible_to, latest_requests_of_teams_of
    from tests.factories import GpuRequestFactory

    user, other = UserFactory(), UserFactory()
    if approver:
        user.user_permissions.add(Permission.objects.get(codename="approve_gpurequest"))
    vision, nlp, foreign = TeamFactory(), TeamFactory(), TeamFactory()
    MembershipFactory(user=user, team=vision)
    MembershipFactory(user=user, team=nlp)
    MembershipFactory(user=other, team=vision)
    for i in range(36):  # more than the 30 read, across both teams, the user's own and others', some not theirs
        team = (vision, nlp, foreign)[i % 3]
        GpuRequestFactory(team=team, requester=user if i % 2 and team != foreign else other)

    teams = list(teams_of(user))
    expected = list(
        gpu_requests_visible_to(user=user)
        .select_related(None)
        .values(*HOME_REQUEST_COLUMNS)
        .filter(team__in=teams)[:30]
    )
    assert len(expected) == 24
    with django_assert_num_queries(1):
        assert latest_requests_of_teams_of(user) == expected
    assert latest_requests_of_teams_of(AnonymousUser()) == []


@pytest.mark.django_db
def test_quota_usage_of_teams_of_equals_quota_usage_by_quota(django_assert_num_queries):
    from allocations.models import RequestStatus
    from allocations.selectors import quota_usage_by_quota, quota_usage_of_teams_of
    from tests.factories import GpuRequestFactory

    user, other = UserFactory(), UserFactory()
    vision, nlp, foreign = TeamFactory(), TeamFactory(), TeamFactory()
    MembershipFactory(user=user, team=vision)
    MembershipFactory(user=user, team=nlp)
    MembershipFactory(user=other, team=foreign)
    pool, other_pool = NodePoolFactory(), NodePoolFactory()
    QuotaFactory(team=vision, resource_name="nvidia.com/gpu", limit=8)
    QuotaFactory(team=vision, resource_name="nvidia.com/gpu", node_pool=pool, limit=4)
    QuotaFactory(team=nlp, resource_name="nvidia.com/gpu", cluster=pool.cluster, limit=2)
    QuotaFactory(team=foreign, resource_name="nvidia.com/gpu", limit=1)
    statuses = [RequestStatus.ACTIVE, RequestStatus.APPROVED, RequestStatus.PENDING_APPROVAL, RequestStatus.RELEASED]
    for i in range(16):
        GpuRequestFactory(
            team=(vision, nlp, foreign)[i % 3],
            status=statuses[i % 4],
            node_pool=(pool, other_pool, None)[i % 3],
            cluster=pool.cluster if i % 5 == 0 else None,
            resource_units=i + 1,
        )
    quotas = [quota for _, team_quotas in teams_with_quotas_of(user) for quota in team_quotas]
    expected = quota_usage_by_quota(quotas=quotas)
    assert len(expected) == 3 and any(expected.values())
    with django_assert_num_queries(1):
        assert quota_usage_of_teams_of(user=user, quotas=quotas) == expected
    assert quota_usage_of_teams_of(user=user, quotas=[]) == {}
