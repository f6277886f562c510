"""Every page that shows money names its prices; a pool whose model has no price says so.

The demo pool is H100-80GB (catalog list price 6.88/h); an A30 pool is added, which the catalog cannot price (no
on-demand A30 instance) until a price book lists it.
"""

from __future__ import annotations

from datetime import date

import pytest
from django.test import Client
from django.urls import reverse

from allocations.models import GpuModel, SharingMode
from billing.models import GpuPrice, PriceBook
from tests.factories import NodePoolFactory

pytestmark = pytest.mark.django_db

CATALOG_BASIS = "catalog list price, AWS us-east-1 on-demand per GPU"


def client_for(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


@pytest.fixture
def a30_pool(demo_org):
    return NodePoolFactory(
        cluster=demo_org.cluster, name="a30", gpu_model=GpuModel.objects.get(name="A30"), sharing_mode=SharingMode.NONE
    )


def test_the_clusters_pages_and_the_admin_say_a_pool_has_no_price(demo_org, a30_pool):
    approver = client_for(demo_org.platform_admin)
    overview = approver.get(reverse("allocations:cluster-list")).content.decode()
    assert "No price for a30" in overview

    detail = approver.get(reverse("allocations:cluster-detail", args=["demo"])).content.decode()
    assert "No price: not in the price book, and the catalog has no list price for this model" in detail
    assert f"6.8800 USD/GPU-hour ({CATALOG_BASIS})" in detail  # the H100 pool

    admin = approver.get(reverse("admin:allocations_nodepool_changelist")).content.decode()
    assert "No price: not in the price book" in admin
    assert "6.8800 USD/GPU-hour" in admin


def test_a_price_book_prices_the_pool_and_the_pages_name_its_version(demo_org, a30_pool):
    book = PriceBook.objects.create(
        version=7, currency="USD", effective_from=date(2020, 1, 1), loaded_at="2020-01-01T00:00Z"
    )
    GpuPrice.objects.create(price_book=book, gpu_model="A30", hourly_rate="1.25")
    approver = client_for(demo_org.platform_admin)

    detail = approver.get(reverse("allocations:cluster-detail", args=["demo"])).content.decode()
    assert "1.2500 USD/GPU-hour (price book)" in detail
    assert "No price for a30" not in approver.get(reverse("allocations:cluster-list")).content.decode()

    for name in ("billing:dashboard", "billing:report-list", "allocations:approvals"):
        page = approver.get(reverse(name)).content.decode()
        assert "Price book v7 (in effect from 2020-01-01, USD)" in page, name
    team = client_for(demo_org.team_lead).get(reverse("allocations:team-detail", args=["vision"])).content.decode()
    assert "Price book v7" in team


def test_without_a_price_book_pages_name_the_catalog_basis(demo_org):
    page = client_for(demo_org.platform_admin).get(reverse("billing:dashboard")).content.decode()
    assert f"No price book loaded: every GPU model is priced at its {CATALOG_BASIS}." in page


def test_a_price_book_loaded_after_a_page_was_shown_is_named_on_the_next(demo_org):
    # The books' dates and versions are kept per process: loading one must replace what the first view kept.
    approver = client_for(demo_org.platform_admin)
    assert (
        f"No price book loaded: every GPU model is priced at its {CATALOG_BASIS}."
        in approver.get(reverse("allocations:approvals")).content.decode()
    )
    PriceBook.objects.create(version=8, currency="EUR", effective_from=date(2021, 3, 4), loaded_at="2021-03-01T00:00Z")
    page = approver.get(reverse("allocations:approvals")).content.decode()
    assert "Price book v8 (in effect from 2021-03-04, EUR)" in page
    PriceBook.objects.create(version=9, currency="EUR", effective_from=date(2099, 1, 1), loaded_at="2021-03-01T00:00Z")
    assert (
        "Price book v8 (in effect from 2021-03-04, EUR)"
        in approver.get(reverse("allocations:approvals")).content.decode()
    )
