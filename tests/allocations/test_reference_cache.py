"""Reference data kept per process (catalog, tiers, candidate pools, price book rates): reused while nothing changes,
rebuilt after an admin's save or delete."""

from __future__ import annotations

from decimal import Decimal

import pytest
from django.core.cache import cache

from allocations.clusters.placement import candidate_pools
from allocations.models import GpuModel, MigProfileDefinition, NodePool, SlaTier
from allocations.reference_data import catalog_from_db, tiers_by_slug

pytestmark = pytest.mark.django_db


def test_catalog_and_tiers_are_read_once_while_nothing_changes(django_assert_num_queries):
    catalog_from_db(), tiers_by_slug()

    with django_assert_num_queries(0):
        assert catalog_from_db() is catalog_from_db()
        tiers_by_slug()


def test_a_saved_model_price_is_seen_at_once():
    model = GpuModel.objects.get(name="T4")
    before = catalog_from_db().get("T4")

    model.list_hourly_price = Decimal("0.4242")
    model.save()

    assert catalog_from_db().get("T4").list_hourly_usd == Decimal("0.4242") != before.list_hourly_usd


def test_a_deleted_mig_profile_and_a_changed_tier_are_seen_at_once():
    profile = MigProfileDefinition.objects.filter(gpu_model__name="A100-40GB").order_by("name").first()
    assert profile.name in {p.name for p in catalog_from_db().get("A100-40GB").mig_profiles}
    tier = SlaTier.objects.get(slug="tier2_batch")
    tiers_by_slug()

    profile.delete()
    tier.price_multiplier = Decimal("1.25")
    tier.save()

    assert profile.name not in {p.name for p in catalog_from_db().get("A100-40GB").mig_profiles}
    assert tiers_by_slug()["tier2_batch"].price_multiplier == Decimal("1.25")


def test_a_cleared_cache_rebuilds(django_assert_num_queries):
    catalog_from_db()
    cache.clear()

    with django_assert_num_queries(2):  # the models and their MIG profiles, read again
        catalog_from_db()


def test_pools_and_prices_for_placement_are_read_once_and_seen_at_once_after_a_change(
    demo_org, django_assert_num_queries
):
    # The recommendation path: candidate pools and the price book's rates are kept per process too.
    from billing.costs.selectors import current_gpu_rates
    from tests.billing.cost_helpers import load_book

    load_book({"H100-80GB": "2.00"}, effective_from="2026-01-01")
    assert current_gpu_rates() == {"H100-80GB": Decimal("2.00")}
    pools = candidate_pools()
    with django_assert_num_queries(0):
        assert candidate_pools() == pools
        current_gpu_rates()

    added = NodePool.objects.create(cluster=demo_org.cluster, name="zz-t4", gpu_model=GpuModel.objects.get(name="T4"))
    load_book({"H100-80GB": "3.50"}, effective_from="2026-02-01")

    assert added in candidate_pools()
    assert current_gpu_rates() == {"H100-80GB": Decimal("3.50")}


def test_a_price_book_takes_effect_on_its_date_without_a_write(demo_org):
    from datetime import timedelta

    from django.utils import timezone

    from billing.costs.selectors import current_gpu_rates
    from tests.billing.cost_helpers import load_book

    today = timezone.now().date()
    load_book({"H100-80GB": "2.00"}, effective_from=f"{today - timedelta(days=1):%Y-%m-%d}")
    load_book({"H100-80GB": "9.00"}, effective_from=f"{today + timedelta(days=1):%Y-%m-%d}")

    assert current_gpu_rates() == {"H100-80GB": Decimal("2.00")}  # tomorrow's book is not in effect yet
