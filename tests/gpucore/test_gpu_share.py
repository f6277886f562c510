"""The GPU share (docs/cost-model.md, "The arithmetic") and the one price basis, against hand-worked cases and every
MIG layout.

Regressions kept here: mixed price bases (A100-80GB priced far below A100-40GB without a price book) and
MIG billing compute slices only (4 x 1g.20gb on an H100 billing 4/7 of a GPU; A30 geometry guessed from a name).
"""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime
from decimal import Decimal as D
from fractions import Fraction
from functools import cache
from itertools import combinations_with_replacement

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gpucore.catalog import BUILTIN_CATALOG, GpuModelSpec
from gpucore.chargeback import Allocation, compute_chargeback
from gpucore.pricing import (
    CATALOG_PRICE_BASIS,
    PricingError,
    catalog_hourly_rate,
    gpu_share,
    gpu_share_fraction,
    layout_weight,
    mig_weight,
    to_cents,
)

OCT = datetime(2026, 10, 1, tzinfo=UTC)
NOV = datetime(2026, 11, 1, tzinfo=UTC)
MIG_MODELS = [m for m in BUILTIN_CATALOG if m.mig_capable]
H100 = BUILTIN_CATALOG.get("H100-80GB")
A30 = BUILTIN_CATALOG.get("A30")


# --- one price basis -------------------------------------------------------------------------------------------


def test_reproduction_1_catalog_prices_share_one_basis() -> None:
    # Before: A100-80GB came out at its TCO (~$0.82/h, ~$600/month) against A100-40GB's list price ($2.74/h), so the
    # bigger GPU looked 3x cheaper. On one basis the 80 GB part costs at least as much as the 40 GB one.
    rate = {m.name: catalog_hourly_rate(m) for m in BUILTIN_CATALOG}
    assert rate["A100-80GB"] is not None and rate["A100-40GB"] is not None
    assert rate["A100-80GB"] >= rate["A100-40GB"]
    assert rate["A100-80GB"] == D("3.4309") and rate["H100-80GB"] == D("6.88")


def test_every_catalog_model_says_where_its_price_comes_from() -> None:
    for model in BUILTIN_CATALOG:
        assert model.price_source, model.name
        if model.list_hourly_usd is None:
            assert "no sourced" in model.price_source.lower(), model.name
    assert "list price" in CATALOG_PRICE_BASIS


# --- MIG bills its memory too -----------------------------------------------------------------------------------


def test_reproduction_2_four_1g20gb_bill_one_h100() -> None:
    # 1g.20gb: 1 of 7 compute slices but 2 of 8 memory slices; four of them fill the GPU, so together they bill one.
    layout = {"1g.20gb": 4}
    share = gpu_share("mig", model=H100, mig_profile="1g.20gb", layout=layout)
    assert share == D("0.25")
    assert gpu_share_fraction("mig", model=H100, mig_profile="1g.20gb", layout=layout) * 4 == 1
    # Imported usage knows no layout: the weight alone, still 1/4, never 1/7.
    assert gpu_share("mig", model=H100, mig_profile="nvidia.com/mig-1g.20gb") == D("0.25")


def test_reproduction_2_a30_geometry_from_the_catalog_not_the_name() -> None:
    # The DCGM model name "NVIDIA A30" used to fall through to 7 compute slices (1/7); the catalog says 4.
    model = BUILTIN_CATALOG.by_dcgm_model_name("NVIDIA A30")
    assert model is A30
    assert gpu_share("mig", model=model, mig_profile="1g.6gb") == D("0.25")
    renamed = replace(A30, name="NVIDIA A30")  # the same geometry under the DCGM name
    assert gpu_share("mig", model=renamed, mig_profile="2g.12gb") == D("0.5")


def test_chargeback_bills_four_1g20gb_as_one_gpu_hour_per_hour() -> None:
    allocations = [
        Allocation(
            key=f"request:{i}",
            team="vision",
            name=f"slice-{i}",
            gpu_model="H100-80GB",
            strategy="mig",
            resource_name="nvidia.com/mig-1g.20gb",
            mig_profile="1g.20gb",
            mig_layout={"1g.20gb": 4},
            quantity=1,
            start=OCT,
            end=datetime(2026, 10, 1, 10, tzinfo=UTC),
        )
        for i in range(4)
    ]
    result = compute_chargeback(
        allocations,
        window_start=OCT,
        window_end=datetime(2026, 10, 1, 10, tzinfo=UTC),
        periods=[],
        capacity_gpus={"H100-80GB": 1},
        fallback_rates={"h100-80gb": D("6.88")},
    )
    team = result.teams["vision"]
    assert team.allocated_gpu_hours.quantize(D("0.000001")) == D("10")
    assert to_cents(team.amount) == D("68.80")
    assert to_cents(result.total_idle_cost) == D("0.00")


def test_weights_and_shares_by_hand() -> None:
    a100 = BUILTIN_CATALOG.get("A100-40GB")
    assert mig_weight(a100, a100.profile("3g.20gb")) == Fraction(1, 2)  # max(3/7, 4/8)
    assert mig_weight(a100, a100.profile("2g.10gb")) == Fraction(2, 7)  # max(2/7, 2/8)
    # 4g.20gb + 3g.20gb weigh 4/7 + 1/2 = 15/14 > 1: each is scaled so the GPU bills exactly once.
    layout = {"4g.20gb": 1, "3g.20gb": 1}
    assert layout_weight(a100, layout) == Fraction(15, 14)
    assert gpu_share_fraction("mig", model=a100, mig_profile="4g.20gb", layout=layout) == Fraction(8, 15)
    assert gpu_share("dedicated", model=a100) == D(1)
    assert gpu_share("time-slicing", model=a100, time_slice_replicas=4) == D("0.25")
    with pytest.raises(PricingError):
        gpu_share("mig", model=a100, mig_profile="3g.99gb")
    with pytest.raises(PricingError):
        gpu_share("mig", model=a100, mig_profile="3g.20gb", layout={"1g.5gb": 7})  # not in its own layout
    with pytest.raises(PricingError):
        gpu_share("time-slicing", model=a100, time_slice_replicas=1)


# --- every valid layout of every MIG model ---------------------------------------------------------------------


def _placeable(model: GpuModelSpec, names: tuple[str, ...]) -> bool:
    """Whether these instances fit one GPU at allowed start slices without overlapping memory (NVIDIA's rule)."""
    profiles = sorted((model.profile(n) for n in names), key=lambda p: -p.memory_slices)
    if sum(p.compute_slices for p in profiles) > model.mig_compute_slices:
        return False
    counts: dict[str, int] = {}
    for p in profiles:
        counts[p.name] = counts.get(p.name, 0) + 1
        if counts[p.name] > p.max_instances:
            return False
    if sum(1 for p in profiles if p.media_extensions) > 1:
        return False
    used = [False] * model.mig_memory_slices

    def place(i: int) -> bool:
        if i == len(profiles):
            return True
        p = profiles[i]
        for start in p.placement_starts:
            end = start + p.memory_slices
            if end <= len(used) and not any(used[start:end]):
                used[start:end] = [True] * p.memory_slices
                if place(i + 1):
                    return True
                used[start:end] = [False] * p.memory_slices
        return False

    return place(0)


@cache
def valid_layouts(model_name: str) -> tuple[tuple[str, ...], ...]:
    """Every non-empty multiset of MIG instances that can be placed on one GPU of the model."""
    model = BUILTIN_CATALOG.get(model_name)
    names = [p.name for p in model.mig_profiles]
    found = []
    for size in range(1, model.mig_memory_slices + 1):
        for combo in combinations_with_replacement(names, size):
            if _placeable(model, combo):
                found.append(combo)
    return tuple(found)


def _as_layout(combo: tuple[str, ...]) -> dict[str, int]:
    layout: dict[str, int] = {}
    for name in combo:
        layout[name] = layout.get(name, 0) + 1
    return layout


@pytest.mark.parametrize("model", MIG_MODELS, ids=lambda m: m.name)
def test_every_valid_layout_bills_at_most_one_gpu_and_every_maximal_layout_exactly_one(model) -> None:
    layouts = valid_layouts(model.name)
    assert len(layouts) > 10
    maximal = 0
    for combo in layouts:
        layout = _as_layout(combo)
        total = sum(
            gpu_share_fraction("mig", model=model, mig_profile=name, layout=layout) * count
            for name, count in layout.items()
        )
        assert total <= 1, (model.name, combo)
        if not any(_placeable(model, (*combo, p.name)) for p in model.mig_profiles):
            maximal += 1
            assert total == 1, (model.name, combo)
    assert maximal > 0


@settings(max_examples=60, deadline=None)
@given(
    model=st.sampled_from(MIG_MODELS),
    pick=st.integers(min_value=0, max_value=10_000),
    hours=st.integers(min_value=1, max_value=744),
    spare_gpus=st.integers(min_value=0, max_value=3),
    rate=st.decimals(min_value=D("0.01"), max_value=D("20"), places=4),
)
def test_chargeback_plus_idle_adds_up_to_the_fleet_cost(model, pick, hours, spare_gpus, rate) -> None:
    # One GPU partitioned with any valid layout, every instance allocated for the window, plus idle spare GPUs:
    # what the teams pay plus the idle cost is exactly what the fleet costs.
    layouts = valid_layouts(model.name)
    combo = layouts[pick % len(layouts)]
    layout = _as_layout(combo)
    end = datetime(2026, 10, 1, tzinfo=UTC).replace(day=1) + (NOV - OCT) * hours / 744
    allocations = [
        Allocation(
            key=f"request:{i}",
            team=f"team-{i % 3}",
            name=name,
            gpu_model=model.name,
            strategy="mig",
            resource_name=f"nvidia.com/mig-{name}",
            mig_profile=name,
            mig_layout=layout,
            quantity=1,
            start=OCT,
            end=end,
        )
        for i, name in enumerate(combo)
    ]
    gpus = 1 + spare_gpus
    result = compute_chargeback(
        allocations,
        window_start=OCT,
        window_end=end,
        periods=[],
        capacity_gpus={model.name: gpus},
        fallback_rates={model.name.casefold(): rate},
    )
    fleet = result.total_capacity_cost
    allocated = sum((line.base_amount for t in result.teams.values() for line in t.lines), D(0))
    assert abs(allocated + result.total_idle_cost - fleet) < D("1e-15")
    assert allocated <= fleet + D("1e-15")
