"""Reference data kept per process (catalog, tiers, candidate pools, price book rates): reused while nothing changes,
rebuilt after an admin's save or delete."""

from __future__ import annotations

from decimal import Decimal

import pytest
from django.core.cache import cache

from allocations.models import GpuModel, MigProfileDefinition, NodePool, SlaTier
from allocations.placement import candidate_pools
from allocations.reference_cache import VERSION_KEY
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
    cache.delete(VERSION_KEY)

    with django_assert_num_queries(2):  # the models and their MIG profiles, read again
        catalog_from_db()


def test_pools_and_prices_for_placement_are_read_once_and_seen_at_once_after_a_change(
    demo_org, django_assert_num_queries
):
    # The recommendation path (issue #15): candidate pools and the price book's rates are kept per process too.
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


def test_a_web_request_reads_the_version_once_and_sees_its_own_changes():
    from django.core.signals import request_finished, request_started
    from django.db import close_old_connections

    from allocations.reference_cache import reference_version

    first = reference_version()
    # The signals a request sends, without closing the test's database connection (as Django's test client does).
    request_started.disconnect(close_old_connections)
    request_finished.disconnect(close_old_connections)
    request_started.send(sender=None)
    try:
        assert reference_version() == first
        cache.set(VERSION_KEY, "another-process-changed-it")
        assert reference_version() == first  # one consistent version for the whole request
        model = GpuModel.objects.get(name="T4")
        model.list_hourly_price = Decimal("0.4343")
        model.save()  # a change the request makes itself is seen at once
        assert reference_version() not in (first, "another-process-changed-it")
        assert catalog_from_db().get("T4").list_hourly_usd == Decimal("0.4343")
    finally:
        request_finished.send(sender=None)
        request_started.connect(close_old_connections)
        request_finished.connect(close_old_connections)
    cache.set(VERSION_KEY, "after-the-request")
    assert reference_version() == "after-the-request"  # outside a request: read every time, as before


def test_a_placement_outside_a_request_reads_the_version_once(demo_org):
    # place() builds four kept values (pools, catalog, tiers, price book rates): from one version, read once, as a
    # web request does; a Celery task or a benchmark placing outside a request used to read the cache four times.
    from unittest import mock

    from allocations.placement import place
    from allocations.reference_cache import reference_version
    from gpucore.decision import WorkloadProfile

    profile = WorkloadProfile(workload_type="training", gpu_memory_gb=Decimal(40))
    place(profile)  # built once
    with mock.patch.object(cache, "get", wraps=cache.get) as reads:
        assert place(profile).node_pool == demo_org.pool
    assert [call.args[0] for call in reads.call_args_list].count(VERSION_KEY) == 1
    cache.set(VERSION_KEY, "changed-after-the-placement")
    assert reference_version() == "changed-after-the-placement"  # after it: read every time again
