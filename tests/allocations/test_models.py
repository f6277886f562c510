"""Model rules: namespaces, pool layouts, quota scopes, the append-only event log and the seeded catalog."""

import dataclasses

import pytest
from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction

from allocations.models import GpuModel, NodePool, RequestEvent, SharingMode, SlaTier
from allocations.reference_data import catalog_from_db, tiers_by_slug
from gpucore.catalog import BUILTIN_CATALOG
from gpucore.sla import DEFAULT_TIERS
from tests.factories import ClusterFactory, GpuRequestFactory, QuotaFactory, TeamFactory

pytestmark = pytest.mark.django_db


def test_team_namespace_defaults_to_team_slug() -> None:
    team = TeamFactory(slug="vision")
    assert team.namespace == "team-vision"
    custom = TeamFactory(slug="speech", namespace="ml-speech")
    assert custom.namespace == "ml-speech"


def test_team_slug_must_be_a_dns_label() -> None:
    team = TeamFactory.build(slug="Bad_Slug", name="Bad")
    with pytest.raises(ValidationError) as excinfo:
        team.full_clean()
    assert "slug" in excinfo.value.message_dict


def test_a_preemptible_tier_may_not_reach_the_protected_priority() -> None:
    tier3 = SlaTier.objects.get(slug="tier3_development")
    tier3.priority_value = 1_000_000
    with pytest.raises(ValidationError) as error:
        tier3.full_clean()
    assert "must stay below 1,000,000" in error.value.message_dict["priority_value"][0]
    tier3.priority_value = 999_999
    tier3.full_clean()


def test_data_migration_seeded_the_three_tiers() -> None:
    assert set(SlaTier.objects.values_list("slug", flat=True)) == {t.slug for t in DEFAULT_TIERS}
    tier1 = SlaTier.objects.get(slug="tier1_realtime")
    assert (tier1.isolation_floor, tier1.latency_p99_ms, str(tier1.availability_pct)) == ("dedicated", 10, "99.990")
    assert SlaTier.objects.get(slug="tier3_development").default_time_slice_replicas == 4
    assert tiers_by_slug()["tier2_batch"].isolation_floor == "hardware"


@pytest.mark.parametrize("name", ["A100-40GB", "A100-80GB", "H100-80GB", "H200", "A30", "L4", "T4", "V100-32GB"])
def test_catalog_seeded_with_required_models(name: str) -> None:
    assert GpuModel.objects.filter(name=name).exists()


def test_catalog_round_trips_through_the_database() -> None:
    def normalised(catalog):
        return {m.name: (m, sorted(m.mig_profiles, key=lambda p: p.name)) for m in catalog}

    db, builtin = normalised(catalog_from_db()), normalised(BUILTIN_CATALOG)
    assert db.keys() == builtin.keys()
    for name, (model, profiles) in builtin.items():
        db_model, db_profiles = db[name]
        assert db_profiles == profiles, name
        assert dataclasses.replace(db_model, mig_profiles=()) == dataclasses.replace(model, mig_profiles=()), name


def test_real_mig_profile_names_are_seeded() -> None:
    a100 = GpuModel.objects.get(name="A100-40GB")
    names = set(a100.mig_profiles.values_list("name", flat=True))
    assert {"1g.5gb", "2g.10gb", "3g.20gb", "4g.20gb", "7g.40gb"} <= names
    a30 = GpuModel.objects.get(name="A30")
    assert {"1g.6gb", "2g.12gb", "4g.24gb"} <= set(a30.mig_profiles.values_list("name", flat=True))
    assert not GpuModel.objects.get(name="T4").mig_capable


def _pool(**kwargs: object) -> NodePool:
    cluster = ClusterFactory()
    return NodePool(cluster=cluster, name="p", node_count=1, gpus_per_node=8, **kwargs)


def test_mig_pool_layout_is_checked_against_the_geometry() -> None:
    a100 = GpuModel.objects.get(name="A100-40GB")
    ok = _pool(gpu_model=a100, sharing_mode=SharingMode.MIG, mig_devices={"1g.5gb": 2, "2g.10gb": 1, "3g.20gb": 1})
    ok.full_clean()
    assert ok.capacity() == {"nvidia.com/mig-1g.5gb": 16, "nvidia.com/mig-2g.10gb": 8, "nvidia.com/mig-3g.20gb": 8}

    too_big = _pool(gpu_model=a100, sharing_mode=SharingMode.MIG, mig_devices={"3g.20gb": 2, "2g.10gb": 1})
    with pytest.raises(ValidationError, match="needs 10 memory slices"):
        too_big.full_clean()
    compute = _pool(gpu_model=a100, sharing_mode=SharingMode.MIG, mig_devices={"4g.20gb": 1, "2g.10gb": 2})
    with pytest.raises(ValidationError, match="needs 8 compute slices"):
        compute.full_clean()
    unknown = _pool(gpu_model=a100, sharing_mode=SharingMode.MIG, mig_devices={"2g.20gb": 1})
    with pytest.raises(ValidationError, match=r"no MIG profile '2g\.20gb'"):
        unknown.full_clean()
    t4 = _pool(gpu_model=GpuModel.objects.get(name="T4"), sharing_mode=SharingMode.MIG, mig_devices={"1g.5gb": 1})
    with pytest.raises(ValidationError, match="not MIG-capable"):
        t4.full_clean()


def test_time_slicing_pool_needs_replicas_and_multiplies_capacity() -> None:
    t4 = GpuModel.objects.get(name="T4")
    missing = _pool(gpu_model=t4, sharing_mode=SharingMode.TIME_SLICING)
    with pytest.raises(ValidationError) as excinfo:
        missing.full_clean()
    assert "time_slice_replicas" in excinfo.value.message_dict
    pool = _pool(gpu_model=t4, sharing_mode=SharingMode.TIME_SLICING, time_slice_replicas=4)
    pool.full_clean()
    assert pool.capacity() == {"nvidia.com/gpu": 32}


def test_quota_is_unique_per_scope_and_resource() -> None:
    team = TeamFactory()
    QuotaFactory(team=team, resource_name="nvidia.com/gpu", limit=4)
    duplicate = QuotaFactory.build(team=team, resource_name="nvidia.com/gpu", limit=8)
    with pytest.raises(ValidationError, match="already exists"):
        duplicate.full_clean()


@pytest.mark.integration
@pytest.mark.postgres
def test_quota_uniqueness_holds_in_postgresql_even_with_null_scope() -> None:
    # NULLS NOT DISTINCT needs PostgreSQL 15+; SQLite relies on full_clean() above.
    team = TeamFactory()
    QuotaFactory(team=team, resource_name="nvidia.com/gpu", limit=4)
    with pytest.raises(IntegrityError), transaction.atomic():
        QuotaFactory(team=team, resource_name="nvidia.com/gpu", limit=8)


def test_quota_resource_name_is_validated() -> None:
    quota = QuotaFactory.build(team=TeamFactory(), resource_name="gpus", limit=1)
    with pytest.raises(ValidationError) as excinfo:
        quota.full_clean()
    assert "resource_name" in excinfo.value.message_dict


def test_request_events_are_append_only() -> None:
    request = GpuRequestFactory()
    event = RequestEvent.objects.create(request=request, actor_label="x", from_status="", to_status="draft")
    event.comment = "rewritten"
    with pytest.raises(ValidationError):
        event.save()
    with pytest.raises(ValidationError):
        event.delete()
    assert RequestEvent.objects.get(pk=event.pk).comment == ""


def test_cluster_refuses_a_pasted_kubeconfig() -> None:
    cluster = ClusterFactory.build(backend="kubernetes", kubeconfig_secret_ref="apiVersion: v1\nclusters: []")
    with pytest.raises(ValidationError) as excinfo:
        cluster.full_clean()
    assert "kubeconfig_secret_ref" in excinfo.value.message_dict
