"""Provisioning through the GitOps gateway (the demo cluster's backend): render, apply, activate, release, expire."""

from datetime import timedelta
from decimal import Decimal
from pathlib import Path

import pytest
import yaml
from django.core import mail
from django.core.cache import cache
from django.test import override_settings
from django.utils import timezone

from allocations.clusters.provisioning import (
    gpu_request_provision,
    gpu_requests_expire,
    stuck_request_ids,
    unremoved_request_ids,
)
from allocations.clusters.tasks import expire_requests, pending_chain_key, reconcile_requests
from allocations.models import GpuRequest, RequestStatus
from allocations.requests.services import gpu_request_approve, gpu_request_release, gpu_request_submit

pytestmark = pytest.mark.django_db(transaction=True)

TRAINING = {"workload_type": "training", "gpu_memory_gb": 40, "sla_tier": "tier2_batch", "duration_hours": 48}


@pytest.fixture(autouse=True)
def gitops_root(tmp_path: Path):
    with override_settings(PORTAL_GITOPS_ROOT=tmp_path):
        yield tmp_path


def tree(root: Path) -> dict[str, dict]:
    return {str(p.relative_to(root)): yaml.safe_load(p.read_text()) for p in sorted(root.rglob("*.yaml"))}


def approved(org, **profile) -> GpuRequest:
    request = gpu_request_submit(
        command=["python", "main.py"],
        acting_user=org.member,
        team=org.team,
        name="train",
        profile_data={**TRAINING, **profile},
    )
    gpu_request_approve(request=request, acting_user=org.approver)
    request.refresh_from_db()
    return request


def test_approval_renders_applies_and_activates(demo_org, gitops_root) -> None:
    request = approved(demo_org)

    assert request.status == RequestStatus.ACTIVE
    assert request.observed_phase == "Unobservable" and "GitOps" in request.status_detail
    assert request.expires_at == request.activated_at + timedelta(hours=48)
    kinds = {obj["kind"] for obj in request.manifests}
    assert {"Namespace", "ResourceQuota", "LimitRange", "NetworkPolicy", "Job"} <= kinds
    files = tree(gitops_root)
    job = next(doc for doc in files.values() if doc["kind"] == "Job")
    assert job["metadata"]["name"] == f"gpr-{request.pk}"
    assert job["metadata"]["namespace"] == "team-vision"
    container = job["spec"]["template"]["spec"]["containers"][0]
    assert container["resources"]["limits"]["nvidia.com/gpu"] == container["resources"]["requests"]["nvidia.com/gpu"]
    quota = next(doc for doc in files.values() if doc["kind"] == "ResourceQuota")
    assert quota["spec"]["hard"]["requests.nvidia.com/gpu"] == "8"


def test_provisioning_twice_changes_nothing(demo_org, gitops_root) -> None:
    request = approved(demo_org)
    before, events = tree(gitops_root), request.events.count()
    outcome = gpu_request_provision(request_id=request.pk)
    assert outcome.action == "observed"
    assert tree(gitops_root) == before
    assert request.events.count() == events


def test_release_deletes_only_the_requests_own_objects(demo_org, gitops_root) -> None:
    request = approved(demo_org)
    gpu_request_release(request=request, acting_user=demo_org.member)
    remaining = tree(gitops_root)
    owners = {doc["metadata"].get("labels", {}).get("gpu-portal/request") for doc in remaining.values()}
    assert str(request.pk) not in owners
    assert any(doc["kind"] == "Namespace" for doc in remaining.values())
    request.refresh_from_db()
    assert request.status == RequestStatus.RELEASED and request.observed_phase == "NotFound"


def test_unrenderable_request_fails_with_a_readable_message(demo_org) -> None:
    request = gpu_request_submit(
        command=["python", "main.py"], acting_user=demo_org.member, team=demo_org.team, name="t", profile_data=TRAINING
    )
    # The pool changes under the frozen spec: the renderer refuses, and the request says why.
    demo_org.pool.sharing_mode = "time-slicing"
    demo_org.pool.time_slice_replicas = 4
    demo_org.pool.save()
    gpu_request_approve(request=request, acting_user=demo_org.approver)
    request.refresh_from_db()
    assert request.status == RequestStatus.FAILED
    assert "cannot be rendered" in request.status_detail
    assert request.events.last().comment == request.status_detail


def test_expiry_warns_a_day_before_once_then_expires_and_tears_down(demo_org, gitops_root) -> None:
    request = approved(demo_org)
    GpuRequest.objects.filter(pk=request.pk).update(expires_at=timezone.now() + timedelta(hours=20))
    mail.outbox.clear()
    assert gpu_requests_expire() == ([], [request.pk])
    assert gpu_requests_expire() == ([], [])
    assert len(mail.outbox) == 1 and "expires" in mail.outbox[0].subject

    GpuRequest.objects.filter(pk=request.pk).update(expires_at=timezone.now() - timedelta(minutes=1))
    assert expire_requests() == {"expired": 1, "warned": 0}
    request.refresh_from_db()
    assert request.status == RequestStatus.EXPIRED
    assert not any(d["kind"] == "Job" for d in tree(gitops_root).values())


def test_reconcile_requeues_a_request_stuck_in_approved(demo_org) -> None:
    request = gpu_request_submit(
        command=["python", "main.py"], acting_user=demo_org.member, team=demo_org.team, name="t", profile_data=TRAINING
    )
    # Simulate a lost message: approved in the database, nothing queued, and no progress for a while.
    GpuRequest.objects.filter(pk=request.pk).update(
        status=RequestStatus.APPROVED, updated_at=timezone.now() - timedelta(minutes=10)
    )
    assert stuck_request_ids() == [request.pk]
    assert reconcile_requests()["requeued"] == 1
    request.refresh_from_db()
    assert request.status == RequestStatus.ACTIVE


def test_reconcile_starts_no_second_chain_for_a_request_whose_task_is_pending(demo_org) -> None:
    request = approved(demo_org)
    # Run eagerly, each chain ends before the next sweep and takes its marker with it: every sweep observes again.
    assert reconcile_requests()["observed"] == 1
    assert reconcile_requests()["observed"] == 1
    # A run still queued, or backing off after a transient error (Celery's retry hook sets the marker): left alone.
    cache.set(pending_chain_key("allocations.provision_request", request.pk), "retrying")
    assert reconcile_requests() == {"requeued": 0, "observed": 0, "torn_down": 0, "already_pending": 1}


def test_reconcile_tears_down_again_a_released_request_whose_teardown_was_lost(demo_org, gitops_root) -> None:
    request = approved(demo_org)
    assert any(doc["kind"] == "Job" for doc in tree(gitops_root).values())
    # Simulate a lost teardown message: released in the database, its Job still in the tree, no progress for a while.
    GpuRequest.objects.filter(pk=request.pk).update(
        status=RequestStatus.RELEASED, updated_at=timezone.now() - timedelta(minutes=10)
    )
    assert unremoved_request_ids() == [request.pk]

    assert reconcile_requests()["torn_down"] == 1

    assert not any(doc["kind"] == "Job" for doc in tree(gitops_root).values())
    request.refresh_from_db()
    assert request.observed_phase == "NotFound"
    assert unremoved_request_ids() == [], "once seen removed, the sweeper leaves it alone"


def test_reconcile_leaves_a_fresh_release_to_its_own_teardown(demo_org) -> None:
    request = approved(demo_org)
    GpuRequest.objects.filter(pk=request.pk).update(status=RequestStatus.RELEASED, observed_phase="Running")
    assert unremoved_request_ids() == []


def test_gpu_memory_is_kept_exactly(demo_org) -> None:
    request = approved(demo_org, gpu_memory_gb="12.5")
    assert request.gpu_memory_gb == Decimal("12.5")


def test_a_release_that_lands_while_applying_withdraws_the_applied_objects(demo_org, gitops_root) -> None:
    from allocations.clusters.gateways.gitops import GitOpsGateway

    request = gpu_request_submit(
        command=["python", "main.py"], acting_user=demo_org.member, team=demo_org.team, name="t", profile_data=TRAINING
    )
    GpuRequest.objects.filter(pk=request.pk).update(status=RequestStatus.APPROVED)

    class ReleasedWhileApplying(GitOpsGateway):
        """The requester releases between the apply and the observation (another worker runs the teardown)."""

        def apply(self, objects):
            result = super().apply(objects)
            GpuRequest.objects.filter(pk=request.pk).update(status=RequestStatus.RELEASED)
            return result

    gateway = ReleasedWhileApplying(gitops_root, demo_org.cluster.gitops_path)
    outcome = gpu_request_provision(request_id=request.pk, gateway=gateway)

    assert outcome.action == "withdrawn"
    assert not any(doc["kind"] == "Job" for doc in tree(gitops_root).values())


def test_a_re_applied_request_keeps_its_first_activation_and_a_failed_one_starts_again(demo_org) -> None:
    """Billing counts held GPUs from activated_at: a re-apply must not drop the hours before it."""
    from allocations.lifecycle import gpu_request_transition
    from allocations.requests.services import gpu_request_reapply

    request = approved(demo_org)
    first = request.activated_at
    assert request.status == RequestStatus.ACTIVE and first is not None

    gpu_request_reapply(request=request, acting_user=demo_org.approver)
    request.refresh_from_db()
    assert request.status == RequestStatus.ACTIVE
    assert request.activated_at == first

    gpu_request_transition(
        request=request, to_status=RequestStatus.FAILED, acting_user=None, updates={"status_detail": "node lost"}
    )
    gpu_request_reapply(request=request, acting_user=demo_org.approver)
    request.refresh_from_db()
    assert request.status == RequestStatus.ACTIVE
    assert request.activated_at > first
