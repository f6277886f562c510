"""The team page's quota bars, in the words of the home and the quota page: used (approved requests, running or
about to) of the nominal quota, with what already runs."""

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

    # The nominal quota (Kueue's word), linked to the glossary; borrowing is shown below it.
    assert 'href="/glossary/#nominal-quota">Used / nominal</a></th>' in html
    assert "Running / approved" not in html
    assert '3 / 8 <span class="muted small">(1 running)</span>' in html
    assert 'aria-label="3 used of 8 nominal, 1 running"' in html


def test_home_and_quota_page_name_the_columns_the_same_way(client, demo_org) -> None:
    from tests.factories import QuotaFactory

    QuotaFactory(team=demo_org.team, node_pool=demo_org.pool, resource_name="nvidia.com/gpu", limit=8)
    client.force_login(demo_org.member)

    home = client.get("/").content.decode()
    quotas = client.get(reverse("allocations:quota-list")).content.decode()

    assert 'href="/glossary/#nominal-quota">Used / nominal</a></th>' in home and "In use / limit" not in home
    assert 'href="/glossary/#nominal-quota">Used / nominal</a></th>' in quotas
