"""Pricing and chargeback arithmetic against hand-computed examples, to the cent (pure: no database)."""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal as D

import pytest

from gpucore.catalog import BUILTIN_CATALOG
from gpucore.chargeback import Allocation, PricePeriod, charge_allocation, compute_chargeback, price_segments
from gpucore.pricing import (
    PricingError,
    TcoInputs,
    gpu_hourly_rate,
    gpu_share,
    monthly_cost,
    tco_hourly,
    to_cents,
    weighted_shares,
)

OCT = datetime(2026, 10, 1, tzinfo=UTC)
NOV = datetime(2026, 11, 1, tzinfo=UTC)


def t(day: int, hour: int = 0) -> datetime:
    return datetime(2026, 10, day, hour, tzinfo=UTC)


def book(rates: dict[str, str], starts: datetime = OCT, version: int = 1, **multipliers: str) -> PricePeriod:
    return PricePeriod(
        starts=starts,
        version=version,
        gpu_rates={k.casefold(): D(v) for k, v in rates.items()},
        sla_multipliers={k: D(v) for k, v in multipliers.items()},
    )


def alloc(**kw: object) -> Allocation:
    base: dict[str, object] = {
        "key": "request:1",
        "team": "vision",
        "name": "job",
        "gpu_model": "H100-80GB",
        "strategy": "dedicated",
        "resource_name": "nvidia.com/gpu",
        "quantity": 1,
        "start": t(1),
        "end": t(1, 10),
    }
    base.update(kw)
    return Allocation(**base)  # type: ignore[arg-type]


def amount(a: Allocation, *periods: PricePeriod) -> D:
    lines = charge_allocation(a, window_start=OCT, window_end=NOV, periods=periods)
    return to_cents(sum((line.amount for line in lines), D(0)))


def test_tco_hourly_h100_design_example() -> None:
    # 27500 / (36 x 730) = 1.046423...; 0.7 kW x 1.4 x 0.12 = 0.1176; 27500 x 25% / 8760 = 0.784817...
    tco = TcoInputs(
        purchase_price=D("27500"),
        tdp_watts=D("700"),
        pue=D("1.4"),
        kwh_price=D("0.12"),
        ops_overhead_pct_per_year=D(25),
    )
    parts = tco_hourly(tco)
    assert (
        to_cents(parts.hardware) == D("1.05") and parts.power == D("0.1176") and to_cents(parts.operations) == D("0.78")
    )
    assert to_cents(parts.total) == D("1.95")
    assert to_cents(monthly_cost(parts.total)) == D("1422.65")
    # Measured power at half of TDP halves the power component only.
    half = tco_hourly(
        TcoInputs(purchase_price=D("27500"), tdp_watts=D("700"), kwh_price=D("0.12"), power_scale=D("0.5"))
    )
    assert half.power == D("0.0588")
    # Opportunity cost is added as is.
    assert tco_hourly(TcoInputs(purchase_price=D(0), tdp_watts=D(0), opportunity_cost_per_hour=D("0.30"))).total == D(
        "0.30"
    )


def test_gpu_hourly_rate_is_list_or_tco_never_both() -> None:
    assert gpu_hourly_rate(hourly=D("2.00")) == D("2.00")
    with pytest.raises(PricingError):
        gpu_hourly_rate()
    with pytest.raises(PricingError):
        gpu_hourly_rate(hourly=D(1), tco=TcoInputs(purchase_price=D(1), tdp_watts=D(1)))


def test_dedicated_pays_the_gpu_rate_per_gpu() -> None:
    # 2 GPUs x 10 h x $2.00 = $40.00; in tier1 (x1.5) = $60.00.
    assert amount(alloc(quantity=2), book({"H100-80GB": "2.00"})) == D("40.00")
    assert amount(alloc(quantity=2, sla_tier="tier1_realtime"), book({"H100-80GB": "2.00"}, tier1_realtime="1.5")) == D(
        "60.00"
    )
    # Replicas multiply the units: 1 GPU x 3 replicas x 10 h x $2.00 = $60.00.
    assert amount(alloc(quantity=1, replicas=3), book({"H100-80GB": "2.00"})) == D("60.00")


@pytest.mark.parametrize(
    ("model", "resource", "rate", "hours", "expected"),
    [
        # Weight max(compute slices / 7, memory slices / 8); no layout known, so the weight is the share.
        ("A100-40GB", "nvidia.com/mig-1g.5gb", "2.10", 100, "30.00"),  # max(1/7, 1/8) = 1/7 x 2.10 x 100
        ("A100-40GB", "nvidia.com/mig-2g.10gb", "2.10", 100, "60.00"),  # max(2/7, 2/8) = 2/7
        ("A100-40GB", "nvidia.com/mig-3g.20gb", "2.10", 100, "105.00"),  # max(3/7, 4/8) = 1/2
        ("A100-40GB", "nvidia.com/mig-4g.20gb", "2.10", 100, "120.00"),  # max(4/7, 4/8) = 4/7
        ("A100-40GB", "nvidia.com/mig-7g.40gb", "2.10", 100, "210.00"),  # 7/7
        ("H100-80GB", "nvidia.com/mig-1g.10gb", "3.50", 10, "5.00"),  # 1/7 x 3.50 x 10
        ("H100-80GB", "nvidia.com/mig-1g.20gb", "3.50", 10, "8.75"),  # max(1/7, 2/8) = 1/4
        ("H200", "nvidia.com/mig-3g.71gb", "7.00", 10, "35.00"),  # 1/2 x 7 x 10
        ("A30", "nvidia.com/mig-1g.6gb", "1.00", 24, "6.00"),  # A30 (4 and 4 slices): 1/4 x 1 x 24
        ("A30", "nvidia.com/mig-2g.12gb", "1.00", 24, "12.00"),  # 2/4
        ("A30", "nvidia.com/mig-4g.24gb", "1.00", 24, "24.00"),  # 4/4
    ],
)
def test_mig_slice_pays_its_weight_from_the_catalog_geometry(
    model: str, resource: str, rate: str, hours: int, expected: str
) -> None:
    a = alloc(gpu_model=model, strategy="mig", resource_name=resource, end=t(1 + hours // 24, hours % 24))
    assert amount(a, book({model: rate})) == D(expected)


def test_time_slicing_pays_one_over_replicas_with_tier_multiplier() -> None:
    # T4 $0.52 x 1/4 x 100 h = $13.00; tier3 x0.8 = $10.40.
    a = alloc(gpu_model="T4", strategy="time-slicing", time_slice_replicas=4, end=t(5, 4))
    assert amount(a, book({"T4": "0.52"})) == D("13.00")
    dev = alloc(
        gpu_model="T4", strategy="time-slicing", time_slice_replicas=4, end=t(5, 4), sla_tier="tier3_development"
    )
    assert amount(dev, book({"T4": "0.52"}, tier3_development="0.8")) == D("10.40")
    # The tier's own multiplier applies when the price book does not name the tier.
    assert amount(alloc(tier_multiplier=D("1.25")), book({"H100-80GB": "2.00"})) == D("25.00")


def test_imported_usage_has_no_sla_multiplier() -> None:
    a = alloc(imported=True, sla_tier="tier1_realtime", tier_multiplier=D("1.5"))
    assert amount(a, book({"H100-80GB": "2.00"}, tier1_realtime="1.5")) == D("20.00")


def test_price_change_mid_month_splits_the_hours() -> None:
    # $2.00 from Oct 1, $3.00 from Oct 16 (00:00 UTC); one GPU all month (744 h):
    # 15 days x 24 h x 2.00 = 720.00 and 16 days x 24 h x 3.00 = 1152.00 -> 1872.00.
    old, new = book({"A100-40GB": "2.00"}), book({"A100-40GB": "3.00"}, starts=t(16), version=2)
    a = alloc(gpu_model="A100-40GB", end=None)
    lines = charge_allocation(a, window_start=OCT, window_end=NOV, periods=[new, old])
    assert [(line.hours, line.gpu_rate, line.price_version) for line in lines] == [
        (D(360), D("2.00"), 1),
        (D(384), D("3.00"), 2),
    ]
    assert to_cents(sum((line.amount for line in lines), D(0))) == D("1872.00")


def test_price_segments_before_first_book_fall_back() -> None:
    later = book({"H100-80GB": "2"}, starts=t(10))
    segments = price_segments(t(1), t(20), [later])
    assert [(s, e, p is not None) for s, e, p in segments] == [(t(1), t(10), False), (t(10), t(20), True)]
    a = alloc(start=t(9), end=t(11))  # 24 h at the catalog fallback $1.00, 24 h at $2.00
    lines = charge_allocation(a, window_start=OCT, window_end=NOV, periods=[later], fallback_rates={"h100-80gb": D(1)})
    assert [line.rate_source for line in lines] == ["catalog", "price book"]
    assert to_cents(sum((line.amount for line in lines), D(0))) == D("72.00")


def test_unpriced_model_is_flagged_not_guessed() -> None:
    result = compute_chargeback(
        [alloc(gpu_model="A30")], window_start=OCT, window_end=NOV, periods=[], capacity_gpus={}
    )
    assert result.unpriced_models == {"A30"} and result.teams["vision"].amount == 0


def test_allocation_clipped_to_the_month() -> None:
    a = alloc(start=datetime(2026, 9, 30, 14, tzinfo=UTC), end=datetime(2026, 11, 1, 10, tzinfo=UTC))
    assert amount(a, book({"H100-80GB": "1.00"})) == D("744.00")


def test_opencost_worked_example_idle_and_weighted_sharing() -> None:
    # reference/opencost-allocation.md section 5: 4 GPUs x 24 h x $0.95 = $91.20.
    day = datetime(2026, 10, 2, tzinfo=UTC)
    periods = [book({"H100-80GB": "0.95"})]
    a = alloc(key="request:1", team="team-a", quantity=2, start=OCT, end=day)
    b = alloc(key="request:2", team="team-b", quantity=1, start=OCT, end=t(1, 12))
    kwargs = {"window_start": OCT, "window_end": day, "periods": periods, "capacity_gpus": {"H100-80GB": 4}}
    none = compute_chargeback([a, b], share_idle=False, **kwargs)
    assert to_cents(none.total_capacity_cost) == D("91.20")
    assert to_cents(none.teams["team-a"].total) == D("45.60") and to_cents(none.teams["team-b"].total) == D("11.40")
    assert to_cents(none.total_idle_cost) == D("34.20")
    assert none.total_idle_cost / none.total_capacity_cost == D("0.375")
    shared = compute_chargeback([a, b], share_idle=True, **kwargs)
    assert to_cents(shared.teams["team-a"].idle_share) == D("27.36")
    assert to_cents(shared.teams["team-a"].total) == D("72.96") and to_cents(shared.teams["team-b"].total) == D("18.24")
    assert to_cents(sum((x.total for x in shared.teams.values()), D(0))) == D("91.20")


def test_opencost_time_sliced_variant() -> None:
    # Pod C: 1 shared GPU of 4 replicas for 24 h = 0.25 GPU x 24 h x $0.95 = $5.70; the asset stays $91.20.
    day = datetime(2026, 10, 2, tzinfo=UTC)
    c = alloc(strategy="time-slicing", time_slice_replicas=4, start=OCT, end=day)
    result = compute_chargeback(
        [c], window_start=OCT, window_end=day, periods=[book({"H100-80GB": "0.95"})], capacity_gpus={"H100-80GB": 4}
    )
    assert to_cents(result.teams["vision"].amount) == D("5.70")
    assert to_cents(result.total_capacity_cost) == D("91.20")


def test_saving_against_all_dedicated() -> None:
    # A 1g.5gb slice for 70 h at $2.10/GPU-h: 1/7 -> $21.00; as a dedicated GPU $147.00; saving $126.00.
    a = alloc(gpu_model="A100-40GB", strategy="mig", resource_name="nvidia.com/mig-1g.5gb", end=t(3, 22))
    result = compute_chargeback(
        [a], window_start=OCT, window_end=NOV, periods=[book({"A100-40GB": "2.10"})], capacity_gpus={}
    )
    team = result.teams["vision"]
    assert (to_cents(team.amount), to_cents(team.dedicated_amount), to_cents(team.saving_vs_dedicated)) == (
        D("21.00"),
        D("147.00"),
        D("126.00"),
    )


def test_shares_and_slices() -> None:
    a100, a30, t4 = (BUILTIN_CATALOG.get(n) for n in ("A100-40GB", "A30", "T4"))
    assert gpu_share("mig", model=a100, mig_profile="nvidia.com/mig-3g.20gb") == D("0.5")  # max(3/7, 4/8)
    assert gpu_share("mig", model=a30, mig_profile="2g.12gb+me") == D("0.5")
    assert gpu_share("time-slicing", model=t4, time_slice_replicas=8) == D("0.125")
    with pytest.raises(PricingError):
        gpu_share("mig", model=a100)
    with pytest.raises(PricingError):
        gpu_share("time-slicing", model=t4, time_slice_replicas=1)
    assert weighted_shares(D(10), {"a": D(0), "b": D(0)}) == {"a": D(0), "b": D(0)}
