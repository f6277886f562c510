"""The approval queue: pending requests and extensions a page at a time, by team, and reviewing from it."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone

from allocations.approvals.pending_queues import (
    QUEUE_PAGE_SIZE,
    pending_requests_queue,
    pending_work_by_team,
)
from allocations.models import AllocationExtension, GpuRequest, Quota, RequestStatus
from allocations.requests.extension_services import allocation_extension_request
from allocations.requests.services import gpu_request_submit
from tests.factories import ROLES, DemoOrg, GpuRequestFactory, MembershipFactory

pytestmark = pytest.mark.django_db


def client_for(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def submit(org: DemoOrg, user=None, **profile) -> GpuRequest:
    data = {"workload_type": "training", "gpu_memory_gb": 40, **profile}
    return gpu_request_submit(
        command=["python", "main.py"], acting_user=user or org.member, team=org.team, name="job", profile_data=data
    )


def messages_of(response) -> list[str]:
    return [str(m) for m in response.context["messages"]] if response.context else []


# --- Reviewing from the queue ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("role", ROLES)
def test_approval_queue_by_role(demo_org: DemoOrg, role: str) -> None:
    submit(demo_org)
    response = client_for(demo_org.user(role)).get(reverse("allocations:approvals"))
    assert response.status_code == (200 if role in ("approver", "platform_admin") else 403)


def test_approval_queue_lists_pending_oldest_first_with_headroom(demo_org: DemoOrg) -> None:
    first, second = submit(demo_org), submit(demo_org, user=demo_org.team_lead)
    GpuRequest.objects.filter(pk=second.pk).update(submitted_at=timezone.now() - timedelta(days=1))
    response = client_for(demo_org.approver).get(reverse("allocations:approvals"))
    rows = response.context["rows"]
    assert [row["request"].pk for row in rows] == [second.pk, first.pk]
    assert rows[0]["headroom"][0].quota.limit == 8
    html = response.content.decode()
    assert "0 / 8 used" in html and "csrfmiddlewaretoken" in html


def test_approval_queue_reads_every_teams_month_at_once(demo_org: DemoOrg) -> None:
    # The budget column of each pending request needs its team's month to date: read for all teams together, so a
    # second team's requests add no query (two queries per team before).
    client = client_for(demo_org.approver)
    GpuRequestFactory(team=demo_org.team, requester=demo_org.member, status=RequestStatus.PENDING_APPROVAL)
    client.get(reverse("allocations:approvals"))
    with CaptureQueriesContext(connection) as one_team:
        assert client.get(reverse("allocations:approvals")).status_code == 200
    GpuRequestFactory(team=demo_org.other_team, requester=demo_org.outsider, status=RequestStatus.PENDING_APPROVAL)
    client.get(reverse("allocations:approvals"))  # the second team's month curves are built once, then kept
    with CaptureQueriesContext(connection) as two_teams:
        html = client.get(reverse("allocations:approvals")).content.decode()
    assert len(two_teams.captured_queries) == len(one_team.captured_queries)
    assert html.count('class="budget-cell"') == 2


def test_approval_queue_empty_state(demo_org: DemoOrg) -> None:
    html = client_for(demo_org.approver).get(reverse("allocations:approvals")).content.decode()
    assert "Nothing waits for approval" in html


def review(org: DemoOrg, gpu_request: GpuRequest, decision: str, comment: str = "", user=None):
    url = reverse("allocations:approval-review", kwargs={"pk": gpu_request.pk})
    return client_for(user or org.approver).post(url, {"decision": decision, "comment": comment}, follow=True)


def test_approve_one(demo_org: DemoOrg) -> None:
    gpu_request = submit(demo_org)
    response = review(demo_org, gpu_request, "approve", "ok")
    gpu_request.refresh_from_db()
    assert gpu_request.status == RequestStatus.APPROVED
    assert any("was approved" in m for m in messages_of(response))


def test_reject_needs_a_comment(demo_org: DemoOrg) -> None:
    gpu_request = submit(demo_org)
    response = review(demo_org, gpu_request, "reject")
    assert any("Say why" in m for m in messages_of(response))
    review(demo_org, gpu_request, "reject", "Use the T4 pool")
    gpu_request.refresh_from_db()
    assert gpu_request.status == RequestStatus.REJECTED


def test_approver_cannot_approve_their_own_request(demo_org: DemoOrg) -> None:
    MembershipFactory(user=demo_org.approver, team=demo_org.team)
    gpu_request = submit(demo_org, user=demo_org.approver)
    html = client_for(demo_org.approver).get(reverse("allocations:approvals")).content.decode()
    assert "Your own request" in html
    response = review(demo_org, gpu_request, "approve")
    assert response.status_code == 200
    assert any("cannot approve or reject your own request" in m for m in messages_of(response))
    gpu_request.refresh_from_db()
    assert gpu_request.status == RequestStatus.PENDING_APPROVAL


def test_approve_when_the_quota_no_longer_fits_shows_the_service_error(demo_org: DemoOrg) -> None:
    gpu_request = submit(demo_org, replicas=2)
    Quota.objects.filter(team=demo_org.team).update(limit=1)
    response = review(demo_org, gpu_request, "approve")
    assert any("Quota exceeded" in m and "2 asked" in m for m in messages_of(response))
    gpu_request.refresh_from_db()
    assert gpu_request.status == RequestStatus.PENDING_APPROVAL


def test_approving_twice_shows_the_transition_error(demo_org: DemoOrg) -> None:
    gpu_request = submit(demo_org)
    review(demo_org, gpu_request, "approve")
    response = review(demo_org, gpu_request, "approve")
    assert any("cannot move to approved" in m for m in messages_of(response))


@pytest.mark.parametrize("role", ["member", "team_lead", "outsider"])
def test_review_and_bulk_are_forbidden_to_non_approvers(demo_org: DemoOrg, role: str) -> None:
    gpu_request = submit(demo_org)
    client = client_for(demo_org.user(role))
    url = reverse("allocations:approval-review", kwargs={"pk": gpu_request.pk})
    assert client.post(url, {"decision": "approve"}).status_code == 403
    bulk = client.post(reverse("allocations:approval-bulk"), {"decision": "approve", "ids": [gpu_request.pk]})
    assert bulk.status_code == 403
    gpu_request.refresh_from_db()
    assert gpu_request.status == RequestStatus.PENDING_APPROVAL


def test_bulk_approve(demo_org: DemoOrg) -> None:
    first, second, untouched = submit(demo_org), submit(demo_org), submit(demo_org)
    response = client_for(demo_org.approver).post(
        reverse("allocations:approval-bulk"),
        {"decision": "approve", "ids": [first.pk, second.pk], "comment": "Batch OK"},
        follow=True,
    )
    statuses = dict(GpuRequest.objects.values_list("pk", "status"))
    assert statuses == {first.pk: "approved", second.pk: "approved", untouched.pk: "pending_approval"}
    assert any("Approved 2 requests" in m for m in messages_of(response))
    assert first.events.last().comment == "Batch OK"


def test_bulk_reports_each_failure_and_approves_the_rest(demo_org: DemoOrg) -> None:
    fits, too_big = submit(demo_org, replicas=6), submit(demo_org, replicas=6)
    response = client_for(demo_org.approver).post(
        reverse("allocations:approval-bulk"), {"decision": "approve", "ids": [fits.pk, too_big.pk]}, follow=True
    )
    texts = messages_of(response)
    assert any("Approved 1 request:" in m for m in texts)
    assert any(m.startswith(f"#{too_big.pk}") and "Quota exceeded" in m for m in texts)


def test_bulk_reject_and_bad_input(demo_org: DemoOrg) -> None:
    first = submit(demo_org)
    client = client_for(demo_org.approver)
    url = reverse("allocations:approval-bulk")
    assert any("Tick some" in m for m in messages_of(client.post(url, {"decision": "reject"}, follow=True)))
    stale = client.post(url, {"decision": "approve", "ids": [first.pk + 999]}, follow=True)
    assert any("no longer pending" in m for m in messages_of(stale))
    client.post(url, {"decision": "reject", "ids": [first.pk], "comment": "Too big"})
    first.refresh_from_db()
    assert first.status == RequestStatus.REJECTED


# --- A page at a time, by team ------------------------------------------------------------------------------------


def pending_requests(org: DemoOrg, count: int, *, team=None) -> list[GpuRequest]:
    """``count`` pending requests of ``team`` (the member's by default), submitted a minute apart, oldest first."""
    start = timezone.now() - timedelta(days=1)
    team = team or org.team
    requester = org.member if team == org.team else org.outsider
    return [
        GpuRequestFactory(
            team=team,
            requester=requester,
            status=RequestStatus.PENDING_APPROVAL,
            name=f"job-{n:03d}",
            submitted_at=start + timedelta(minutes=n),
        )
        for n in range(count)
    ]


def pending_extensions(org: DemoOrg, count: int) -> list[AllocationExtension]:
    """``count`` running requests with an extension each waiting for approval, asked in that order."""
    asked = []
    for n in range(count):
        running = GpuRequestFactory(
            team=org.team,
            requester=org.member,
            status=RequestStatus.ACTIVE,
            name=f"run-{n:03d}",
            expires_at=timezone.now() + timedelta(hours=30),
        )
        asked.append(
            allocation_extension_request(request=running, acting_user=org.member, hours=2, reason=f"Reason {n}.")
        )
    return asked


def queue(user, **params: str):
    return client_for(user).get(reverse("allocations:approvals"), params)


def test_the_queue_shows_25_oldest_first_and_pages_through_the_rest(demo_org: DemoOrg) -> None:
    waiting = pending_requests(demo_org, QUEUE_PAGE_SIZE + 5)
    first = queue(demo_org.approver)
    assert [row["request"].pk for row in first.context["rows"]] == [r.pk for r in waiting[:QUEUE_PAGE_SIZE]]
    html = first.content.decode()
    assert "30 pending" in html and "1\u201325, oldest first" in html
    assert 'aria-label="Pages of pending requests"' in html and "?page=2" in html
    second = queue(demo_org.approver, page="2")
    assert [row["request"].pk for row in second.context["rows"]] == [r.pk for r in waiting[QUEUE_PAGE_SIZE:]]
    assert "26\u201330, oldest first" in second.content.decode()
    # Past the end is the last page, as the request list does (an approver who decided the last row comes back).
    assert queue(demo_org.approver, page="9").context["page"].number == 2


def test_a_page_costs_the_same_queries_with_1_or_60_pending(demo_org: DemoOrg) -> None:
    pending_requests(demo_org, 1)
    client = client_for(demo_org.approver)
    client.get(reverse("allocations:approvals"))  # the team's month curves are built once, then kept
    with CaptureQueriesContext(connection) as one:
        client.get(reverse("allocations:approvals"))
    pending_requests(demo_org, 59)
    pending_requests(demo_org, 10, team=demo_org.other_team)
    client.get(reverse("allocations:approvals"))
    with CaptureQueriesContext(connection) as many:
        response = client.get(reverse("allocations:approvals"))
    assert len(response.context["rows"]) == QUEUE_PAGE_SIZE
    assert len(many.captured_queries) == len(one.captured_queries)


def test_the_team_filter_lists_the_teams_with_work_waiting_and_their_counts(demo_org: DemoOrg) -> None:
    ours = pending_requests(demo_org, 3)
    theirs = pending_requests(demo_org, 2, team=demo_org.other_team)
    extension = pending_extensions(demo_org, 1)[0]
    response = queue(demo_org.approver, team=demo_org.other_team.slug)
    assert [row["request"].pk for row in response.context["rows"]] == [r.pk for r in theirs]
    assert response.context["extension_rows"] == []  # the extension is on the member's team's request
    html = response.content.decode()
    assert f"{demo_org.team.name} (3 requests, 1 extension)" in html
    assert f'<option value="{demo_org.other_team.slug}" selected>{demo_org.other_team.name} (2 requests, 0 extensions)'
    assert "Every team (5 requests, 1 extension)" in html
    ours_only = queue(demo_org.approver, team=demo_org.team.slug)
    assert [row["request"].pk for row in ours_only.context["rows"]] == [r.pk for r in ours]
    assert [ext.pk for ext in ours_only.context["extension_rows"]] == [extension.pk]


def test_pending_work_by_team_counts_each_teams_requests_and_extensions(demo_org: DemoOrg) -> None:
    pending_requests(demo_org, 2)
    pending_requests(demo_org, 1, team=demo_org.other_team)
    pending_extensions(demo_org, 2)
    GpuRequestFactory(team=demo_org.other_team, requester=demo_org.outsider, status=RequestStatus.ACTIVE)
    by_slug = {team["slug"]: team for team in pending_work_by_team(user=demo_org.approver)}
    assert {slug: (t["requests"], t["extensions"]) for slug, t in by_slug.items()} == {
        demo_org.team.slug: (2, 2),
        demo_org.other_team.slug: (1, 0),
    }
    assert pending_work_by_team(user=demo_org.member) == []


def test_an_unknown_team_is_an_error_naming_the_field_and_lists_nothing(demo_org: DemoOrg) -> None:
    pending_requests(demo_org, 2)
    response = queue(demo_org.approver, team="no-such-team")
    assert response.status_code == 200
    assert response.context["rows"] == []
    html = response.content.decode()
    assert "<strong>team</strong>: There is no team “no-such-team”." in html
    assert "Nothing waits for approval" not in html


def test_a_team_with_nothing_waiting_says_so(demo_org: DemoOrg) -> None:
    pending_requests(demo_org, 2)
    html = queue(demo_org.approver, team=demo_org.other_team.slug).content.decode()
    assert f"Nothing from {demo_org.other_team.name} waits for approval" in html


def test_the_page_links_keep_the_filter_and_the_other_sections_page(demo_org: DemoOrg) -> None:
    pending_requests(demo_org, QUEUE_PAGE_SIZE + 1)
    pending_extensions(demo_org, QUEUE_PAGE_SIZE + 2)
    response = queue(demo_org.approver, team=demo_org.team.slug, ext_page="2")
    assert len(response.context["extension_rows"]) == 2
    assert response.context["extension_page"].number == 2
    html = response.content.decode()
    assert f"?team={demo_org.team.slug}&amp;ext_page=2&amp;page=2" in html  # next page of requests
    assert f"?team={demo_org.team.slug}&amp;page=1" not in html  # no page 1 link: page 1 of requests is shown
    assert f"?team={demo_org.team.slug}&amp;ext_page=1" in html  # previous page of extensions
    assert 'aria-label="Pages of pending extensions"' in html


def test_extensions_are_paged_oldest_first(demo_org: DemoOrg) -> None:
    asked = pending_extensions(demo_org, QUEUE_PAGE_SIZE + 3)
    first = queue(demo_org.approver)
    assert [ext.pk for ext in first.context["extension_rows"]] == [ext.pk for ext in asked[:QUEUE_PAGE_SIZE]]
    assert f"{QUEUE_PAGE_SIZE + 3}</span></h2>" in first.content.decode()
    last = queue(demo_org.approver, ext_page="2")
    assert [ext.pk for ext in last.context["extension_rows"]] == [ext.pk for ext in asked[QUEUE_PAGE_SIZE:]]


def test_reviewing_returns_to_the_page_and_filter_it_was_made_on(demo_org: DemoOrg) -> None:
    waiting = pending_requests(demo_org, QUEUE_PAGE_SIZE + 2)
    where = f"{reverse('allocations:approvals')}?team={demo_org.team.slug}&page=2"
    html = client_for(demo_org.approver).get(where).content.decode()
    assert f'name="next" value="{where.replace("&", "&amp;")}"' in html
    last = waiting[-1]
    response = client_for(demo_org.approver).post(
        reverse("allocations:approval-review", kwargs={"pk": last.pk}), {"decision": "approve", "next": where}
    )
    assert response.status_code == 302 and response["Location"] == where
    last.refresh_from_db()
    assert last.status == RequestStatus.APPROVED


def test_the_queue_reads_pending_requests_oldest_first_with_what_it_prints(
    demo_org: DemoOrg, django_assert_num_queries
) -> None:
    now = timezone.now()
    pending = RequestStatus.PENDING_APPROVAL
    pooled = GpuRequestFactory(
        team=demo_org.team, requester=demo_org.member, status=pending, node_pool=demo_org.pool, submitted_at=now
    )
    no_tier = GpuRequestFactory(
        team=demo_org.other_team,
        requester=demo_org.outsider,
        status=pending,
        sla_tier=None,
        submitted_at=now - timedelta(hours=2),
    )
    GpuRequestFactory(team=demo_org.team, requester=demo_org.member, status=RequestStatus.ACTIVE)
    queued = pending_requests_queue(user=demo_org.approver)  # reads the approver's permissions (kept on the user)
    with django_assert_num_queries(1):  # the team, requester, tier and pool come with the rows
        rows = list(queued)
        printed = [(r.team.slug, r.requester.username, r.sla_tier and r.sla_tier.slug, str(r.node_pool)) for r in rows]
    assert [r.pk for r in rows] == [no_tier.pk, pooled.pk]
    assert printed[0][2] is None and printed[1][3] == str(demo_org.pool)
    assert [r.pk for r in pending_requests_queue(user=demo_org.approver, team_id=demo_org.other_team.pk)] == [
        no_tier.pk
    ]
    assert not pending_requests_queue(user=demo_org.member).exists()


def test_nothing_is_read_for_a_section_with_nothing_waiting(demo_org: DemoOrg) -> None:
    pending_requests(demo_org, 2)
    client = client_for(demo_org.approver)
    client.get(reverse("allocations:approvals"))  # the team's month curves are built once, then kept
    with CaptureQueriesContext(connection) as queries:
        response = client.get(reverse("allocations:approvals"))
    assert response.context["extension_rows"] == []
    # The counts come with the teams' query; no page of extensions is read (it would select their rows' columns).
    assert not [q for q in queries.captured_queries if q["sql"].startswith('SELECT "allocations_allocationextension"')]
