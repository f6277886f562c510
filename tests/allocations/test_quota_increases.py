"""From a quota refusal to a granted increase: the refusal's next steps, a lead asking for more with the cost shown,
an approver granting it (the quota changes, both writes audited), declining needs a reason, approvers edit quotas,
and other teams' quotas stay out of reach."""

from __future__ import annotations

import pytest
from django.test import Client
from django.urls import reverse

from allocations.models import Membership, Quota, QuotaIncreaseRequest, QuotaRequestStatus, Role
from allocations.quota_requests.selectors import quota_unit_monthly_price
from allocations.requests.services import gpu_request_approve, gpu_request_submit
from audit.models import AuditEvent
from tests.factories import DemoOrg, QuotaFactory

pytestmark = pytest.mark.django_db

NEW = reverse("allocations:request-new")
QUOTAS = reverse("allocations:quota-list")
# 60 GiB a GPU: with the 85 % headroom it needs 70.59 GiB, and an H100-80GB offers 79.25 GiB usable.
SIX_GPU_PEAK_GIB = 60 * 6


def client_for(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


@pytest.fixture
def pool_quota(demo_org: DemoOrg) -> Quota:
    """Vision's quota on the H100 pool: 4 GPUs, 2 of them held by a running request."""
    Quota.objects.filter(team=demo_org.team).delete()
    quota = QuotaFactory(team=demo_org.team, node_pool=demo_org.pool, resource_name="nvidia.com/gpu", limit=4)
    held = gpu_request_submit(
        command=["python", "main.py"],
        acting_user=demo_org.member,
        team=demo_org.team,
        name="running",
        profile_data={"workload_type": "training", "gpu_memory_gb": 120, "gpu_count": 2},
    )
    gpu_request_approve(request=held, acting_user=demo_org.approver)
    return quota


def form_data(**values) -> dict[str, object]:
    return {"team": "vision", "name": "big", "workload_type": "training", "replicas": 1, "command": "main", **values}


def test_a_refusal_offers_to_ask_for_the_missing_units(demo_org: DemoOrg, pool_quota: Quota) -> None:
    response = client_for(demo_org.team_lead).post(NEW, form_data(gpu_memory_gb=SIX_GPU_PEAK_GIB, gpu_count=6))

    assert response.status_code == 400
    html = response.content.decode()
    assert "2 in use, 6 asked, 2 available" in html
    assert f'href="/quotas/{pool_quota.pk}/increase/?units=4"' in html and "(to 8)" in html
    assert " running</a> (2 units" in html  # waiting: what holds the quota now


def test_a_lead_asks_and_an_approver_grants(demo_org: DemoOrg, pool_quota: Quota) -> None:
    lead = client_for(demo_org.team_lead)
    form = lead.get(reverse("allocations:quota-increase-new", args=[pool_quota.pk]), {"units": 4})
    assert form.status_code == 200 and form.context["form"].initial["requested_limit"] == 8
    assert "USD" in form.content.decode()  # the cost of a unit a month

    asked = lead.post(
        reverse("allocations:quota-increase-new", args=[pool_quota.pk]),
        {"requested_limit": 8, "reason": "Six-GPU fine-tune of the detector this week."},
    )
    assert asked.status_code == 302
    increase = QuotaIncreaseRequest.objects.get()
    assert (increase.limit_when_asked, increase.requested_limit, increase.requested_by) == (4, 8, demo_org.team_lead)

    queue = client_for(demo_org.approver).get(QUOTAS).content.decode()
    cost = quota_unit_monthly_price(pool_quota).times(4)
    assert f"increase-{increase.pk}" in queue and f"+{cost.text}" in queue and "4 → <strong>8</strong>" in queue

    granted = client_for(demo_org.approver).post(
        reverse("allocations:quota-increase-decide", args=[increase.pk]), {"decision": "grant", "comment": "OK"}
    )
    assert granted.status_code == 302
    pool_quota.refresh_from_db()
    increase.refresh_from_db()
    assert pool_quota.limit == 8 and increase.status == QuotaRequestStatus.GRANTED
    assert increase.decided_by == demo_org.approver
    quota_event = AuditEvent.objects.get(object_type="allocations.quota", object_id=str(pool_quota.pk))
    assert quota_event.before == {"limit": 4} and quota_event.after == {"limit": 8}
    assert quota_event.actor == demo_org.approver
    assert AuditEvent.objects.filter(object_type="allocations.quotaincreaserequest").count() == 2  # asked, granted

    resubmitted = lead.post(NEW, form_data(gpu_memory_gb=SIX_GPU_PEAK_GIB, gpu_count=6))
    assert resubmitted.status_code == 302  # the six GPUs fit now


def test_the_unit_price_is_the_pools_gpu_hour_for_a_month(demo_org: DemoOrg, pool_quota: Quota) -> None:
    price = quota_unit_monthly_price(pool_quota)
    hourly = demo_org.pool.gpu_model.list_hourly_price

    assert price.low == price.high == hourly * 730


def test_declining_needs_a_reason_and_leaves_the_quota(demo_org: DemoOrg, pool_quota: Quota) -> None:
    increase = QuotaIncreaseRequest.objects.create(
        team=demo_org.team,
        quota=pool_quota,
        limit_when_asked=4,
        requested_limit=6,
        reason="x",
        requested_by=demo_org.member,
    )
    url = reverse("allocations:quota-increase-decide", args=[increase.pk])
    approver = client_for(demo_org.approver)

    approver.post(url, {"decision": "decline"})
    increase.refresh_from_db()
    assert increase.status == QuotaRequestStatus.PENDING

    approver.post(url, {"decision": "decline", "comment": "The pool is full until December."})
    increase.refresh_from_db()
    pool_quota.refresh_from_db()
    assert increase.status == QuotaRequestStatus.DECLINED and pool_quota.limit == 4


def test_members_neither_decide_nor_edit(demo_org: DemoOrg, pool_quota: Quota) -> None:
    increase = QuotaIncreaseRequest.objects.create(
        team=demo_org.team,
        quota=pool_quota,
        limit_when_asked=4,
        requested_limit=6,
        reason="x",
        requested_by=demo_org.member,
    )
    lead = client_for(demo_org.team_lead)

    decided = lead.post(reverse("allocations:quota-increase-decide", args=[increase.pk]), {"decision": "grant"})
    edited = lead.post(reverse("allocations:quota-edit", args=[pool_quota.pk]), {f"q{pool_quota.pk}-limit": 99})

    assert decided.status_code == 403 and edited.status_code == 403
    pool_quota.refresh_from_db()
    assert pool_quota.limit == 4


def test_an_approver_never_grants_their_own_ask(demo_org: DemoOrg, pool_quota: Quota) -> None:
    Membership.objects.create(user=demo_org.approver, team=demo_org.team, role=Role.LEAD)
    approver = client_for(demo_org.approver)
    approver.post(
        reverse("allocations:quota-increase-new", args=[pool_quota.pk]), {"requested_limit": 5, "reason": "mine"}
    )
    increase = QuotaIncreaseRequest.objects.get()

    approver.post(reverse("allocations:quota-increase-decide", args=[increase.pk]), {"decision": "grant"})

    increase.refresh_from_db()
    assert increase.status == QuotaRequestStatus.PENDING


def test_an_approver_edits_a_quota_with_audit(demo_org: DemoOrg, pool_quota: Quota) -> None:
    prefix = f"q{pool_quota.pk}"
    response = client_for(demo_org.approver).post(
        reverse("allocations:quota-edit", args=[pool_quota.pk]),
        {
            f"{prefix}-limit": 6,
            f"{prefix}-borrowing_limit": 2,
            f"{prefix}-lending_limit": "",
            f"{prefix}-comment": "Q4",
        },
    )

    assert response.status_code == 302
    pool_quota.refresh_from_db()
    assert (pool_quota.limit, pool_quota.borrowing_limit) == (6, 2)
    event = AuditEvent.objects.get(object_type="allocations.quota", object_id=str(pool_quota.pk))
    assert event.after == {"limit": 6, "borrowing_limit": 2} and event.comment == "Q4"


def test_an_invalid_edit_is_refused_with_the_reason(demo_org: DemoOrg, pool_quota: Quota) -> None:
    prefix = f"q{pool_quota.pk}"
    response = client_for(demo_org.approver).post(
        reverse("allocations:quota-edit", args=[pool_quota.pk]),
        {f"{prefix}-limit": 2, f"{prefix}-lending_limit": 3},
        follow=True,
    )

    assert "lending limit must be less than or equal" in response.content.decode()
    pool_quota.refresh_from_db()
    assert pool_quota.limit == 4


def test_the_quota_page_shows_used_nominal_and_borrowing(demo_org: DemoOrg, pool_quota: Quota) -> None:
    Quota.objects.filter(pk=pool_quota.pk).update(borrowing_limit=3)

    html = client_for(demo_org.member).get(QUOTAS).content.decode()

    assert f'id="quota-{pool_quota.pk}"' in html and "2 / 4" in html and "up to 3" in html
    assert "Ask for more" in html and "<summary>Edit</summary>" not in html


def test_another_teams_quota_is_404(demo_org: DemoOrg, pool_quota: Quota) -> None:
    outsider = client_for(demo_org.outsider)

    assert outsider.get(reverse("allocations:quota-increase-new", args=[pool_quota.pk])).status_code == 404
    assert f'id="quota-{pool_quota.pk}"' not in outsider.get(QUOTAS).content.decode()


def test_one_pending_ask_per_quota(demo_org: DemoOrg, pool_quota: Quota) -> None:
    lead = client_for(demo_org.team_lead)
    url = reverse("allocations:quota-increase-new", args=[pool_quota.pk])
    lead.post(url, {"requested_limit": 6, "reason": "one"})

    again = lead.post(url, {"requested_limit": 7, "reason": "two"})

    assert again.status_code == 400 and "already waiting" in again.content.decode()
    assert QuotaIncreaseRequest.objects.count() == 1


def test_asking_for_no_more_than_now_is_refused(demo_org: DemoOrg, pool_quota: Quota) -> None:
    response = client_for(demo_org.member).post(
        reverse("allocations:quota-increase-new", args=[pool_quota.pk]), {"requested_limit": 4, "reason": "r"}
    )

    assert response.status_code == 400 and "more than the 4 units" in response.content.decode()
    assert not QuotaIncreaseRequest.objects.exists()
