"""Kueue's quota vocabulary on Quota (nominal, borrowing and lending limits) and the portal's check: tier 3 borrows
from the cluster's cohort up to its borrowing limit and is marked borrowed; other tiers are refused with the reason."""

from __future__ import annotations

import pytest
from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction

from allocations.models import Quota, RequestStatus
from allocations.requests.services import gpu_request_approve, gpu_request_submit
from tests.factories import QuotaFactory, TeamFactory
from tests.gpucore.manifests.cases import validate

pytestmark = pytest.mark.django_db(transaction=True)

TIER3 = {"workload_type": "development", "gpu_memory_gb": 40, "sla_tier": "tier3_development", "gpu_count": 1}
TIER2 = {"workload_type": "training", "gpu_memory_gb": 40, "sla_tier": "tier2_batch", "gpu_count": 1}


@pytest.fixture
def cohort(demo_org):
    """Cluster quotas on the demo cluster: vision 2 GPUs (may borrow 2), nlp 4 GPUs (lends at most 3)."""
    Quota.objects.all().delete()
    vision = QuotaFactory(team=demo_org.team, cluster=demo_org.cluster, limit=2, borrowing_limit=2)
    nlp = QuotaFactory(team=demo_org.other_team, cluster=demo_org.cluster, limit=4, lending_limit=3)
    return demo_org, vision, nlp


def submit(org, profile, *, name="job", team=None, user=None, units=1):
    return gpu_request_submit(
        command=["python", "main.py"],
        acting_user=user or org.member,
        team=team or org.team,
        name=name,
        profile_data={**profile, "gpu_count": units},
    )


def test_tier3_over_nominal_but_within_borrowing_is_admitted_and_marked_borrowed(cohort) -> None:
    org, _, _ = cohort
    within = submit(org, TIER3, name="within", units=2)
    assert within.borrowed is False
    gpu_request_approve(request=within, acting_user=org.approver)
    borrowing = submit(org, TIER3, name="borrowing", units=1)
    assert borrowing.borrowed is True
    assert borrowing.spec["strategy"] == "dedicated" and borrowing.resource_units == 1
    # Approval re-checks and keeps the mark; both now hold quota (3 of a nominal 2).
    gpu_request_approve(request=borrowing, acting_user=org.approver)
    borrowing.refresh_from_db()
    # Tasks run in-process here and the demo cluster is a GitOps tree: approved, provisioned and active at once.
    assert (borrowing.status, borrowing.borrowed) == (RequestStatus.ACTIVE, True)


def test_a_borrowed_requests_resource_quota_admits_every_pod_the_portal_admitted(cohort) -> None:
    org, _, _ = cohort
    held = [submit(org, TIER3, name="within", units=2), submit(org, TIER3, name="borrowing", units=2)]
    for request in held:
        gpu_request_approve(request=request, acting_user=org.approver)
    borrowing = held[-1]
    borrowing.refresh_from_db()
    assert (borrowing.status, borrowing.borrowed) == (RequestStatus.ACTIVE, True)
    (quota,) = [o for o in borrowing.manifests if o["kind"] == "ResourceQuota"]
    (limits,) = [o for o in borrowing.manifests if o["kind"] == "LimitRange"]
    validate(quota)
    validate(limits)
    # The API server counts requests.nvidia.com/gpu over the namespace: nominal 2 + borrowing limit 2 holds both.
    in_namespace = sum(r.resource_units for r in held)
    assert in_namespace == 4
    assert int(quota["spec"]["hard"]["requests.nvidia.com/gpu"]) >= in_namespace
    assert int(limits["spec"]["limits"][0]["max"]["nvidia.com/gpu"]) >= borrowing.resource_units


def test_tier2_over_nominal_is_refused_with_the_reason(cohort) -> None:
    org, _, _ = cohort
    gpu_request_approve(request=submit(org, TIER2, name="first", units=2), acting_user=org.approver)
    with pytest.raises(ValidationError) as excinfo:
        submit(org, TIER2, name="second", units=1)
    (message,) = excinfo.value.message_dict["quota"]
    assert "may hold 2 nvidia.com/gpu (cluster demo); 2 in use, 1 asked, 0 available" in message
    assert "Only preemptible (tier 3) requests may borrow beyond the nominal quota (up to 2 more" in message


def test_borrowing_stops_at_the_borrowing_limit_and_at_what_the_cohort_lends(cohort) -> None:
    org, vision, _nlp = cohort
    # Nominal 2 + borrowing limit 2: at most 4, although nlp lends 3.
    with pytest.raises(ValidationError, match="borrowing up to 2 more, 4 can be admitted now"):
        submit(org, TIER3, name="too-much", units=5)
    # With a larger borrowing limit, nlp's lending limit binds: 2 + 3 = 5 ...
    Quota.objects.filter(pk=vision.pk).update(borrowing_limit=10)
    with pytest.raises(ValidationError, match="5 can be admitted now"):
        submit(org, TIER3, name="six", units=6)
    # ... and once nlp runs 2 of its 4 (1 of them beyond the 1 it never lends), only 2 + 2 = 4 remain.
    nlp_job = submit(org, TIER2, name="nlp-a", team=org.other_team, user=org.outsider, units=2)
    gpu_request_approve(request=nlp_job, acting_user=org.approver)
    with pytest.raises(ValidationError, match="4 can be admitted now"):
        submit(org, TIER3, name="vision-five", units=5)
    assert submit(org, TIER3, name="vision-four", units=4).borrowed is True


def test_a_team_wide_quota_has_no_cohort_to_borrow_from(demo_org) -> None:
    # The demo's quotas are team-wide (no cluster): a borrowing limit there is refused by validation and the DB.
    quota = Quota.objects.get(team=demo_org.team)
    quota.borrowing_limit = 2
    with pytest.raises(ValidationError) as excinfo:
        quota.full_clean()
    assert "no cohort" in excinfo.value.message_dict["borrowing_limit"][0]
    with transaction.atomic(), pytest.raises(IntegrityError):
        Quota.objects.filter(pk=quota.pk).update(borrowing_limit=2)


def test_lending_more_than_the_nominal_quota_is_refused(demo_org) -> None:
    quota = Quota(team=TeamFactory(slug="solo"), cluster=demo_org.cluster, resource_name="nvidia.com/gpu", limit=4)
    quota.lending_limit = 5
    with pytest.raises(ValidationError) as excinfo:
        quota.full_clean()
    assert excinfo.value.message_dict["lending_limit"] == [
        "The lending limit must be less than or equal to the nominal quota."
    ]
    with transaction.atomic(), pytest.raises(IntegrityError):
        quota.save()


def test_the_approval_queue_shows_borrowing_tier3_as_fitting_and_tier2_as_not(cohort, client) -> None:
    from django.urls import reverse

    org, _, _ = cohort
    # Both pass submission (the quota is free), then another approval uses the nominal 2 up.
    first = submit(org, TIER2, name="first", units=2)
    tier3 = submit(org, TIER3, name="dev-borrow", units=2)
    tier2 = submit(org, TIER2, name="train-over", units=1)
    gpu_request_approve(request=first, acting_user=org.approver)

    client.force_login(org.approver)
    response = client.get(reverse("allocations:approvals"))
    rows = {row["request"].pk: row for row in response.context["rows"]}
    assert (rows[tier3.pk]["fits"], rows[tier3.pk]["borrows"]) == (True, 2)
    assert (rows[tier2.pk]["fits"], rows[tier2.pk]["borrows"]) == (False, 0)
    assert "Only preemptible (tier 3) requests may borrow" in rows[tier2.pk]["quota_refusal"]
    assert rows[tier2.pk]["quota_refusal_short"] == "Only tier 3 may borrow (up to 2 more)."
    html = response.content.decode()
    assert f'id="pending-{tier3.pk}" class="fits-borrowed" data-fits="borrowed"' in html
    assert f'id="pending-{tier2.pk}" class="no-fit" data-fits="no"' in html
    assert "Borrows 2" in html

    # The queue's verdict is the approval's: the tier-3 request is approved as borrowed, the tier-2 one refused.
    gpu_request_approve(request=tier3, acting_user=org.approver)
    tier3.refresh_from_db()
    assert tier3.borrowed is True
    with pytest.raises(ValidationError, match="Only preemptible"):
        gpu_request_approve(request=tier2, acting_user=org.approver)


def test_the_api_answers_borrowed_for_tier3_and_a_quota_400_for_tier2(cohort) -> None:
    from rest_framework.test import APIClient

    org, _, _ = cohort
    gpu_request_approve(request=submit(org, TIER2, name="first", units=2), acting_user=org.approver)
    client = APIClient()
    client.force_authenticate(org.member)
    body = {
        "team": org.team.slug,
        "name": "dev",
        "purpose": "explore",
        "gpu_count": 1,
        "command": ["python", "main.py"],
    }

    borrowing = client.post("/api/v1/requests/", {**body, **TIER3, "gpu_count": 1}, format="json")
    assert borrowing.status_code == 201, borrowing.json()
    assert borrowing.json()["borrowed"] is True
    assert client.get(f"/api/v1/requests/{borrowing.json()['id']}/").json()["borrowed"] is True

    refused = client.post("/api/v1/requests/", {**body, **TIER2, "gpu_count": 1}, format="json")
    assert refused.status_code == 400
    (message,) = refused.json()["quota"]
    assert "Only preemptible (tier 3) requests may borrow beyond the nominal quota" in message
