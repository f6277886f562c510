"""The catalog and tiers kept per process: reused while nothing changes, rebuilt after an admin's save or delete."""

from __future__ import annotations

from decimal import Decimal

import pytest
from django.core.cache import cache

from allocations.models import GpuModel, MigProfileDefinition, SlaTier
from allocations.reference_cache import VERSION_KEY
from allocations.selectors import catalog_from_db, tiers_by_slug

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
    cache.delete(VERSION_KEY)

    with django_assert_num_queries(2):  # the models and their MIG profiles, read again
        catalog_from_db()
