"""recommend() remembers what a band of memory gives (issue #15): an answer from a band is the one worked out afresh.

Without a pool callback, the choice and the alternatives depend on the memory only through which of the context's
limits (a GPU's, a MIG profile's, a time-sliced share's memory, per GPU of the replica) it exceeds. Each sweep below
asks every memory on, just under and just over every limit, once upward with one catalog and once downward with an
equal catalog (another object: the bands are its own), so each band is first worked out from its lowest memory in
one and from its highest in the other. A limit put on the wrong side of a band makes the two disagree there.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest

from gpucore.catalog import Catalog
from gpucore.decision import BUILTIN_CATALOG, DEFAULT_TIERS_BY_SLUG, ProfileError, WorkloadProfile, recommend

STEP = Decimal("0.000001")  # a profile's finest memory (6 decimal places)


def _limits(gpu_count: int) -> list[Decimal]:
    """Every limit of the built-in catalog for ``gpu_count`` GPUs per replica, rounded to a profile's finest step."""
    values = set()
    for model in BUILTIN_CATALOG:
        capacity = Decimal(model.memory_gb * gpu_count)
        values.add(capacity)
        values.update(Decimal(p.memory_gb * gpu_count) for p in model.mig_profiles)
        values.update((capacity / tenants).quantize(STEP) for tenants in range(2, 9))
    return sorted(values)


def _memories(gpu_count: int) -> list[Decimal]:
    return sorted({m for limit in _limits(gpu_count) for m in (limit - STEP, limit, limit + STEP) if m > 0})


def _answer(catalog: Catalog, memory: Decimal, **fields: Any) -> Any:
    profile = WorkloadProfile(gpu_memory_gb=memory, **fields)
    try:
        return recommend(profile, catalog, tiers=DEFAULT_TIERS_BY_SLUG).to_dict()
    except ProfileError as error:
        return error.errors


@pytest.mark.parametrize("gpu_model", [None, "A100-40GB", "H100-80GB", "A30", "L4", "T4"])
@pytest.mark.parametrize(
    "fields",
    [
        {"workload_type": "development"},
        {"workload_type": "batch_inference", "sla_tier": "tier3_development", "replicas": 2},
        {"workload_type": "realtime_inference"},
        {"workload_type": "realtime_inference", "latency_sensitive": False, "isolation_required": True},
        {"workload_type": "training", "gpu_count": 2},
    ],
    ids=["development", "batch-tier3", "realtime", "realtime-isolated", "training-2-gpus"],
)
def test_an_answer_from_a_band_is_the_answer_worked_out_afresh(gpu_model: str | None, fields: dict[str, Any]) -> None:
    upward, downward = Catalog(BUILTIN_CATALOG.models), Catalog(BUILTIN_CATALOG.models)
    memories = _memories(fields.get("gpu_count", 1))
    given = {**fields, "gpu_model": gpu_model}
    up = {memory: _answer(upward, memory, **given) for memory in memories}
    down = {memory: _answer(downward, memory, **given) for memory in reversed(memories)}
    for memory in memories:
        assert up[memory] == down[memory], f"{memory} GB"
