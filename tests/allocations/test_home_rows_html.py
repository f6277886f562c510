"""What the home's tables show: a team card's quota rows, the fleet's capacity rows and the request tables, escaped
and linked, and the reads behind them (a fixed number of queries)."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import AnonymousUser
from django.urls import reverse

from allocations.home_pages import home_overview
from allocations.models import GpuRequest, RequestStatus
from allocations.selectors import user_is_approver
from allocations.teams.quota_usage import quota_usage_by_quota
from tests.factories import (
    ClusterFactory,
    GpuRequestFactory,
    MembershipFactory,
    NodePoolFactory,
    QuotaFactory,
    TeamFactory,
    UserFactory,
)

pytestmark = pytest.mark.django_db


def _section(body: str, marker: str) -> str:
    return body.partition(marker)[2].partition("</article>")[0]


def test_a_team_cards_quota_rows_show_use_limit_and_free_in_every_scope(client, demo_org) -> None:
    pool = NodePoolFactory(cluster=ClusterFactory(name="east"), name="h100-a")
    QuotaFactory(team=demo_org.team, cluster=pool.cluster, resource_name="nvidia.com/mig-1g.10gb", limit=0)
    QuotaFactory(team=demo_org.team, node_pool=pool, resource_name="nvidia.com/mig-3g.40gb", limit=2500)
    # Over the nominal 8 (borrowed): free is 0, not negative.
    GpuRequestFactory(team=demo_org.team, status=RequestStatus.ACTIVE, resource_units=11)
    GpuRequestFactory(
        team=demo_org.team, status=RequestStatus.ACTIVE, node_pool=pool, resource_name="nvidia.com/mig-3g.40gb",
        resource_units=1234,
    )  # fmt: skip
    client.force_login(demo_org.member)

    card = _section(client.get(reverse("home")).content.decode(), 'class="card team-card"')

    assert f'<a href="/teams/{demo_org.team.slug}/">{demo_org.team.name}</a>' in card
    assert "<td>all clusters</td>" in card and "<td>cluster east</td>" in card and "<td>pool east/h100-a</td>" in card
    assert '11 / 8\n            <div class="bar" role="img" aria-label="11 used of 8 nominal">' in card
    assert '<td class="num headroom-free">0</td>' in card
    assert 'aria-label="1,234 used of 2,500 nominal"><span style="width: 49%">' in card
    assert '<td class="num headroom-free">1,266</td>' in card


def test_the_fleet_rows_link_each_pool_and_mark_what_is_over_capacity(client, demo_org) -> None:
    east = ClusterFactory(name="east")
    busy = NodePoolFactory(cluster=east, name="h100-a", node_count=1)
    GpuRequestFactory(team=demo_org.team, status=RequestStatus.ACTIVE, node_pool=busy, resource_units=20)
    client.force_login(demo_org.approver)

    fleet = _section(client.get(reverse("home")).content.decode(), 'id="home-fleet"')

    assert '<a href="/clusters/east/">east/h100-a</a>' in fleet and '<a href="/clusters/demo/">demo/h100</a>' in fleet
    assert 'class="bar over" role="img" aria-label="20 of ' in fleet
    assert fleet.count('class="bar over"') == 1


def test_the_request_tables_escape_names_and_show_an_unallocated_request_as_a_dash(client, demo_org) -> None:
    odd = GpuRequestFactory(team=demo_org.team, requester=demo_org.member, name='<b>"odd" & name</b>')
    bare = GpuRequestFactory(team=demo_org.team, requester=demo_org.member, name="bare")
    GpuRequest.objects.filter(pk=bare.pk).update(resource_name="", resource_units=0)
    GpuRequestFactory(team=demo_org.team, requester=demo_org.team_lead, name="leads", resource_units=12)
    GpuRequestFactory(team=demo_org.other_team, name="not-ours")
    client.force_login(demo_org.member)

    body = client.get(reverse("home")).content.decode()
    mine = body.partition('id="home-my-requests"')[2].partition("</section>")[0]
    others = body.partition('id="home-team-requests"')[2].partition("</section>")[0]

    assert f'<a href="/requests/{odd.pk}/">&lt;b&gt;&quot;odd&quot; &amp; name&lt;/b&gt;</a>' in mine
    assert '<span class="muted">\N{EM DASH}</span>' in mine and "leads" not in mine
    assert "leads" in others and "\N{MULTIPLICATION SIGN} 12" in others and "not-ours" not in body
    assert f'<td data-label="Team">{demo_org.team.name}</td>' in others and "ago</td>" in others


def test_the_homes_teams_carry_their_quotas_and_what_each_holds_in_two_queries(django_assert_num_queries) -> None:
    user, other = UserFactory(), UserFactory()
    vision, nlp, foreign = TeamFactory(name="Vision"), TeamFactory(name="NLP"), TeamFactory(name="Foreign")
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

    user_is_approver(user)  # the user's permissions, read once per user object (Django keeps them on it)
    with django_assert_num_queries(3):  # the teams, their quotas with what each holds, their latest requests
        rows = home_overview(user=user)["team_rows"]
        shown = [
            (row["team"].name, [(q["quota"].scope_label, q["used"], q["free"]) for q in row["quotas"]]) for row in rows
        ]

    assert [name for name, _ in shown] == ["NLP", "Vision"]
    quotas = [q["quota"] for row in rows for q in row["quotas"]]
    usage = quota_usage_by_quota(quotas=quotas)
    assert len(usage) == 3 and any(usage.values())
    assert [q["used"] for row in rows for q in row["quotas"]] == [usage[quota.pk] for quota in quotas]


def test_no_team_no_rows(django_assert_num_queries) -> None:
    user = UserFactory()
    user_is_approver(user)
    with django_assert_num_queries(1):  # the teams: none, so nothing more is read
        overview = home_overview(user=user)
    assert overview["team_rows"] == overview["my_requests"] == overview["recent_requests"] == []
    assert home_overview(user=AnonymousUser())["team_rows"] == []


@pytest.mark.parametrize("approver", [False, True])
def test_the_latest_requests_are_the_users_teams_newest_first_whatever_their_role(approver) -> None:
    from django.contrib.auth.models import Permission

    user, other = UserFactory(), UserFactory()
    if approver:  # sees every request, but the home lists their teams'
        user.user_permissions.add(Permission.objects.get(codename="approve_gpurequest"))
    vision, nlp, foreign = TeamFactory(), TeamFactory(), TeamFactory()
    MembershipFactory(user=user, team=vision)
    MembershipFactory(user=user, team=nlp)
    MembershipFactory(user=other, team=vision)
    made = []
    for i in range(36):
        team = (vision, nlp, foreign)[i % 3]
        made.append(GpuRequestFactory(team=team, requester=user if i % 2 and team != foreign else other))

    overview = home_overview(user=user)
    ours = [r for r in reversed(made) if r.team_id != foreign.pk]
    assert [r.pk for r in overview["my_requests"]] == [r.pk for r in ours if r.requester_id == user.pk][:10]
    assert [r.pk for r in overview["recent_requests"]] == [r.pk for r in ours if r.requester_id != user.pk][:10]
