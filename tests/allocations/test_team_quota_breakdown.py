"""The team page's quota bars: what runs, what is approved (running or about to), and the limit."""

import pytest
from django.urls import reverse

from allocations.models import RequestStatus
from tests.factories import GpuRequestFactory

pytestmark = pytest.mark.django_db


def test_quota_row_shows_running_approved_and_limit(client, demo_org) -> None:
    common = {
        "team": demo_org.team,
        "requester": demo_org.member,
        "cluster": demo_org.cluster,
        "node_pool": demo_org.pool,
    }
    GpuRequestFactory(status=RequestStatus.ACTIVE, resource_units=1, **common)
    GpuRequestFactory(status=RequestStatus.APPROVED, resource_units=2, **common)
    GpuRequestFactory(status=RequestStatus.PENDING_APPROVAL, resource_units=4, **common)  # holds nothing yet
    client.force_login(demo_org.member)

    html = client.get(reverse("allocations:team-detail", args=[demo_org.team.slug])).content.decode()

    assert "Running / approved / nominal" in html  # the nominal quota (Kueue's word); borrowing is shown below it
    assert "1 / 3 / 8" in html
    assert 'aria-label="1 running, 3 approved of 8"' in html
