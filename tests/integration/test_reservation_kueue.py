"""A reservation window on a Kueue cluster, against the API server emulator over real HTTP: the reconcile task raises
the team's ClusterQueue nominalQuota when the window begins, does nothing when run again, and restores the quota
after the window; every ClusterQueue the server stores validates against Kueue's CRD schema."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta

import pytest
from django.utils import timezone

from allocations.models import ClusterBackend, ClusterScheduler, Quota, Reservation
from allocations.reservations.quota_windows import reservation_quotas_reconcile
from allocations.reservations.services import reservation_cancel, reservation_create, reservation_decide
from tests.factories import MembershipFactory, QuotaFactory, UserFactory
from tests.gpucore.manifests.kueue_validation import validate_kueue
from tests.integration.k8s_emulator import EmulatedCluster
from tests.integration.test_kueue_cluster import as_sent

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def emulated() -> Iterator[EmulatedCluster]:
    with EmulatedCluster.running() as running:
        yield running


@pytest.fixture
def kueue_org(demo_org, emulated: EmulatedCluster):
    """The demo cluster on the emulator with Kueue; NLP holds 4 GPUs nominal and may borrow 8 more, Vision 8."""
    cluster = demo_org.cluster
    cluster.backend, cluster.api_endpoint, cluster.scheduler = (
        ClusterBackend.KUBERNETES,
        emulated.url,
        ClusterScheduler.KUEUE,
    )
    cluster.full_clean()
    cluster.save()
    Quota.objects.all().delete()
    QuotaFactory(team=demo_org.team, cluster=cluster, limit=8)
    QuotaFactory(team=demo_org.other_team, cluster=cluster, limit=4, borrowing_limit=8)
    lead = UserFactory(username="nlp-lead")
    MembershipFactory(user=lead, team=demo_org.other_team, role="lead")
    demo_org.nlp_lead = lead
    return demo_org


def nlp_quota(emulated: EmulatedCluster) -> dict:
    queue = emulated.get("ClusterQueue", "nlp")
    validate_kueue(as_sent(queue))
    (flavor,) = queue["spec"]["resourceGroups"][0]["flavors"]
    (resources,) = flavor["resources"]
    return resources


def approved_window(org) -> Reservation:
    reservation = reservation_create(
        acting_user=org.nlp_lead,
        team=org.other_team,
        node_pool=org.pool,
        resource_name="nvidia.com/gpu",
        quantity=10,
        start=timezone.now() + timedelta(hours=1),
        end=timezone.now() + timedelta(hours=5),
    )
    return reservation_decide(acting_user=org.approver, reservation=reservation, approve=True)


def test_the_window_raises_the_queues_quota_then_restores_it(kueue_org, emulated: EmulatedCluster) -> None:
    reservation = approved_window(kueue_org)
    # Approved but not begun: nothing to change (the task queued by the approval ran and applied nothing).
    assert reservation_quotas_reconcile(now=timezone.now()) == {}
    assert emulated.get("ClusterQueue", "nlp") is None

    inside = reservation.start + timedelta(minutes=1)
    assert reservation_quotas_reconcile(now=inside) == {"demo": "1 windows applied, 0 restored"}

    # Raised to the reservation; the borrowing limit lowered by as much: 12 in all, as before.
    assert nlp_quota(emulated) == {"name": "nvidia.com/gpu", "nominalQuota": 10, "borrowingLimit": 2}
    reservation.refresh_from_db()
    assert reservation.quota_applied
    version = emulated.get("ClusterQueue", "nlp")["metadata"]["resourceVersion"]
    # Run again inside the window: nothing is out of step, nothing is applied.
    assert reservation_quotas_reconcile(now=inside + timedelta(minutes=1)) == {}
    assert emulated.get("ClusterQueue", "nlp")["metadata"]["resourceVersion"] == version

    after = reservation.end + timedelta(minutes=1)
    assert reservation_quotas_reconcile(now=after) == {"demo": "0 windows applied, 1 restored"}
    assert nlp_quota(emulated) == {"name": "nvidia.com/gpu", "nominalQuota": 4, "borrowingLimit": 8}
    reservation.refresh_from_db()
    assert not reservation.quota_applied


def test_a_cancelled_window_is_restored_by_the_next_run(kueue_org, emulated: EmulatedCluster) -> None:
    reservation = approved_window(kueue_org)
    inside = reservation.start + timedelta(minutes=1)
    reservation_quotas_reconcile(now=inside)
    assert nlp_quota(emulated)["nominalQuota"] == 10

    reservation_cancel(acting_user=kueue_org.nlp_lead, reservation=reservation)
    reservation_quotas_reconcile(now=inside + timedelta(minutes=2))

    assert nlp_quota(emulated)["nominalQuota"] == 4
    # Vision's queue is left as its quota says throughout.
    vision = emulated.get("ClusterQueue", "vision")["spec"]["resourceGroups"][0]["flavors"][0]["resources"]
    assert vision == [{"name": "nvidia.com/gpu", "nominalQuota": 8, "borrowingLimit": 0}]
