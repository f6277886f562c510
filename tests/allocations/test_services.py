"""Submission, approval, rejection, cancel and release through the services: quotas, permissions, emails."""

from decimal import Decimal

import pytest
from django.core import mail
from django.core.exceptions import PermissionDenied, ValidationError

from allocations.lifecycle import InvalidTransition
from allocations.models import GpuRequest, RequestEvent, RequestStatus, SlaTier
from allocations.requests.services import (
    gpu_request_approve,
    gpu_request_cancel,
    gpu_request_reject,
    gpu_request_release,
    gpu_request_submit,
)
from tests.factories import NodePoolFactory, QuotaFactory

pytestmark = pytest.mark.django_db(transaction=True)

TRAINING = {"workload_type": "training", "gpu_memory_gb": 40, "sla_tier": "tier2_batch"}


def submit(org, user=None, profile=None, name="job", **kwargs):
    kwargs.setdefault("command", ["python", "main.py"])  # the default image runs nothing without one
    return gpu_request_submit(
        acting_user=user or org.member,
        team=org.team,
        name=name,
        profile_data=profile or TRAINING,
        **kwargs,
    )


def test_submit_freezes_the_spec_places_it_and_queues_it(demo_org) -> None:
    request = submit(demo_org)
    assert request.status == RequestStatus.PENDING_APPROVAL
    assert request.spec["strategy"] == "dedicated" and request.spec["gpu_model"] == "H100-80GB"
    assert request.spec["rationale"] and "alternatives" in request.spec
    assert (request.node_pool, request.resource_name, request.resource_units) == (demo_org.pool, "nvidia.com/gpu", 1)
    assert request.gpu_memory_gb == Decimal("40")
    assert [(e.from_status, e.to_status) for e in request.events.all()] == [("draft", "pending_approval")]


def test_frozen_spec_is_not_rewritten_by_a_catalog_change(demo_org) -> None:
    request = submit(demo_org)
    frozen = dict(request.spec)
    from allocations.models import GpuModel

    GpuModel.objects.filter(name="H100-80GB").update(purchase_price=Decimal("99999"))
    request.refresh_from_db()
    assert request.spec == frozen


def test_bad_profile_names_each_field_and_writes_nothing(demo_org) -> None:
    with pytest.raises(ValidationError) as excinfo:
        submit(demo_org, profile={"workload_type": "mining", "gpu_memory_gb": -1}, name="")
    errors = excinfo.value.message_dict
    assert {"workload_type", "gpu_memory_gb", "name"} <= set(errors)
    assert not GpuRequest.objects.exists()


def test_non_member_cannot_submit_for_a_team(demo_org) -> None:
    with pytest.raises(PermissionDenied):
        submit(demo_org, user=demo_org.outsider)


def test_quota_refusal_says_which_quota_limit_use_and_ask(demo_org) -> None:
    for n in range(4):
        gpu_request_approve(
            request=submit(demo_org, name=f"a{n}", profile={**TRAINING, "gpu_count": 2}), acting_user=demo_org.approver
        )
    with pytest.raises(ValidationError) as excinfo:
        submit(demo_org, name="one-too-many")
    (message,) = excinfo.value.message_dict["quota"]
    assert "may hold 8 nvidia.com/gpu" in message and "8 in use" in message and "1 asked" in message
    assert not GpuRequest.objects.filter(name="one-too-many").exists()


def test_no_quota_for_the_resource_is_refused(demo_org) -> None:
    with pytest.raises(ValidationError) as excinfo:
        gpu_request_submit(
            command=["python", "main.py"],
            acting_user=demo_org.member,
            team=demo_org.team,
            name="x",
            profile_data={**TRAINING, "gpu_count": 8, "replicas": 2},
        )
    assert "quota" in excinfo.value.message_dict


def test_approval_rechecks_quota(demo_org) -> None:
    pending = [submit(demo_org, name=f"p{n}", profile={**TRAINING, "gpu_count": 4}) for n in range(3)]
    gpu_request_approve(request=pending[0], acting_user=demo_org.approver)
    gpu_request_approve(request=pending[1], acting_user=demo_org.approver)
    with pytest.raises(ValidationError, match="8 in use, 4 asked"):
        gpu_request_approve(request=pending[2], acting_user=demo_org.approver)
    pending[2].refresh_from_db()
    assert pending[2].status == RequestStatus.PENDING_APPROVAL


@pytest.mark.parametrize("role", ["member", "team_lead", "outsider"])
def test_only_approvers_approve(demo_org, role) -> None:
    request = submit(demo_org)
    with pytest.raises(PermissionDenied):
        gpu_request_approve(request=request, acting_user=demo_org.user(role))


def test_approver_cannot_approve_own_request(demo_org) -> None:
    from allocations.models import Membership

    Membership.objects.create(user=demo_org.approver, team=demo_org.team)
    request = submit(demo_org, user=demo_org.approver)
    with pytest.raises(PermissionDenied, match="your own request"):
        gpu_request_approve(request=request, acting_user=demo_org.approver)


def test_approve_hands_over_to_provisioning_and_emails_the_requester(demo_org) -> None:
    request = submit(demo_org)
    mail.outbox.clear()
    gpu_request_approve(request=request, acting_user=demo_org.approver, comment="ok")
    request.refresh_from_db()
    # Tasks run eagerly in tests: the demo cluster's GitOps gateway applies at once.
    assert request.status == RequestStatus.ACTIVE
    assert [e.to_status for e in request.events.all()][-3:] == ["approved", "provisioning", "active"]
    assert [m.to for m in mail.outbox] == [[demo_org.member.email]]
    assert "was approved" in mail.outbox[0].subject


def test_new_request_emails_the_approvers(demo_org) -> None:
    mail.outbox.clear()
    submit(demo_org)
    (message,) = mail.outbox
    assert set(message.to) == {demo_org.approver.email, demo_org.platform_admin.email}
    assert "waiting for approval" in message.body


def test_reject_needs_a_comment_and_tells_the_requester(demo_org) -> None:
    request = submit(demo_org)
    with pytest.raises(ValidationError) as excinfo:
        gpu_request_reject(request=request, acting_user=demo_org.approver, comment=" ")
    assert "comment" in excinfo.value.message_dict
    mail.outbox.clear()
    gpu_request_reject(request=request, acting_user=demo_org.approver, comment="use the T4 pool")
    assert request.status == RequestStatus.REJECTED
    assert "use the T4 pool" in mail.outbox[0].body


def test_auto_approval_records_the_policy(demo_org) -> None:
    demo_org.team.auto_approve_tiers.add(SlaTier.objects.get(slug="tier2_batch"))
    request = submit(demo_org)
    request.refresh_from_db()
    assert request.status in (RequestStatus.APPROVED, RequestStatus.ACTIVE)
    approval = RequestEvent.objects.get(request=request, to_status="approved")
    assert approval.actor is None and approval.actor_label == "policy:auto-approve (tier2_batch)"


def test_cancel_and_release_by_owner_or_lead_only(demo_org) -> None:
    pending = submit(demo_org, name="p")
    with pytest.raises(PermissionDenied):
        gpu_request_cancel(request=pending, acting_user=demo_org.outsider)
    gpu_request_cancel(request=pending, acting_user=demo_org.team_lead)
    assert pending.status == RequestStatus.RELEASED

    approved = submit(demo_org, name="a")
    gpu_request_approve(request=approved, acting_user=demo_org.approver)
    with pytest.raises(InvalidTransition, match="release it instead"):
        gpu_request_cancel(request=approved, acting_user=demo_org.member)
    gpu_request_release(request=approved, acting_user=demo_org.member)
    assert approved.status == RequestStatus.RELEASED
    with pytest.raises(InvalidTransition):
        gpu_request_release(request=approved, acting_user=demo_org.member)


def test_approving_twice_is_a_clear_conflict(demo_org) -> None:
    request = submit(demo_org)
    gpu_request_approve(request=request, acting_user=demo_org.approver)
    with pytest.raises(InvalidTransition):
        gpu_request_approve(request=request, acting_user=demo_org.approver)


def test_quota_scoped_to_another_pool_does_not_count(demo_org) -> None:
    other_pool = NodePoolFactory(cluster=demo_org.cluster, name="h100-b")
    QuotaFactory(team=demo_org.team, node_pool=other_pool, resource_name="nvidia.com/gpu", limit=1)
    request = submit(demo_org)
    assert request.node_pool in (demo_org.pool, other_pool)
