"""The pages say what Kueue mode means for a request: the partial-admission warning without Kueue, the gang note with
it, the borrowed badge, and the team's borrowing and lending limits under its quota bars."""

from __future__ import annotations

import pytest

from allocations.models import ClusterScheduler, Quota, RequestStatus
from tests.factories import GpuRequestFactory, QuotaFactory, dedicated_spec

pytestmark = pytest.mark.django_db

WARNING = "Partial admission can deadlock GPUs."


def page(client, user, path: str) -> str:
    client.force_login(user)
    response = client.get(path)
    assert response.status_code == 200
    return response.content.decode()


def request_for(org, *, replicas: int, workload_type: str = "training", **fields):
    return GpuRequestFactory(
        team=org.team,
        requester=org.member,
        workload_type=workload_type,
        replicas=replicas,
        cluster=org.cluster,
        node_pool=org.pool,
        spec=dedicated_spec(replicas=replicas),
        resource_units=replicas,
        **fields,
    )


def test_without_kueue_a_distributed_job_warns_of_partial_admission(client, demo_org) -> None:
    gang = request_for(demo_org, replicas=4)
    html = page(client, demo_org.member, f"/requests/{gang.pk}/")
    assert WARNING in html and "4 pods must all run" in html
    for single in (
        request_for(demo_org, replicas=1),
        request_for(demo_org, replicas=3, workload_type="batch_inference"),
    ):
        assert WARNING not in page(client, demo_org.member, f"/requests/{single.pk}/")


def test_with_kueue_the_page_says_the_job_is_admitted_all_or_nothing(client, demo_org) -> None:
    demo_org.cluster.scheduler = ClusterScheduler.KUEUE
    demo_org.cluster.save()
    html = page(client, demo_org.member, f"/requests/{request_for(demo_org, replicas=2).pk}/")
    assert WARNING not in html
    assert "Kueue admits the Job all-or-nothing" in html and "ClusterQueue <code>vision</code>" in html


def test_a_borrowed_allocation_is_marked_on_its_page_and_the_team_page(client, demo_org) -> None:
    Quota.objects.filter(team=demo_org.team).delete()
    QuotaFactory(team=demo_org.team, cluster=demo_org.cluster, limit=2, borrowing_limit=2, lending_limit=1)
    borrowed = request_for(
        demo_org, replicas=3, status=RequestStatus.ACTIVE, borrowed=True, workload_type="development"
    )
    html = page(client, demo_org.member, f"/requests/{borrowed.pk}/")
    assert 'id="borrowed-note"' in html and "beyond team vision's nominal quota" in html
    team = page(client, demo_org.member, "/teams/vision/")
    assert "1 borrowed" in team
    assert "tier 3 may borrow 2 more · lends at most 1" in team
    assert team.count("The nominal quota is guaranteed.") == 1
    # A team without borrowing sees neither.
    other = page(client, demo_org.outsider, "/teams/nlp/")
    assert "may borrow" not in other and "The nominal quota is guaranteed." not in other
