"""The GPU catalog and the SLA tiers as the pure core takes them, kept per process and rebuilt after a change
(``infra.reference_cache``)."""

from __future__ import annotations

from collections.abc import Mapping
from decimal import Decimal
from typing import Any

from allocations.models import GpuModel, SlaTier
from gpucore.catalog import Catalog
from gpucore.decision.rules import default_replicas
from gpucore.sla import SlaTierSpec
from gpucore.vocabulary import IsolationFloor, WorkloadType
from infra.reference_cache import REFERENCE_DATA, cached


def catalog_from_db() -> Catalog:
    """The GPU catalog as the decision framework takes it, from the GpuModel table (admins may edit it).

    Kept per process and rebuilt after a change (``infra.reference_cache``); the Catalog is frozen.
    """
    return cached(REFERENCE_DATA, "catalog", _read_catalog)


def _read_catalog() -> Catalog:
    rows = GpuModel.objects.prefetch_related("mig_profiles").order_by("name")
    return Catalog(tuple(row.to_spec() for row in rows))


def tier_spec(tier: SlaTier) -> SlaTierSpec:
    """An SlaTier row as the pure SlaTierSpec the decision framework and manifests take."""
    return SlaTierSpec(
        slug=tier.slug,
        name=tier.name,
        isolation_floor=IsolationFloor(tier.isolation_floor),
        priority_class_name=tier.priority_class_name,
        priority_value=tier.priority_value,
        price_multiplier=Decimal(tier.price_multiplier),
        latency_p99_ms=tier.latency_p99_ms,
        availability_pct=tier.availability_pct,
        preemptible=tier.preemptible,
        default_time_slice_replicas=tier.default_time_slice_replicas,
        description=tier.description,
    )


def tiers_by_slug() -> dict[str, SlaTierSpec]:
    """Every SLA tier, keyed by slug (kept per process and rebuilt after a change, as the catalog)."""
    frozen = cached(
        REFERENCE_DATA, "tiers", lambda: tuple((tier.slug, tier_spec(tier)) for tier in SlaTier.objects.all())
    )
    return dict(frozen)  # a fresh dict: callers may change theirs


def with_default_replicas(profile_data: Mapping[str, Any]) -> dict[str, Any]:
    """The profile with ``replicas`` filled in where it names none and its tier needs more than one: real-time
    inference on a 99.99 % tier (tier 1) gets 2 rather than a refusal of a default the user never chose."""
    data = dict(profile_data)
    if data.get("replicas") not in (None, "") or not isinstance(data.get("sla_tier"), str):
        return data
    try:
        workload_type = WorkloadType(data.get("workload_type"))
    except ValueError:
        return data  # the profile's own check names the field
    replicas = default_replicas(workload_type, tiers_by_slug().get(data["sla_tier"]))
    if replicas > 1:
        data["replicas"] = replicas
    return data
