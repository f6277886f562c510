"""Reads through SQL compiled once per process (allocations.compiled_reads) answer what the ORM's querysets do."""

from datetime import timedelta

import pytest
from django.contrib.auth.models import AnonymousUser
from django.db.models import Count, Prefetch, Sum
from django.utils import timezone

from allocations.compiled_reads import ID_STAND_IN, WINDOW_STAND_INS, CompiledRead
from allocations.home_reads import teams_with_quotas_of
from allocations.models import GpuRequest, Quota, Team
from allocations.selectors import teams_of
from tests.factories import (
    GpuRequestFactory,
    MembershipFactory,
    NodePoolFactory,
    QuotaFactory,
    TeamFactory,
    UserFactory,
)


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

    from allocations.home_reads import HOME_REQUEST_COLUMNS, latest_requests_of_teams_of
    from allocations.selectors import gpu_requests_visible_to
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


def _requests_across(teams, pools, statuses, *, count, resources=("nvidia.com/gpu",)):
    """``count`` requests cycling through the teams, pools (the first pool's cluster on every fifth), statuses and
    resources, the i-th holding i + 1 units."""
    from tests.factories import GpuRequestFactory

    for i in range(count):
        GpuRequestFactory(
            team=teams[i % len(teams)],
            status=statuses[i % len(statuses)],
            node_pool=pools[i % len(pools)],
            cluster=pools[0].cluster if i % 5 == 0 else None,
            resource_name=resources[i % len(resources)],
            resource_units=i + 1,
        )


@pytest.mark.django_db
def test_the_homes_quotas_carry_what_quota_usage_by_quota_counts(django_assert_num_queries):
    from allocations.models import RequestStatus
    from allocations.quota_usage import quota_usage_by_quota

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
    _requests_across((vision, nlp, foreign), (pool, other_pool, None), statuses, count=16)
    with django_assert_num_queries(2):
        quotas = [quota for _, team_quotas in teams_with_quotas_of(user) for quota in team_quotas]
    expected = quota_usage_by_quota(quotas=quotas)
    assert len(expected) == 3 and any(expected.values())
    assert {quota.pk: quota.units_held for quota in quotas} == expected


# A read with named stand-ins: a team id and a window's two datetimes in one statement.
_SUBMITTED_IN_WINDOW = CompiledRead(
    GpuRequest,
    lambda team, start, end: GpuRequest.objects.filter(
        team_id=team, submitted_at__gte=start, submitted_at__lt=end
    ).order_by("submitted_at", "id"),
    stand_ins={"team": ID_STAND_IN, **WINDOW_STAND_INS},
)


@pytest.mark.django_db
def test_named_stand_ins_each_get_their_own_value(django_assert_num_queries):
    vision, nlp = TeamFactory(), TeamFactory()
    t0 = timezone.now().replace(microsecond=0) - timedelta(days=3)
    hours = [t0 + timedelta(hours=n) for n in range(4)]
    for hour in hours:
        GpuRequestFactory(team=vision, submitted_at=hour)
    GpuRequestFactory(team=nlp, submitted_at=hours[1])

    def orm(team, start, end):
        return list(
            GpuRequest.objects.filter(team=team, submitted_at__gte=start, submitted_at__lt=end).order_by(
                "submitted_at", "id"
            )
        )

    for team, start, end in ((vision, hours[1], hours[3]), (nlp, hours[0], hours[2]), (vision, hours[0], t0)):
        expected = orm(team, start, end)
        with django_assert_num_queries(1):
            found = _SUBMITTED_IN_WINDOW.instances(team=team.pk, start=start, end=end)
        assert [(r.pk, r.team_id, r.submitted_at) for r in found] == [
            (r.pk, r.team_id, r.submitted_at) for r in expected
        ]
    # The answers a swapped value would give differ from the right one: the window's ends, or the team.
    expected = orm(vision, hours[1], hours[3])
    assert len(expected) == 2 and orm(vision, hours[3], hours[1]) == [] and orm(nlp, hours[1], hours[3]) != expected
    assert _SUBMITTED_IN_WINDOW.first(team=vision.pk, start=hours[1], end=hours[3]) == expected[0]
    assert _SUBMITTED_IN_WINDOW.first(team=vision.pk, start=hours[3], end=hours[1]) is None


def test_named_stand_ins_are_called_by_their_names():
    with pytest.raises(TypeError, match="by name: team, start, end"):
        _SUBMITTED_IN_WINDOW.values(1)
    with pytest.raises(TypeError, match="by name"):
        _SUBMITTED_IN_WINDOW.values(team=1, start=WINDOW_STAND_INS["start"])
    with pytest.raises(TypeError, match="one value"):
        CompiledRead(Team, lambda pk: Team.objects.filter(pk=pk), stand_in=ID_STAND_IN).values(pk=1)
    with pytest.raises(TypeError, match="not both"):
        CompiledRead(Team, lambda pk: Team.objects.filter(pk=pk), stand_in=ID_STAND_IN, stand_ins={"pk": 1})


@pytest.mark.django_db
def test_stand_ins_must_be_distinct_and_taken():
    same = CompiledRead(
        GpuRequest,
        lambda start, end: GpuRequest.objects.filter(submitted_at__gte=start, submitted_at__lt=end),
        stand_ins={"start": WINDOW_STAND_INS["start"], "end": WINDOW_STAND_INS["start"]},
    )
    with pytest.raises(ValueError, match="not distinct"):
        same.values(start=timezone.now(), end=timezone.now())
    unused = CompiledRead(
        GpuRequest,
        lambda team, start, end: GpuRequest.objects.filter(team_id=team),
        stand_ins={"team": ID_STAND_IN, **WINDOW_STAND_INS},
    )
    with pytest.raises(ValueError, match="does not take end, start"):
        unused.values(team=1, start=timezone.now(), end=timezone.now())


@pytest.mark.django_db
def test_values_list_rows_answer_what_the_queryset_does():
    from django.db.models import F, Value
    from django.db.models.functions import Concat

    from allocations.compiled_reads import values_list_rows

    now = timezone.now()
    for n in range(3):
        GpuRequestFactory(
            submitted_at=now - timedelta(hours=n, microseconds=n), expires_at=None if n else now, command=["a", n]
        )
    queryset = GpuRequest.objects.annotate(label=Concat(F("name"), Value("!"))).order_by("pk")
    fields = ("label", "pk", "submitted_at", "expires_at", "gpu_memory_gb", "command", "team__slug", "created_at")
    assert values_list_rows(queryset.values_list(*fields)) == list(queryset.values_list(*fields))
    with timezone.override("Asia/Kolkata"):
        assert values_list_rows(queryset.values_list(*fields)) == list(queryset.values_list(*fields))
    assert values_list_rows(queryset.none().values_list(*fields)) == []


@pytest.mark.django_db
def test_quota_headroom_by_request_equals_each_requests_own_headroom(django_assert_num_queries):
    from allocations.models import RequestStatus
    from allocations.quotas import quota_headroom, quota_headroom_by_request
    from tests.factories import GpuRequestFactory

    vision, nlp, foreign, bare = TeamFactory(), TeamFactory(), TeamFactory(), TeamFactory()
    pool, other_pool = NodePoolFactory(), NodePoolFactory()
    QuotaFactory(team=vision, resource_name="nvidia.com/gpu", limit=8)
    QuotaFactory(team=vision, resource_name="nvidia.com/gpu", node_pool=pool, limit=4)
    QuotaFactory(team=vision, resource_name="nvidia.com/mig-1g.10gb", limit=7)
    QuotaFactory(team=nlp, resource_name="nvidia.com/gpu", cluster=pool.cluster, limit=2)
    QuotaFactory(team=foreign, resource_name="nvidia.com/gpu", limit=1)
    statuses = [RequestStatus.ACTIVE, RequestStatus.APPROVED, RequestStatus.PROVISIONING, RequestStatus.RELEASED]
    resources = ("nvidia.com/gpu", "nvidia.com/mig-1g.10gb")
    _requests_across((vision, nlp, foreign), (pool, other_pool, None), statuses, count=24, resources=resources)
    # The pending requests of the queue: every team (one with no quota), pool, cluster and resource.
    pending = [
        GpuRequestFactory(team=team, node_pool=node_pool, resource_name=resource)
        for team in (vision, nlp, bare)
        for node_pool in (pool, other_pool, None)
        for resource in ("nvidia.com/gpu", "nvidia.com/mig-1g.10gb")
    ]
    expected = {
        r.pk: quota_headroom(team=r.team, resource_name=r.resource_name, node_pool=r.node_pool) for r in pending
    }
    assert sum(1 for items in expected.values() for item in items if item.in_use) >= 4  # usage is really counted
    for _ in range(7):  # past the prepare threshold: the prepared statement answers as the first run did
        with django_assert_num_queries(1):
            answer = quota_headroom_by_request(requests=pending)
        assert answer == expected
    # Some of them: the same answers.
    assert quota_headroom_by_request(requests=pending[:6]) == {r.pk: expected[r.pk] for r in pending[:6]}
    assert quota_headroom_by_request(requests=[]) == {}


@pytest.mark.django_db
def test_the_queues_quota_read_is_planned_once_for_any_teams(django_assert_num_queries):
    """PostgreSQL keeps one plan for the statement whatever teams and resources it is given (``id_among``): with
    ``team_id = ANY(ids)`` it planned the statement again on every run (issue #15)."""
    from django.db import connection

    from allocations.quotas import quota_headroom_by_request
    from tests.factories import GpuRequestFactory

    teams = [TeamFactory() for _ in range(4)]
    for team in teams:
        QuotaFactory(team=team, resource_name="nvidia.com/gpu", limit=4)
        QuotaFactory(team=team, resource_name="nvidia.com/gpu", node_pool=NodePoolFactory(), limit=2)
    pending = [GpuRequestFactory(team=team) for team in teams]
    # A history, as a portal in use has: what each quota's subquery looks through (the planner's costs scale with it).
    history = [GpuRequest(**{**_columns_of(pending[n % 4]), "status": "released"}) for n in range(3000)]
    GpuRequest.objects.bulk_create(history, batch_size=1000)
    with connection.cursor() as cursor:  # statistics, as autovacuum keeps them: the planner's estimates use them
        cursor.execute("ANALYZE allocations_quota, allocations_gpurequest, allocations_nodepool, allocations_cluster")
    for run in range(20):  # one team, two, three, four: lists of every length
        requests = pending[: run % 4 + 1]
        with django_assert_num_queries(1):
            headroom = quota_headroom_by_request(requests=requests)
        assert all(len(headroom[request.pk]) == 1 for request in requests)  # the team-wide quota (no pool asked)
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT generic_plans, custom_plans FROM pg_prepared_statements WHERE statement LIKE %s",
            ['%units_held%FROM "allocations_quota"%'],
        )
        [(generic, custom)] = cursor.fetchall()
    # Prepared from the sixth run on: five planned for their values, then one plan kept for any.
    assert custom <= 5 and generic >= 10


def _columns_of(request: GpuRequest) -> dict:
    return {
        f.attname: getattr(request, f.attname)
        for f in GpuRequest._meta.concrete_fields
        if not f.primary_key and not f.generated
    }


_TEAMS_WITH_QUOTA_COUNT = CompiledRead(
    Team,
    lambda: Team.objects.annotate(quota_count=Count("quotas"), limits=Sum("quotas__limit")).order_by("name"),
    stand_ins={},
)


@pytest.mark.django_db
def test_a_compiled_reads_instances_carry_the_querysets_annotations():
    vision, nlp, _ = TeamFactory(name="Vision"), TeamFactory(name="NLP"), TeamFactory(name="Idle")
    QuotaFactory(team=vision, limit=8)
    QuotaFactory(team=vision, resource_name="nvidia.com/mig-1g.10gb", limit=3)
    QuotaFactory(team=nlp, limit=2)
    expected = [(t.pk, t.quota_count, t.limits) for t in _TEAMS_WITH_QUOTA_COUNT._build()]
    assert [(t.pk, t.quota_count, t.limits) for t in _TEAMS_WITH_QUOTA_COUNT.instances()] == expected
    assert [count for _, count, _ in expected] == [0, 1, 2]


@pytest.mark.django_db
def test_json_columns_and_timestamps_read_as_the_orm_reads_them():
    """Compiled reads parse plain JSON columns with orjson (compiled_reads.through_orjson) and timestamps with
    psycopg's own loader: the same values as the ORM's json.loads and Django's loader (an integer over 64 bits, tiny,
    long and huge floats and any text included; the same time zone object)."""
    spec = {"big": 2**70, "tiny": 1.5e-7, "long": 0.1 + 0.2, "text": 'é\u2028"\\/\t', "empty": {}, "none": None}
    made = GpuRequestFactory(
        spec=spec, command=["python", 2**64, 1e300, -(2**63)], manifests=[], submitted_at=timezone.now()
    )
    read = CompiledRead(GpuRequest, lambda pk: GpuRequest.objects.filter(pk=pk), stand_in=ID_STAND_IN)
    for _ in range(6):  # past psycopg's prepare threshold
        found = read.first(made.pk)
        orm = GpuRequest.objects.get(pk=made.pk)
        assert (found.spec, found.command, found.manifests) == (orm.spec, orm.command, orm.manifests)
        assert type(found.spec["big"]) is int and found.spec == spec
        assert repr((found.created_at, found.submitted_at)) == repr((orm.created_at, orm.submitted_at))
