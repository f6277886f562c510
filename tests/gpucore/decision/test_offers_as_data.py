"""recommend() with node-pool offers as data (a set, or ``NodePools`` as placement keeps them) answers what it
answers with a callback of the same offers.

Each sweep asks every memory on and either side of every limit (a GPU's, a MIG profile's, a time-sliced share's),
for a cluster whose pools change between one call and the next (a pool added, one changed, one removed, all removed).
"""

from __future__ import annotations

from dataclasses import replace
from decimal import Decimal
from typing import Any

import pytest

from gpucore.catalog import Catalog, MigProfile
from gpucore.decision import (
    BUILTIN_CATALOG,
    DEFAULT_TIERS_BY_SLUG,
    NodePools,
    ProfileError,
    WorkloadProfile,
    recommend,
)
from gpucore.usable_memory import HEADROOM_RATIO, usable_gib

STEP = Decimal("0.000001")  # a profile's finest memory (6 decimal places)
BALANCED = {"1g.5gb": 2, "2g.10gb": 1, "3g.20gb": 1}

_BASE = frozenset(
    {
        ("A100-40GB", "dedicated", None),
        ("A100-40GB", "mig", "1g.5gb"),
        ("A100-40GB", "mig", "3g.20gb"),
        ("A100-80GB", "dedicated", None),
        ("A100-80GB", "time-slicing", None),
        ("H100-80GB", "mig", "1g.10gb"),
        ("H100-80GB", "mig", "2g.20gb"),
        ("H100-80GB", "dedicated", None),
        ("A30", "mig", "1g.6gb"),
        ("L4", "time-slicing", None),
        ("T4", "time-slicing", None),
        ("T4", "dedicated", None),
    }
)
_NODES = {"A100-40GB": 8, "A100-80GB": 4, "H100-80GB": 8, "T4": 4}
_LAYOUTS = {("A100-40GB", "1g.5gb"): BALANCED, ("A100-40GB", "3g.20gb"): BALANCED}


def _state(offers: frozenset[Any], replicas: dict[str, Any], nodes: dict[str, int], layouts: dict[Any, Any]) -> Any:
    return offers, {"time_slice_replicas": replicas, "gpus_per_node": nodes, "mig_layouts": layouts}


# One cluster's pools as they change, one step at a time: what placement would pass for each.
STATES = [
    _state(_BASE, {"A100-80GB": 4, "L4": 4, "T4": 4}, _NODES, _LAYOUTS),
    # a pool added: A100-40GB 2g.10gb slices (a non-recommendable 1g.10gb too)
    _state(
        _BASE | {("A100-40GB", "mig", "2g.10gb"), ("A100-40GB", "mig", "1g.10gb")},
        {"A100-80GB": 4, "L4": 4, "T4": 4},
        _NODES,
        {**_LAYOUTS, ("A100-40GB", "2g.10gb"): BALANCED, ("A100-40GB", "1g.10gb"): {"1g.10gb": 4}},
    ),
    # a pool changed: the T4 pool time-sliced 2 ways instead of 4, the H100 nodes of 2 GPUs
    _state(_BASE, {"A100-80GB": 4, "L4": 4, "T4": 2}, {**_NODES, "H100-80GB": 2}, _LAYOUTS),
    # a pool removed: no dedicated H100
    _state(_BASE - {("H100-80GB", "dedicated", None)}, {"A100-80GB": 4, "L4": 4, "T4": 4}, _NODES, _LAYOUTS),
    # every pool removed
    _state(frozenset(), {}, {}, {}),
]


def _memories(gpu_count: int, catalog: Catalog = BUILTIN_CATALOG) -> list[Decimal]:
    values = set()
    for model in catalog:
        # The boundaries that decide: 85 % of the usable GiB of a GPU or slice (gpucore.usable_memory).
        capacity = usable_gib(model) * HEADROOM_RATIO * gpu_count
        values.add(capacity)
        values.update(usable_gib(model, p) * HEADROOM_RATIO * gpu_count for p in model.mig_profiles)
        values.update((capacity / tenants).quantize(STEP) for tenants in range(2, 9))
    return sorted({m for limit in values for m in (limit - STEP, limit, limit + STEP) if m > 0})


def _answer(catalog: Catalog, memory: Decimal, offered: Any, inputs: dict[str, Any], fields: dict[str, Any]) -> Any:
    profile = WorkloadProfile(gpu_memory_gb=memory, **fields)
    given = {"pools": offered} if isinstance(offered, NodePools) else {"offered": offered, **inputs}
    try:
        return recommend(profile, catalog, tiers=DEFAULT_TIERS_BY_SLUG, **given).to_dict()
    except ProfileError as error:
        return error.errors


def _callback(offers: frozenset[Any]) -> Any:
    return lambda model, strategy, mig_profile: (model, strategy, mig_profile) in offers


@pytest.mark.parametrize("gpu_model", [None, "A100-40GB", "H100-80GB", "T4"])
@pytest.mark.parametrize(
    "fields",
    [
        {"workload_type": "development"},
        {"workload_type": "realtime_inference"},
        {"workload_type": "batch_inference", "sla_tier": "tier3_development", "isolation_required": True},
        {"workload_type": "training", "gpu_count": 2},
    ],
    ids=["development", "realtime", "batch-tier3-isolated", "training-2-gpus"],
)
def test_answers_for_offers_as_data_are_the_callbacks_as_the_pools_change(
    gpu_model: str | None, fields: dict[str, Any]
) -> None:
    given = {**fields, "gpu_model": gpu_model}
    kept = [NodePools(offers=offers, **inputs) for offers, inputs in STATES]  # as placement keeps them
    for memory in _memories(fields.get("gpu_count", 1)):
        for (offers, inputs), pools in zip(STATES, kept, strict=True):  # the pools change between two calls
            fresh = _answer(BUILTIN_CATALOG, memory, _callback(offers), inputs, given)
            where = f"{memory} GB, {sorted(offers)}"
            assert _answer(BUILTIN_CATALOG, memory, offers, inputs, given) == fresh, where
            assert _answer(BUILTIN_CATALOG, memory, pools, {}, given) == fresh, where


def test_a_set_of_offers_is_the_callback_of_that_set() -> None:
    # A plain set, a frozenset and a callback of the same offers give the same answer.
    offers, inputs = STATES[1]
    profile = {"workload_type": "realtime_inference", "gpu_memory_gb": Decimal(8)}
    answers = [
        recommend(WorkloadProfile(**profile), BUILTIN_CATALOG, offered=offered, **inputs).to_dict()
        for offered in (_callback(offers), set(offers), offers)
    ]
    answers.append(
        recommend(WorkloadProfile(**profile), BUILTIN_CATALOG, pools=NodePools(offers=offers, **inputs)).to_dict()
    )
    assert answers[0] == answers[1] == answers[2] == answers[3]
    # The lightest offered slice that holds 8 GiB (9.75 x 0.85 = 8.29), although 1g.10gb is not one the framework
    # recommends unasked.
    assert (answers[0]["gpu_model"], answers[0]["mig_profile"]) == ("A100-40GB", "1g.10gb")


def test_an_offered_slice_the_framework_never_recommends_unasked_is_the_lightest_that_holds_the_memory() -> None:
    # An operator's A100-40GB pool of 2g.13gb slices (not recommendable, not measured: 95 % of 13 = 12.35 GiB usable):
    # 10.4975 GiB (85 % of it) fits one, 10.497501 GiB needs a 3g.20gb.
    a100 = BUILTIN_CATALOG.get("A100-40GB")
    odd = MigProfile("2g.13gb", memory_gb=13, compute_slices=2, memory_slices=3, max_instances=2, recommendable=False)
    catalog = Catalog(
        tuple(replace(m, mig_profiles=(*m.mig_profiles, odd)) if m is a100 else m for m in BUILTIN_CATALOG)
    )
    offers = frozenset({("A100-40GB", "mig", "2g.13gb"), ("A100-40GB", "mig", "3g.20gb"), ("T4", "time-slicing", None)})
    for gpu_model in (None, "A100-40GB"):
        given = {"workload_type": "batch_inference", "gpu_model": gpu_model}
        for memory in _memories(1, catalog):
            fresh = _answer(catalog, memory, _callback(offers), {}, given)
            assert _answer(catalog, memory, offers, {}, given) == fresh, f"{memory} GB"
    chosen = [
        _answer(catalog, Decimal(m), offers, {}, {"workload_type": "batch_inference"}) for m in ("10.4975", "10.497501")
    ]
    assert [answer["mig_profile"] for answer in chosen] == ["2g.13gb", "3g.20gb"]


def test_node_pools_are_read_only_and_not_given_twice() -> None:
    offers, inputs = STATES[0]
    pools = NodePools(offers=offers, **inputs)
    with pytest.raises(AttributeError):
        pools.offered = None  # type: ignore[misc]
    with pytest.raises(TypeError):
        pools.gpus_per_node["T4"] = 1  # type: ignore[index]
    with pytest.raises(ValueError, match="not both"):
        recommend(
            WorkloadProfile(workload_type="development", gpu_memory_gb=Decimal(4)),
            BUILTIN_CATALOG,
            pools=pools,
            offered=offers,
        )
